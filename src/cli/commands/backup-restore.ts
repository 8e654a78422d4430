import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import { printRecord, progressPrinter } from '../output.ts';
import { cliContext, THREAD_WORK, withRuntime } from '../with-runtime.ts';

const POLL_MS = 500;
/** How long the queued job may wait for a worker before the command says it is waiting for one. */
const NO_WORKER_HINT_MS = 10_000;

/**
 * `aerie backup restore`: restores a backup onto its server as the API does (the same checks,
 * the backup that lets it be undone, the activity entries, by no user), then waits until the
 * restore job has finished, showing its progress. A worker runs the job (`serve` or `worker`
 * must be running). Exits non-zero when the restore fails.
 */
export function backupRestoreCommand(backup: Command): void {
  backup
    .command('restore')
    .description("restore a backup onto its server's files and wait until done (a worker runs it)")
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--backup <uuid>', 'the backup')
    .option(
      '--truncate',
      'delete the files the backup does not hold (the server ends exactly as the backup)',
      false,
    )
    .option('--no-undo-backup', 'do not keep the files it replaces as a backup first')
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; backup: string; truncate: boolean; undoBackup: boolean; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const { backup: chosen, server } = await services.backupManagement.completedBackup(
          o.server,
          o.backup,
        );
        const jobId = await services.backupRestore.restoreFromCli(cliContext(), server, chosen, {
          truncate: o.truncate,
          undo_backup: o.undoBackup,
        });
        const progress = progressPrinter(o.json);
        const started = Date.now();
        let hinted = false;
        for (;;) {
          const job = await services.jobs.findById(jobId);
          if (job === undefined || job.state === 'succeeded' || job.state === 'failed') {
            progress.done();
            const ok = job?.state === 'succeeded';
            printRecord(
              o.json,
              { job: jobId, backup: chosen.id, state: job?.state ?? 'gone', error: job?.error ?? null },
              [
                ok
                  ? `restored backup ${chosen.name} (${chosen.id})`
                  : `the restore of ${chosen.name} (${chosen.id}) failed: ${job?.error ?? 'its job is gone'}`,
              ],
            );
            if (!ok) process.exitCode = 1;
            return;
          }
          const current = await services.backupManagement.find(chosen.serverId, chosen.id);
          const p = current?.progress;
          if (p) progress.update({ files: p.filesDone, bytes: p.bytesDone });
          if (job.state === 'queued' && !hinted && Date.now() - started > NO_WORKER_HINT_MS) {
            hinted = true;
            if (!o.json)
              process.stderr.write(
                'waiting for a worker to run the restore (is `aerie serve` or `aerie worker` running?)\n',
              );
          }
          await sleep(POLL_MS);
        }
      }, THREAD_WORK),
    );
}
