import type { Command } from 'commander';
import { printRecord, progressPrinter } from '../output.ts';
import { THREAD_WORK, withRuntime } from '../with-runtime.ts';

/** `aerie backup import`: stores an existing .tar.gz as a backup, after reading it through. */
export function backupImportCommand(backup: Command): void {
  backup
    .command('import')
    .description('store an existing .tar.gz as a backup of a server (read through first)')
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--name <name>')
    .requiredOption('--file <path>', 'a gzip-compressed tar archive')
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; name: string; file: string; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const progress = progressPrinter(o.json);
        const record = await services.backupManagement.importArchive(
          o.server,
          o.name,
          o.file,
          progress.update,
        );
        progress.done();
        printRecord(o.json, { ...record }, [
          `imported backup ${record.name} (${record.uuid}), ${record.bytes} bytes`,
        ]);
      }, THREAD_WORK),
    );
}
