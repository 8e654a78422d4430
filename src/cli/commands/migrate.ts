import type { Command } from 'commander';
import { withRuntime } from '../with-runtime.ts';

/** `aerie migrate`: brings the schema up to date (opening the runtime does) and says what it applied. */
export function migrateCommand(cli: Command): void {
  cli
    .command('migrate')
    .description('bring the database schema up to date')
    .action(() =>
      withRuntime(({ config, migrations }) => {
        const done = migrations.length === 0 ? 'already up to date' : `applied ${migrations.join(', ')}`;
        process.stdout.write(`${config.database.kind}: ${done}\n`);
      }),
    );
}
