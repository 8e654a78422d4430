import type { Executor } from '../db/executor.ts';
import { deletedOne } from '../db/row-count.ts';
import type { RecoveryTokenRow } from './two-factor.table.ts';

export class RecoveryTokenRepository {
  constructor(private readonly db: Executor) {}

  listForUser(userId: string, db: Executor = this.db): Promise<RecoveryTokenRow[]> {
    return db.selectFrom('recovery_tokens').selectAll().where('user_id', '=', userId).orderBy('id').execute();
  }

  /** The user's tokens become exactly these hashes. */
  async replaceForUser(userId: string, hashes: string[], now: string, db: Executor = this.db): Promise<void> {
    await this.deleteForUser(userId, db);
    if (hashes.length === 0) return;
    await db
      .insertInto('recovery_tokens')
      .values(hashes.map((token_hash) => ({ user_id: userId, token_hash, created_at: now })))
      .execute();
  }

  /** Deletes one token of the user's; false when it is already gone (used by someone else first). */
  async use(id: number, userId: string, db: Executor = this.db): Promise<boolean> {
    return deletedOne(db.deleteFrom('recovery_tokens').where('id', '=', id).where('user_id', '=', userId));
  }

  async deleteForUser(userId: string, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('recovery_tokens').where('user_id', '=', userId).execute();
  }
}
