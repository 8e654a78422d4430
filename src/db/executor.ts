import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.ts';

/** A connection or an open transaction: repositories run on either, so callers choose the scope. */
export type Executor = Kysely<Database> | Transaction<Database>;

/** Runs `work` in one transaction: committed if it resolves, rolled back if it throws. */
export type Transactor = <T>(work: (trx: Transaction<Database>) => Promise<T>) => Promise<T>;

/** What to do once each open transaction (opened by a Transactor) has committed. */
const pendingAfterCommit = new WeakMap<Transaction<Database>, (() => void)[]>();

export function transactorFor(db: Kysely<Database>): Transactor {
  return async (work) => {
    const callbacks: (() => void)[] = [];
    const result = await db.transaction().execute((trx) => {
      pendingAfterCommit.set(trx, callbacks);
      return work(trx);
    });
    for (const callback of callbacks) callback();
    return result;
  };
}

/**
 * Calls `callback` once what `db` wrote is visible to other connections: at once outside a
 * transaction (each statement has committed), after the commit of a transaction a Transactor
 * opened, and never if that transaction rolls back. `callback` must not throw. A transaction
 * opened some other way has no commit to wait for, so this throws rather than call too early
 * or not at all.
 */
export function afterCommit(db: Executor, callback: () => void): void {
  if (!db.isTransaction) {
    callback();
    return;
  }
  const callbacks = pendingAfterCommit.get(db as Transaction<Database>);
  if (callbacks === undefined)
    throw new Error('afterCommit needs a transaction opened by a Transactor (transactorFor)');
  callbacks.push(callback);
}
