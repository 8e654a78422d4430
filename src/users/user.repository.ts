import type { DatabaseKind } from '../config.ts';
import type { Executor } from '../db/executor.ts';
import { lockRow } from '../db/row-lock.ts';
import { insertReturningId } from '../db/insert-id.ts';
import type { NewUserRow, UserRow } from './user.table.ts';

export class UserRepository {
  constructor(
    private readonly db: Executor,
    private readonly kind: DatabaseKind,
  ) {}

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

  /** Inserts a user, numbering them first; returns the row as stored. */
  async insert(row: Omit<NewUserRow, 'number'>, db: Executor = this.db): Promise<UserRow> {
    const number = await insertReturningId(
      this.kind,
      db.insertInto('user_numbers').values({ user_id: row.id }),
    );
    const stored = { ...row, number };
    await db.insertInto('users').values(stored).execute();
    return stored;
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
  lock(id: string, db: Executor): Promise<void> {
    return lockRow(db, 'users', id);
  }
}
