import type { Command } from 'commander';
import { printRecord } from '../output.ts';
import { recordAction } from '../with-runtime.ts';

interface UserCreateOptions {
  username: string;
  email: string;
  password?: string;
  firstName?: string;
  lastName?: string;
  admin: boolean;
  json: boolean;
}

/** `aerie user create`: without `--password`, one is generated and printed. */
export function userCreateCommand(user: Command): void {
  const create = user
    .command('create')
    .requiredOption('--username <username>')
    .requiredOption('--email <email>')
    .option('--password <password>', 'generated and printed when omitted')
    .option('--first-name <name>')
    .option('--last-name <name>')
    .option('--admin', 'make the user an administrator', false);
  recordAction(create, async (o: UserCreateOptions, { services }) => {
    const { user: created, password } = await services.users.create(o);
    const record = {
      uuid: created.id,
      username: created.username,
      email: created.email,
      admin: created.rootAdmin,
    };
    printRecord(o.json, o.password === undefined ? { ...record, password } : record, [
      `created user ${created.username} (${created.id})`,
      ...(o.password === undefined ? [`password: ${password}`] : []),
    ]);
  });
}
