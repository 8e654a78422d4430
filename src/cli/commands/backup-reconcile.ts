import type { Command } from 'commander';
import { DEFAULT_GRACE_MS, type ReconcileReport } from '../../backups/backup-reconcile.service.ts';
import { positiveInteger, printRecord } from '../output.ts';
import { withRuntime } from '../with-runtime.ts';

const REASONS = {
  'backup-deleted': 'its backup was deleted',
  'backup-failed': 'its backup failed',
  'backup-finished': 'its backup is finished',
  probe: "the readiness check's",
  'no-backup': 'no backup owns it',
  unknown: 'no backup owns it, and no deletion is recorded',
} as const;

/**
 * `aerie backup reconcile`: removes what backup storage holds that is provably garbage, marks
 * failed the backups nothing is making any more, and names those whose archive is missing and
 * the archives no backup owns whose deletion is not recorded (see BackupReconcileService for the
 * rules). Those unknown archives are removed only with `--remove-unknown`: after a database is
 * restored from an older dump, they are the backups made since. Exits non-zero when a backup's
 * archive is missing, an unknown archive is left, or a leftover could not be removed.
 */
export function backupReconcileCommand(backup: Command): void {
  backup
    .command('reconcile')
    .description(
      'remove what backup storage holds that is garbage, and name backups whose archive is missing ' +
        'and archives no backup owns',
    )
    .option('--dry-run', 'list what would be done, and change nothing', false)
    .option(
      '--remove-unknown',
      'also remove archives no backup owns whose deletion is not recorded; only once you know they ' +
        'are not backups of a database restored from an older dump',
      false,
    )
    .option(
      '--grace-minutes <n>',
      'leave alone anything written within the last N minutes',
      positiveInteger,
      DEFAULT_GRACE_MS / 60_000,
    )
    .option('--json', 'print only the report, as JSON', false)
    .action((o: { dryRun: boolean; removeUnknown: boolean; graceMinutes: number; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const report = await services.backupReconcile.run({
          dryRun: o.dryRun,
          graceMs: o.graceMinutes * 60_000,
          removeUnknown: o.removeUnknown,
        });
        printRecord(o.json, toRecord(report), summary(report));
        if (report.missing.length > 0 || report.unknown.length > 0 || report.errors.length > 0)
          process.exitCode = 1;
      }),
    );
}

function toRecord(report: ReconcileReport): Record<string, unknown> {
  return {
    dry_run: report.dryRun,
    grace_minutes: report.graceMinutes,
    disks: report.disks,
    removed: report.removed,
    unknown: report.unknown,
    stalled: report.stalled,
    missing: report.missing,
    recent: report.recent,
    foreign: report.foreign,
    errors: report.errors,
    deletions_forgotten: report.deletionsForgotten,
  };
}

function summary(report: ReconcileReport): string[] {
  const would = report.dryRun ? 'would be ' : '';
  const bytes = report.removed.reduce((sum, item) => sum + (item.bytes ?? 0), 0);
  const lines = [
    `${report.dryRun ? 'Dry run: nothing changed. ' : ''}Backup storage checked: ${report.disks.join(', ')}.`,
    `${report.removed.length} leftover(s) ${would}removed (${(bytes / 1024 / 1024).toFixed(1)} MiB)${report.removed.length > 0 ? ':' : '.'}`,
    ...report.removed.map((item) => `  ${item.disk} ${item.kind} ${item.location} (${REASONS[item.reason]})`),
  ];
  if (report.unknown.length > 0) {
    lines.push(
      `${report.unknown.length} archive(s) left alone: no backup owns them, and no deletion is recorded. ` +
        'If the database was restored from an older dump, they are the backups made since. Once you ' +
        'know they are not, --remove-unknown removes them:',
    );
    lines.push(...report.unknown.map((item) => `  ${item.disk} ${item.location}`));
  }
  if (report.stalled.length > 0) {
    lines.push(
      `${report.stalled.length} backup(s) that stopped before they were finished ${would}marked failed:`,
    );
    lines.push(...report.stalled.map((b) => `  ${b.name} (${b.uuid}) of server ${b.server}`));
  }
  if (report.missing.length > 0) {
    lines.push(`${report.missing.length} backup(s) whose archive is missing from storage:`);
    lines.push(...report.missing.map((b) => `  ${b.name} (${b.uuid}) of server ${b.server}, in ${b.disk}`));
  }
  if (report.errors.length > 0) {
    lines.push(`${report.errors.length} leftover(s) could not be removed:`);
    lines.push(...report.errors.map((e) => `  ${e.disk} ${e.location}: ${e.error}`));
  }
  if (report.recent > 0 || report.foreign > 0)
    lines.push(
      `Left alone: ${report.recent} written within the last ${report.graceMinutes} minutes, ` +
        `${report.foreign} under servers this database does not know.`,
    );
  return lines;
}
