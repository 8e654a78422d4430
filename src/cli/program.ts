import { Command } from 'commander';
import { backupCreateCommand } from './commands/backup-create.ts';
import { backupImportCommand } from './commands/backup-import.ts';
import { backupExtractCommand } from './commands/backup-extract.ts';
import { backupPruneCommand } from './commands/backup-prune.ts';
import { backupCheckCommand } from './commands/backup-check.ts';
import { backupRestoreCommand } from './commands/backup-restore.ts';
import { backupReconcileCommand } from './commands/backup-reconcile.ts';
import { keyCreateCommand } from './commands/key-create.ts';
import { migrateCommand } from './commands/migrate.ts';
import { scheduleRunCommand } from './commands/schedule-run.ts';
import { serveCommand } from './commands/serve.ts';
import { serverAddSubuserCommand } from './commands/server-add-subuser.ts';
import { serverCreateCommand } from './commands/server-create.ts';
import { serverUpdateCommand } from './commands/server-update.ts';
import { userCreateCommand } from './commands/user-create.ts';
import { userDisableTwoFactorCommand } from './commands/user-disable-2fa.ts';
import { workerCommand } from './commands/worker.ts';
import { packageVersion } from '../shared/package-root.ts';

/** The `aerie` command line: every command and group, as `aerie --help` lists them. */
export function aerieProgram(): Command {
  const cli = new Command('aerie')
    .description('A Pterodactyl-compatible client API server')
    .version(packageVersion())
    .showHelpAfterError();
  serveCommand(cli);
  workerCommand(cli);
  migrateCommand(cli);
  const user = cli.command('user').description('manage users');
  userCreateCommand(user);
  userDisableTwoFactorCommand(user);
  keyCreateCommand(cli.command('key').description('manage API keys'));
  const server = cli.command('server').description('manage servers');
  serverCreateCommand(server);
  serverUpdateCommand(server);
  serverAddSubuserCommand(server);
  const backup = cli.command('backup').description('manage backups');
  backupCreateCommand(backup);
  backupImportCommand(backup);
  backupReconcileCommand(backup);
  backupExtractCommand(backup);
  backupPruneCommand(backup);
  backupCheckCommand(backup);
  backupRestoreCommand(backup);
  scheduleRunCommand(cli.command('schedule').description('manage schedules'));
  return cli;
}
