import type { DeleteResult, ExpressionBuilder, Kysely } from 'kysely';
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
  deleteFinishedJobs(before: string, limit: number): Promise<number> {
    const finished = (eb: ExpressionBuilder<Database, 'jobs'>) =>
      eb.and([eb('state', 'in', ['succeeded', 'failed']), eb('finished_at', '<', before)]);
    return this.deleteBatch(this.db.selectFrom('jobs').select('id').where(finished).limit(limit), (ids) =>
      this.db.deleteFrom('jobs').where('id', 'in', ids.map(Number)).where(finished),
    );
  }

  /** Deletes up to `limit` sessions that expired before `now`; returns how many. */
  deleteExpiredSessions(now: string, limit: number): Promise<number> {
    const expired = (eb: ExpressionBuilder<Database, 'sessions'>) => eb('expires_at', '<', now);
    return this.deleteBatch(
      this.db.selectFrom('sessions').select('id').where(expired).orderBy('expires_at').limit(limit),
      (ids) => this.db.deleteFrom('sessions').where('id', 'in', ids).where(expired),
    );
  }

  /** One batch: the ids `select` reads, then the DELETE `remove` makes of them; how many it deleted. */
  private async deleteBatch<Id>(
    select: { execute(): Promise<{ id: Id }[]> },
    remove: (ids: Id[]) => { executeTakeFirst(): Promise<DeleteResult> },
  ): Promise<number> {
    const rows = await select.execute();
    if (rows.length === 0) return 0;
    const result = await remove(rows.map((row) => row.id)).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
