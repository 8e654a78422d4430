import type { Command } from 'commander';
import { printRecord, progressPrinter } from '../output.ts';
import { THREAD_WORK, withRuntime } from '../with-runtime.ts';

/** `aerie backup create`: archives a server's files as they are now, and waits until done. */
export function backupCreateCommand(backup: Command): void {
  backup
    .command('create')
    .description("archive a server's files as they are now (waits until done)")
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--name <name>')
    .option('--full', 'read every file, even those unchanged since the last snapshot', false)
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; name: string; full: boolean; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const progress = progressPrinter(o.json);
        const record = await services.backupManagement.createNow(o.server, o.name, progress.update, {
          full: o.full,
        });
        progress.done();
        printRecord(o.json, { ...record }, [
          record.added_bytes === null
            ? `created backup ${record.name} (${record.uuid}), ${record.bytes} bytes`
            : `created backup ${record.name} (${record.uuid}): ${record.files} files, ${record.bytes} bytes; ` +
              `${record.added_bytes} bytes added to storage`,
        ]);
      }, THREAD_WORK),
    );
}
