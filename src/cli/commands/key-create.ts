import type { Command } from 'commander';
import { ConfigError } from '../../config.ts';
import { collect, printRecord } from '../output.ts';
import { cliContext, recordAction } from '../with-runtime.ts';

interface KeyCreateOptions {
  user: string;
  description: string;
  allowedIp: string[];
  json: boolean;
}

/** `aerie key create`: an API key for a user; prints the full token, once. */
export function keyCreateCommand(key: Command): void {
  const create = key
    .command('create')
    .requiredOption('--user <login>', 'username or email')
    .option('--description <text>', 'what the key is for', '')
    .option(
      '--allowed-ip <ip>',
      'an address or CIDR range the key may be used from (repeatable)',
      collect,
      [],
    );
  recordAction(create, async (o: KeyCreateOptions, { services }) => {
    const owner = await services.users.findByLogin(o.user);
    if (owner === undefined) throw new ConfigError(`no user "${o.user}"`);
    const { key, token } = await services.apiKeys.create(
      { ...cliContext(), actor: { user: owner, apiKeyId: null, sessionId: null } },
      { description: o.description, allowed_ips: o.allowedIp },
    );
    printRecord(o.json, { identifier: key.identifier, token }, [
      `created API key ${key.identifier} for ${owner.username}`,
      `token (shown once): ${token}`,
    ]);
  });
}
