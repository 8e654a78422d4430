import { sql } from 'kysely';
import type { Executor } from './executor.ts';

/** How many rows of `table` have `column` equal to `value`. */
export async function countWhere(
  db: Executor,
  table: 'api_keys' | 'backups',
  column: 'user_id' | 'server_id',
  value: string,
): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(sql.ref(column), '=', value)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
