import type { Command } from 'commander';
import { printRecord } from '../output.ts';
import { cliContext, recordAction } from '../with-runtime.ts';

interface AddSubuserOptions {
  server: string;
  user: string;
  permissions: string;
  json: boolean;
}

/** `aerie server add-subuser`: sets a subuser's permissions on a server. */
export function serverAddSubuserCommand(server: Command): void {
  const addSubuser = server
    .command('add-subuser')
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--user <login>', 'username or email')
    .requiredOption('--permissions <list>', 'comma-separated, e.g. backup.read,backup.restore');
  recordAction(addSubuser, async (o: AddSubuserOptions, { services }) => {
    const permissions = o.permissions
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    const result = await services.subusers.setByLogin(cliContext(), o.server, o.user, permissions);
    printRecord(o.json, result, [
      `${o.user} is now a subuser of ${o.server}: ${result.permissions.join(', ')}`,
    ]);
  });
}
