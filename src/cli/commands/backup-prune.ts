import type { Command } from 'commander';
import { printRecord } from '../output.ts';
import { THREAD_WORK, withRuntime } from '../with-runtime.ts';

const MB = 1024 * 1024;

/**
 * `aerie backup prune`: reclaims the storage no snapshot uses any more (the chunks only deleted
 * backups held), server by server, each under an exclusive lock on its repository: a backup of
 * that server waits meanwhile, and one running is waited for. Safe to stop at any point.
 */
export function backupPruneCommand(backup: Command): void {
  backup
    .command('prune')
    .description('reclaim the storage that no snapshot backup uses any more')
    .option('--server <id>', 'only this server (UUID or short identifier)')
    .option('--json', 'print only the report, as JSON', false)
    .action((o: { server?: string; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const done = await services.backupManagement.pruneRepositories(o.server);
        const used = done.filter(({ report }) => report.before.objects > 0);
        const before = used.reduce((sum, { report }) => sum + report.before.bytes, 0);
        const after = used.reduce((sum, { report }) => sum + report.after.bytes, 0);
        printRecord(
          o.json,
          {
            repositories: used.map(({ serverId, disk, report }) => ({ server: serverId, disk, ...report })),
            bytes_before: before,
            bytes_after: after,
          },
          [
            ...used.map(
              ({ identifier, disk, report }) =>
                `${identifier} (${disk}): ${report.snapshots} snapshots, ${mb(report.before.bytes)} → ` +
                `${mb(report.after.bytes)} (${report.packsDeleted} packs deleted, ${report.packsRewritten} rewritten)`,
            ),
            `storage used: ${mb(before)} before, ${mb(after)} after`,
          ],
        );
      }, THREAD_WORK),
    );
}

function mb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MiB`;
}
