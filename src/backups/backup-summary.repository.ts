import type { Executor } from '../db/executor.ts';
import type { BackupTotals } from './backup-summary.ts';

/** What the server list reads of backups: each server's added up, a page of servers at a time. */
export class BackupSummaryRepository {
  constructor(private readonly db: Executor) {}

  /**
   * The totals of each of these servers' backups, in one query grouped by server (found through
   * the `server_id, created_at` index; a server has at most its backup limit of rows). A server
   * without backups is missing from the map.
   */
  async totalsFor(serverIds: readonly string[]): Promise<Map<string, BackupTotals>> {
    if (serverIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('backups')
      .select((eb) => {
        // The finish time of the backups that ended `successful` (1) or not (0); null for others.
        const finished = (successful: 0 | 1) =>
          eb
            .case()
            .when(eb.and([eb('is_successful', '=', successful), eb('completed_at', 'is not', null)]))
            .then(eb.ref('completed_at'))
            .end();
        return [
          'server_id',
          eb.fn.countAll<number | string>().as('count'),
          eb.fn.sum<number | string | null>('bytes').as('bytes'),
          eb.fn.max(finished(1)).as('last_successful_at'),
          eb.fn.max(finished(0)).as('last_failed_at'),
        ];
      })
      .where('server_id', 'in', [...serverIds])
      .groupBy('server_id')
      .execute();
    // PostgreSQL and MariaDB give a sum as a decimal in text: read it as a number.
    return new Map(
      rows.map((row) => [
        row.server_id,
        {
          count: Number(row.count),
          bytes: Number(row.bytes ?? 0),
          lastSuccessfulAt: row.last_successful_at,
          lastFailedAt: row.last_failed_at,
        },
      ]),
    );
  }
}
