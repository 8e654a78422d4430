import type { Kysely } from 'kysely';

/** For migrations: creates the index `name` on `table`, over `columns` in that order. */
export async function createIndex(
  db: Kysely<unknown>,
  name: string,
  table: string,
  columns: string[],
): Promise<void> {
  await db.schema.createIndex(name).on(table).columns(columns).execute();
}
