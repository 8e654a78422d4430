import type { Command } from 'commander';
import { printRecord, progressPrinter } from '../output.ts';
import { withRuntime } from '../with-runtime.ts';

/** `aerie backup create`: archives a server's files as they are now, and waits until done. */
export function backupCreateCommand(backup: Command): void {
  backup
    .command('create')
    .description("archive a server's files as they are now (waits until done)")
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--name <name>')
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; name: string; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const progress = progressPrinter(o.json);
        const record = await services.backupManagement.createNow(o.server, o.name, progress.update);
        progress.done();
        printRecord(o.json, { ...record }, [
          `created backup ${record.name} (${record.uuid}), ${record.bytes} bytes`,
        ]);
      }),
    );
}
