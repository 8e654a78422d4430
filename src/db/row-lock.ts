import { sql } from 'kysely';
import type { Executor } from './executor.ts';

/**
 * Takes a row's lock for the rest of the transaction with a no-op write, which every engine
 * serialises: a row lock on PostgreSQL and MariaDB, the write lock on SQLite. It makes
 * check-then-insert sequences (the API key limit, a server's backup limit) safe under concurrency.
 */
export async function lockRow(db: Executor, table: 'users' | 'servers', id: string): Promise<void> {
  await db
    .updateTable(table)
    .set({ updated_at: sql`updated_at` })
    .where('id', '=', id)
    .execute();
}
