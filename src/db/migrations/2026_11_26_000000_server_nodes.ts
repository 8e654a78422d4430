import { sql, type Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { createIndex } from '../create-index.ts';

/**
 * Puts every server on a node: the machine whose worker holds its volume and runs its jobs.
 * Existing servers are on `local`, the node of a single-machine install. Each job carries its
 * server's node, copied when it is queued, so that a worker claims its own node's jobs through
 * an index that starts with the node; jobs queued before this migration were all for servers,
 * which are now all on `local`.
 */
export function serverNodesMigration(kind: DatabaseKind) {
  // Node names compare exactly; MariaDB's default collation would match them in any case.
  const name = kind === 'mysql' ? sql`varchar(64) collate utf8mb4_bin` : sql`varchar(64)`;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable('servers')
        .addColumn('node', name, (c) => c.notNull().defaultTo('local'))
        .execute();
      // Null: a job of no server, which a worker of any node may run.
      await db.schema.alterTable('jobs').addColumn('node', name).execute();
      await sql`update jobs set node = 'local' where kind in ('backup.create', 'backup.restore')`.execute(db);
      // A claim reads its node's queued jobs (state, run_at) and running ones (few) for lost leases.
      await createIndex(db, 'jobs_node_claim_index', 'jobs', ['node', 'state', 'run_at']);
    },
  };
}
