import { sql, type ColumnDefinitionBuilder, type Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/**
 * How many entries each feed holds, kept beside the feed in the transaction that writes or
 * deletes its entries, so the total of an unfiltered feed (`meta.pagination.total`) is one row
 * read, whatever the size of the feed or of the log. Filled from the subjects rows that exist.
 */
export function feedCountsMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // Subject ids are compared byte for byte, as everywhere a key is matched.
      const key = (c: ColumnDefinitionBuilder) =>
        kind === 'mysql' ? c.notNull().modifyFront(sql`character set ascii collate ascii_bin`) : c.notNull();
      await db.schema
        .createTable('activity_feed_counts')
        .addColumn('subject_type', 'varchar(32)', key)
        .addColumn('subject_id', 'varchar(64)', key)
        .addColumn('entries', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('activity_feed_counts_pk', ['subject_type', 'subject_id'])
        .execute();
      await sql`insert into activity_feed_counts (subject_type, subject_id, entries)
        select subject_type, subject_id, count(*) from activity_log_subjects
        group by subject_type, subject_id`.execute(db);
    },
  };
}
