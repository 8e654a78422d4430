import { sql, type InsertQueryBuilder, type InsertResult } from 'kysely';
import type { DatabaseKind } from '../config.ts';
import type { Database } from './database.ts';

/**
 * Runs an INSERT into a table with an auto-increment `id` and returns that id. PostgreSQL
 * reports it through RETURNING; SQLite and MariaDB through the driver's insert id.
 */
export async function insertReturningId<T extends keyof Database>(
  kind: DatabaseKind,
  query: InsertQueryBuilder<Database, T, InsertResult>,
): Promise<number> {
  if (kind === 'postgres') {
    const row = (await query.returning(sql<number>`id`.as('id')).executeTakeFirstOrThrow()) as unknown as {
      id: number | string;
    };
    return Number(row.id);
  }
  const result = await query.executeTakeFirstOrThrow();
  if (result.insertId === undefined) throw new Error('the database reported no id for the new row');
  return Number(result.insertId);
}
