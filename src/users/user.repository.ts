import type { DatabaseKind } from '../config.ts';
import type { Executor } from '../db/executor.ts';
import { lockRow } from '../db/row-lock.ts';
import { insertReturningId } from '../db/insert-id.ts';
import { updatedOne } from '../db/row-count.ts';
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
    const stored = {
      totp_secret: null,
      totp_enabled_at: null,
      totp_last_step: null,
      totp_pending_expires_at: null,
      ...row,
      number,
    };
    await db.insertInto('users').values(stored).execute();
    return stored;
  }

  /** Whether a user other than `exceptId` has this email (emails are stored in lower case). */
  async emailTaken(email: string, exceptId: string, db: Executor = this.db): Promise<boolean> {
    const row = await db
      .selectFrom('users')
      .select('id')
      .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
      .where('id', '!=', exceptId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async updateEmail(id: string, email: string, now: string, db: Executor = this.db): Promise<void> {
    await db.updateTable('users').set({ email, updated_at: now }).where('id', '=', id).execute();
  }

  async updatePassword(id: string, passwordHash: string, now: string, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('users')
      .set({ password_hash: passwordHash, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Stores a pending TOTP secret, handed out until `expiresAt`, in place of `replacing` (the
   * stored secret it was decided on, or null): false when 2FA is on or the secret has changed
   * meanwhile, so two requests never both hand out a secret and only one of them stays.
   */
  async setPendingTotpSecret(
    id: string,
    sealed: string,
    expiresAt: string,
    replacing: string | null,
    db: Executor = this.db,
  ): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('users')
        .set({ totp_secret: sealed, totp_pending_expires_at: expiresAt })
        .where('id', '=', id)
        .where('totp_enabled_at', 'is', null)
        .where('totp_secret', replacing === null ? 'is' : '=', replacing),
    );
  }

  /**
   * Turns two-factor authentication on with the pending secret `sealed`, whose code of `step`
   * was just shown; false when 2FA is already on or the pending secret has changed meanwhile.
   */
  async enableTotp(
    id: string,
    sealed: string,
    step: number,
    now: string,
    db: Executor = this.db,
  ): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('users')
        .set({ totp_enabled_at: now, totp_last_step: step, totp_pending_expires_at: null, updated_at: now })
        .where('id', '=', id)
        .where('totp_enabled_at', 'is', null)
        .where('totp_secret', '=', sealed),
    );
  }

  async disableTotp(id: string, now: string, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('users')
      .set({
        totp_secret: null,
        totp_enabled_at: null,
        totp_last_step: null,
        totp_pending_expires_at: null,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Records that the code of `step` was used: true only if no code of that step or a later one
   * was accepted before, so a code works once, even under concurrent requests.
   */
  async advanceTotpStep(id: string, step: number, db: Executor = this.db): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('users')
        .set({ totp_last_step: step })
        .where('id', '=', id)
        .where('totp_enabled_at', 'is not', null)
        .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)])),
    );
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
