import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';

/**
 * The deletes of retention that touch one table each: finished jobs and expired sessions. Each
 * batch is two short statements, outside any transaction: the ids of at most `limit` rows, read
 * along an index, then a DELETE of those ids that re-checks the condition. No lock is held from
 * one statement to the next, and a row some other process deleted in between is simply not
 * counted.
 */
export class RetentionRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Deletes up to `limit` jobs that succeeded or failed before `before`; returns how many. */
  async deleteFinishedJobs(before: string, limit: number): Promise<number> {
    const rows = await this.db
      .selectFrom('jobs')
      .select('id')
      .where('state', 'in', ['succeeded', 'failed'])
      .where('finished_at', '<', before)
      .limit(limit)
      .execute();
    if (rows.length === 0) return 0;
    const result = await this.db
      .deleteFrom('jobs')
      .where(
        'id',
        'in',
        rows.map((row) => Number(row.id)),
      )
      .where('state', 'in', ['succeeded', 'failed'])
      .where('finished_at', '<', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Deletes up to `limit` sessions that expired before `now`; returns how many. */
  async deleteExpiredSessions(now: string, limit: number): Promise<number> {
    const rows = await this.db
      .selectFrom('sessions')
      .select('id')
      .where('expires_at', '<', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    if (rows.length === 0) return 0;
    const result = await this.db
      .deleteFrom('sessions')
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .where('expires_at', '<', now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
