import type { DatabaseKind } from '../config.ts';
import { countWhere } from '../db/count.ts';
import type { Executor } from '../db/executor.ts';
import { insertReturningId } from '../db/insert-id.ts';
import type { ApiKeyRow, NewApiKeyRow } from './api-key.table.ts';

export class ApiKeyRepository {
  constructor(
    private readonly db: Executor,
    private readonly kind: DatabaseKind,
  ) {}

  listForUser(userId: string): Promise<ApiKeyRow[]> {
    return this.db.selectFrom('api_keys').selectAll().where('user_id', '=', userId).orderBy('id').execute();
  }

  countForUser(userId: string, db: Executor = this.db): Promise<number> {
    return countWhere(db, 'api_keys', 'user_id', userId);
  }

  findByIdentifier(identifier: string, db: Executor = this.db): Promise<ApiKeyRow | undefined> {
    // No identifier holds a NUL, and PostgreSQL refuses one in a query's text.
    if (identifier.includes('\0')) return Promise.resolve(undefined);
    return db.selectFrom('api_keys').selectAll().where('identifier', '=', identifier).executeTakeFirst();
  }

  insert(row: NewApiKeyRow, db: Executor = this.db): Promise<number> {
    return insertReturningId(this.kind, db.insertInto('api_keys').values(row));
  }

  async delete(id: number, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('api_keys').where('id', '=', id).execute();
  }

  /** Records a use, unless one was recorded since `staleBefore` (at most one write a minute). */
  async touch(id: number, now: string, staleBefore: string): Promise<void> {
    await this.db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
      .execute();
  }
}
