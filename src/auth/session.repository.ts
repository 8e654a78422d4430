import type { Executor } from '../db/executor.ts';
import type { SessionRow } from './session.table.ts';

export class SessionRepository {
  constructor(private readonly db: Executor) {}

  async insert(row: SessionRow, db: Executor = this.db): Promise<void> {
    await db.insertInto('sessions').values(row).execute();
  }

  findLive(id: string, now: string): Promise<SessionRow | undefined> {
    return this.db
      .selectFrom('sessions')
      .selectAll()
      .where('id', '=', id)
      .where('expires_at', '>', now)
      .executeTakeFirst();
  }

  async delete(id: string, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('sessions').where('id', '=', id).execute();
  }

  /** Ends every session of the user's but `keep` (the caller's own, when there is one). */
  async deleteForUser(userId: string, keep: string | null, db: Executor = this.db): Promise<void> {
    await db
      .deleteFrom('sessions')
      .where('user_id', '=', userId)
      .$if(keep !== null, (q) => q.where('id', '!=', keep!))
      .execute();
  }

  async deleteExpired(now: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
  }
}
