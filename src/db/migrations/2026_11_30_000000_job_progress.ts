import type { ColumnDataType, Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/**
 * Progress of the backup or restore running on a backup, kept on the backup's row so that the
 * process answering the API sees what a worker in another process is doing: the operation and
 * its phase, bytes and files done and their totals where known, when it started and when it was
 * last written (at most about once a second). All null while nothing runs.
 *
 * `revision` goes up by one with every change to the row, so that event streams find what
 * changed by reading each watched server's (id, revision) pairs, and the rows themselves only
 * when their revision moved. `files` is the number of files a finished backup holds: a restore
 * of it knows how many it will write. Times are the portable `varchar(24)` of the migrations of
 * its time; on PostgreSQL, 2026_12_02_000000_postgres_types makes them `timestamptz(3)` as it
 * does every other time column.
 */
export function jobProgressMigration(kind: DatabaseKind) {
  const bigint: ColumnDataType = kind === 'sqlite' ? 'integer' : 'bigint';
  const columns: [string, ColumnDataType][] = [
    ['files', bigint],
    ['progress_operation', 'varchar(16)'],
    ['progress_phase', 'varchar(32)'],
    ['progress_bytes_done', bigint],
    ['progress_bytes_total', bigint],
    ['progress_files_done', bigint],
    ['progress_files_total', bigint],
    ['progress_started_at', 'varchar(24)'],
    ['progress_updated_at', 'varchar(24)'],
  ];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // One column per statement: SQLite adds only one at a time.
      await db.schema
        .alterTable('backups')
        .addColumn('revision', bigint, (c) => c.notNull().defaultTo(0))
        .execute();
      for (const [name, type] of columns)
        await db.schema.alterTable('backups').addColumn(name, type).execute();
    },
  };
}
