import type { Db } from '../../src/db/connection.ts';
import { migrations, migratorFor } from '../../src/db/migrate.ts';

/**
 * Migrates an empty database to the schema a previous release left: every migration up to and
 * including `last`, by name. Upgrade tests then put rows in that schema and migrate the rest.
 */
export async function migrateThrough(db: Db, last: string): Promise<void> {
  const all = migrations(db);
  if (!(last in all)) throw new Error(`no migration is named ${last}`);
  const chosen = Object.fromEntries(Object.entries(all).filter(([name]) => name <= last));
  const result = await migratorFor(db, chosen).migrateToLatest();
  if (result.error !== undefined) {
    throw result.error instanceof Error ? result.error : new Error(JSON.stringify(result.error));
  }
}
