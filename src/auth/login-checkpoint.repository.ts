import type { Executor } from '../db/executor.ts';
import { deletedOne } from '../db/row-count.ts';
import type { LoginCheckpointRow } from './two-factor.table.ts';

export class LoginCheckpointRepository {
  constructor(private readonly db: Executor) {}

  async insert(row: LoginCheckpointRow, db: Executor = this.db): Promise<void> {
    await db.insertInto('login_checkpoints').values(row).execute();
  }

  /** The checkpoint, expired or not. */
  find(id: string, db: Executor = this.db): Promise<LoginCheckpointRow | undefined> {
    return db.selectFrom('login_checkpoints').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Takes the checkpoint for the login it completes: deletes it if it has not expired. False
   * when it was gone or expired, so two requests with one token never both complete a login.
   */
  async claim(id: string, now: string, db: Executor = this.db): Promise<boolean> {
    return deletedOne(db.deleteFrom('login_checkpoints').where('id', '=', id).where('expires_at', '>', now));
  }

  async deleteForUser(userId: string, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('login_checkpoints').where('user_id', '=', userId).execute();
  }

  async deleteExpired(now: string, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('login_checkpoints').where('expires_at', '<=', now).execute();
  }
}
