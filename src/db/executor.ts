import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.ts';

/** A connection or an open transaction: repositories run on either, so callers choose the scope. */
export type Executor = Kysely<Database> | Transaction<Database>;

/** Runs `work` in one transaction: committed if it resolves, rolled back if it throws. */
export type Transactor = <T>(work: (trx: Transaction<Database>) => Promise<T>) => Promise<T>;

export function transactorFor(db: Kysely<Database>): Transactor {
  return (work) => db.transaction().execute(work);
}
