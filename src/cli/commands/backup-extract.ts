import type { Command } from 'commander';
import path from 'node:path';
import { printRecord, progressPrinter } from '../output.ts';
import { THREAD_WORK, withRuntime } from '../with-runtime.ts';

/**
 * `aerie backup extract`: writes a backup's files into a directory, without the API or a worker
 * (disaster recovery). Snapshot or archive alike; every chunk is checked as it is read.
 */
export function backupExtractCommand(backup: Command): void {
  backup
    .command('extract')
    .description("write a backup's files into a directory (empty, or not there yet)")
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--backup <uuid>', 'the backup')
    .requiredOption('--to <dir>', 'the directory to write into')
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; backup: string; to: string; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const progress = progressPrinter(o.json);
        const directory = path.resolve(o.to);
        const done = await services.backupManagement.extractTo(
          o.server,
          o.backup,
          directory,
          progress.update,
        );
        progress.done();
        printRecord(
          o.json,
          {
            uuid: done.backup.id,
            directory,
            files: done.files,
            directories: done.directories,
            bytes: done.bytes,
            skipped: done.skipped,
          },
          [
            `extracted backup ${done.backup.name} (${done.backup.id}) into ${directory}: ${done.files} files, ` +
              `${done.bytes} bytes` +
              (done.skipped > 0 ? `; ${done.skipped} entries skipped (links, devices)` : ''),
          ],
        );
      }, THREAD_WORK),
    );
}
