import { Command } from 'commander';
import { backupCreateCommand } from './cli/commands/backup-create.ts';
import { backupImportCommand } from './cli/commands/backup-import.ts';
import { backupReconcileCommand } from './cli/commands/backup-reconcile.ts';
import { keyCreateCommand } from './cli/commands/key-create.ts';
import { migrateCommand } from './cli/commands/migrate.ts';
import { serveCommand } from './cli/commands/serve.ts';
import { serverAddSubuserCommand } from './cli/commands/server-add-subuser.ts';
import { serverCreateCommand } from './cli/commands/server-create.ts';
import { userCreateCommand } from './cli/commands/user-create.ts';
import { userDisableTwoFactorCommand } from './cli/commands/user-disable-2fa.ts';
import { workerCommand } from './cli/commands/worker.ts';
import { packageVersion } from './cli/version.ts';
import { ConfigError } from './config.ts';
import { AppError, ValidationError } from './shared/errors.ts';

const cli = new Command('aerie')
  .description('A Pterodactyl-compatible client API server')
  .version(packageVersion())
  .showHelpAfterError();
serveCommand(cli);
workerCommand(cli);
migrateCommand(cli);
const userCli = cli.command('user').description('manage users');
userCreateCommand(userCli);
userDisableTwoFactorCommand(userCli);
keyCreateCommand(cli.command('key').description('manage API keys'));
const server = cli.command('server').description('manage servers');
serverCreateCommand(server);
serverAddSubuserCommand(server);
const backup = cli.command('backup').description('manage backups');
backupCreateCommand(backup);
backupImportCommand(backup);
backupReconcileCommand(backup);

try {
  await cli.parseAsync(process.argv);
} catch (error) {
  const known = error instanceof ConfigError || error instanceof AppError;
  // A refused field says which field and why, as the API's 422 does; the summary alone would not.
  const message =
    error instanceof ValidationError ? error.fields.map((field) => field.message).join(' ') : undefined;
  process.stderr.write(
    `aerie: ${message ?? (known ? error.message : String((error as Error).stack ?? error))}\n`,
  );
  process.exitCode = 1;
}
