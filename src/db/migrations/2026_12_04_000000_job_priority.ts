import { sql, type Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { timeType } from '../column-types.ts';
import { createIndex } from '../create-index.ts';

/**
 * Job priorities, and the retries of jobs that could not reach the backup store or the database.
 *
 * - `jobs.priority`: of the due jobs, a worker claims the lowest priority first, then the one due
 *   longest (JOB_PRIORITY in src/jobs/job-kinds.ts: restores before backups). Queued and running
 *   jobs take their kind's priority as it is at this migration (a restore 0, a backup 10); finished
 *   ones are never claimed again and keep the default.
 * - `jobs.unreachable_retries` and `jobs.unreachable_at`: how many tries failed because the store
 *   or the database could not be reached, and when the first of them did. Such tries are retried
 *   for a window of time measured from that first failure, and do not count against
 *   `max_attempts`.
 *
 * The claim's indexes take the priority after the state, so that each branch of the claim still
 * reads one index in its own order and stops at its first row: (node, state, priority, run_at)
 * and (state, priority, run_at) replace (node, state, run_at) and (state, run_at), by the same
 * names. The new time column has the engine's own type (`timeType`): this migration runs after
 * 2026_12_02_000000_postgres_types.
 */
export function jobPriorityMigration(kind: DatabaseKind) {
  const dropIndex = async (db: Kysely<unknown>, name: string) => {
    const drop = db.schema.dropIndex(name);
    // MariaDB names an index within its table.
    await (kind === 'mysql' ? drop.on('jobs') : drop).execute();
  };
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // One column per statement: SQLite adds only one at a time.
      await db.schema
        .alterTable('jobs')
        .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('jobs')
        .addColumn('unreachable_retries', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('jobs').addColumn('unreachable_at', timeType(kind)).execute();
      await sql`update jobs set priority = 10
        where kind = 'backup.create' and state in ('queued', 'running')`.execute(db);

      await dropIndex(db, 'jobs_node_claim_index');
      await createIndex(db, 'jobs_node_claim_index', 'jobs', ['node', 'state', 'priority', 'run_at']);
      await dropIndex(db, 'jobs_claim_index');
      await createIndex(db, 'jobs_claim_index', 'jobs', ['state', 'priority', 'run_at']);
    },
  };
}
