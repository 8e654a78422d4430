import { sql } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { NewUserRow, UserRow } from './user.table.ts';

export class UserRepository {
  constructor(private readonly db: Executor) {}

  findById(id: string, db: Executor = this.db): Promise<UserRow | undefined> {
    return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** By username or email, ignoring case. */
  findByLogin(login: string, db: Executor = this.db): Promise<UserRow | undefined> {
    const needle = login.trim().toLowerCase();
    return db
      .selectFrom('users')
      .selectAll()
      .where((eb) =>
        eb.or([eb(eb.fn('lower', ['username']), '=', needle), eb(eb.fn('lower', ['email']), '=', needle)]),
      )
      .orderBy('created_at')
      .executeTakeFirst();
  }

  async insert(row: NewUserRow, db: Executor = this.db): Promise<void> {
    await db.insertInto('users').values(row).execute();
  }

  async count(db: Executor = this.db): Promise<number> {
    const row = await db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Takes the user's row lock for the rest of the transaction (a no-op write, which every engine
   * serialises: a row lock on PostgreSQL and MariaDB, the write lock on SQLite). Used to make
   * check-then-insert sequences such as the API key limit safe under concurrency.
   */
  async lock(id: string, db: Executor): Promise<void> {
    await db
      .updateTable('users')
      .set({ updated_at: sql`updated_at` })
      .where('id', '=', id)
      .execute();
  }
}
