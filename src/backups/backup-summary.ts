/** What can be wrong with a server's protection, in the order the server list names them. */
export const BACKUP_WARNINGS = ['last_backup_failed', 'no_recent_backup'] as const;
export type BackupWarning = (typeof BACKUP_WARNINGS)[number];

/** How recent a server's last successful backup must be for it not to be warned about. */
export const RECENT_BACKUP_DAYS = 7;

/** What the database adds up of one server's backups (see BackupSummaryRepository). */
export interface BackupTotals {
  /** Every backup the server has, finished or not: what counts against its backup limit. */
  count: number;
  /** Their sizes added up, in bytes (a backup being made or failed counts 0). */
  bytes: number;
  /** When the last successful backup finished; null when there is none. */
  lastSuccessfulAt: string | null;
  /** When the last failed backup finished; null when there is none. */
  lastFailedAt: string | null;
}

/** A server's backups summed up, as the server list shows them. */
export interface BackupSummary extends BackupTotals {
  /**
   * `last_backup_failed` when the most recently finished backup failed; `no_recent_backup` when
   * no backup succeeded in the last RECENT_BACKUP_DAYS days (or ever). Empty when all is well.
   */
  warnings: BackupWarning[];
}

const NO_BACKUPS: BackupTotals = { count: 0, bytes: 0, lastSuccessfulAt: null, lastFailedAt: null };

/** The summary of a server's backups at `now`; `totals` undefined means it has none. */
export function summarizeBackups(totals: BackupTotals | undefined, now: Date): BackupSummary {
  const summed = totals ?? NO_BACKUPS;
  const { lastSuccessfulAt, lastFailedAt } = summed;
  const recentSince = new Date(now.getTime() - RECENT_BACKUP_DAYS * 24 * 3600_000).toISOString();
  const warnings: BackupWarning[] = [];
  // Stored times are fixed-width UTC ISO strings, so they compare as text.
  if (lastFailedAt !== null && (lastSuccessfulAt === null || lastFailedAt > lastSuccessfulAt)) {
    warnings.push('last_backup_failed');
  }
  if (lastSuccessfulAt === null || lastSuccessfulAt < recentSince) warnings.push('no_recent_backup');
  return { ...summed, warnings };
}
