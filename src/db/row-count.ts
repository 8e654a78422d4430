import type { DeleteResult, UpdateResult } from 'kysely';

/** A DELETE or UPDATE, ready to run. */
interface Statement<R> {
  executeTakeFirst(): Promise<R>;
}

/**
 * Runs a DELETE meant for one row; false when it deleted none: the row was gone, or no longer met
 * the statement's conditions (another request got there first).
 */
export async function deletedOne(query: Statement<DeleteResult>): Promise<boolean> {
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Runs an UPDATE meant for one row; false when it changed none, as `deletedOne` says. */
export async function updatedOne(query: Statement<UpdateResult>): Promise<boolean> {
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
