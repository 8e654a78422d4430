import type { Command } from 'commander';
import { printRecord } from '../output.ts';
import { cliContext, withRuntime } from '../with-runtime.ts';

interface AddSubuserOptions {
  server: string;
  user: string;
  permissions: string;
  json: boolean;
}

/** `aerie server add-subuser`: sets a subuser's permissions on a server. */
export function serverAddSubuserCommand(server: Command): void {
  server
    .command('add-subuser')
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--user <login>', 'username or email')
    .requiredOption('--permissions <list>', 'comma-separated, e.g. backup.read,backup.restore')
    .option('--json', 'print the record as JSON', false)
    .action((o: AddSubuserOptions) =>
      withRuntime(async ({ services }) => {
        const permissions = o.permissions
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '');
        const result = await services.subusers.setByLogin(cliContext(), o.server, o.user, permissions);
        printRecord(o.json, result, [
          `${o.user} is now a subuser of ${o.server}: ${result.permissions.join(', ')}`,
        ]);
      }),
    );
}
