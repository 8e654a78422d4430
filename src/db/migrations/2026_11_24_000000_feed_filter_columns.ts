import { sql, type Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { createIndex } from '../create-index.ts';

/**
 * Copies the columns the feed's filters read (event, IP, actor) from each activity entry onto
 * its subjects rows, and puts them in the feed index, so that counting a feed, filtering it and
 * skipping to a deep page read the caller's index range alone, never `activity_logs`. The copies
 * of existing entries are filled from `activity_logs`; new ones are written with the entry.
 */
export function feedFilterColumnsMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // SQLite adds a NOT NULL column only with a default; every row gets its event just below.
      await db.schema
        .alterTable('activity_log_subjects')
        .addColumn('event', 'varchar(191)', (c) => c.notNull().defaultTo(''))
        .execute();
      await db.schema.alterTable('activity_log_subjects').addColumn('ip', 'varchar(45)').execute();
      await db.schema.alterTable('activity_log_subjects').addColumn('actor_id', 'varchar(36)').execute();

      if (kind === 'mysql') {
        await sql`update activity_log_subjects s join activity_logs l on l.id = s.activity_log_id
          set s.event = l.event, s.ip = l.ip, s.actor_id = l.actor_id`.execute(db);
      } else {
        await sql`update activity_log_subjects set event = l.event, ip = l.ip, actor_id = l.actor_id
          from activity_logs l where l.id = activity_log_subjects.activity_log_id`.execute(db);
      }

      // One index serves the whole feed: the caller's range in order, and every filter's column.
      const oldIndex = db.schema.dropIndex('activity_log_subjects_feed_index');
      await (kind === 'mysql' ? oldIndex.on('activity_log_subjects') : oldIndex).execute();
      await createIndex(db, 'activity_log_subjects_feed_filter_index', 'activity_log_subjects', [
        'subject_type',
        'subject_id',
        'timestamp',
        'activity_log_id',
        'actor_id',
        'event',
        'ip',
      ]);
    },
  };
}
