import { sql, type Kysely } from 'kysely';
import { createIndex } from '../create-index.ts';

/**
 * What retention needs: indexes on the oldest activity entries and on the jobs that finished
 * longest ago, so a pruning batch reads only the rows it deletes (and a run with nothing to prune
 * reads next to nothing); and `maintenance_leases`, one row per periodic task, which one process
 * at a time holds while it runs the task.
 */
export function retentionIndexesMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await createIndex(db, 'activity_logs_timestamp_index', 'activity_logs', ['timestamp', 'id']);
      await createIndex(db, 'jobs_finished_index', 'jobs', ['state', 'finished_at']);
      await db.schema
        .createTable('maintenance_leases')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('owner', 'varchar(191)')
        .addColumn('expires_at', 'varchar(24)', (c) => c.notNull())
        .execute();
      await sql`insert into maintenance_leases (name, owner, expires_at) values ('retention', null, '')`.execute(
        db,
      );
    },
  };
}
