import type { Command } from 'commander';
import { NotFoundError } from '../../shared/errors.ts';
import { printRecord } from '../output.ts';
import { cliContext, withRuntime } from '../with-runtime.ts';

/**
 * `aerie user disable-2fa <user>`: turns two-factor authentication off for a user who has lost
 * both their authenticator and their recovery tokens. The user is named by username or email.
 */
export function userDisableTwoFactorCommand(user: Command): void {
  user
    .command('disable-2fa')
    .description("turn off a user's two-factor authentication (for a lost device and lost recovery tokens)")
    .argument('<user>', 'username or email')
    .option('--json', 'print the record as JSON', false)
    .action((login: string, o: { json: boolean }) =>
      withRuntime(async ({ services }) => {
        const found = await services.users.findByLogin(login);
        if (found === undefined) throw new NotFoundError(`No user "${login}".`);
        const wasOn = await services.twoFactor.disableByOperator(cliContext(), found.id);
        printRecord(o.json, { uuid: found.id, username: found.username, two_factor_disabled: wasOn }, [
          wasOn
            ? `two-factor authentication is now off for ${found.username}; they log in with their password`
            : `two-factor authentication was not on for ${found.username}; nothing changed`,
        ]);
      }),
    );
}
