/**
 * The job claim's SELECT on PostgreSQL, with many jobs queued for another node: the query as the
 * repository built it before (one OR filter over every claimable job, ordered by id) against the
 * one it builds now (`JobRepository.candidateQuery`: one branch per index, each read in its own
 * order). In a scratch database on the server of DATABASE_URL (dropped at the end), it seeds
 * `--finished` finished jobs of node `mine` (its history), `--other` jobs queued for node
 * `other`, then `--mine` queued for `mine`, runs ANALYZE, prints each query's EXPLAIN (ANALYZE,
 * BUFFERS) and times `--runs` executions of each for three workers: `mine` (a few jobs waiting),
 * `idle` (none: every idle poll) and `other` (its long queue). Then it times whole claims
 * (`JobRepository.claim`: transaction, SELECT, UPDATE, read back) of `mine`'s jobs.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/claim-query.ts \
 *     [--finished 100000] [--other 100000] [--mine 10] [--runs 200] [--plans]
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql, type ExpressionBuilder } from 'kysely';
import pg from 'pg';
import { connect } from '../src/db/connection.ts';
import type { Database } from '../src/db/database.ts';
import { transactorFor, type Executor } from '../src/db/executor.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { JobRepository } from '../src/jobs/job.repository.ts';

const { values } = parseArgs({
  options: {
    finished: { type: 'string', default: '100000' },
    other: { type: 'string', default: '100000' },
    mine: { type: 'string', default: '10' },
    runs: { type: 'string', default: '200' },
    plans: { type: 'boolean', default: false },
  },
});
const count = (name: keyof typeof values) => Number(values[name]);
const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (!server.startsWith('postgres')) throw new Error('DATABASE_URL must name a PostgreSQL server');

/** The claim's SELECT before: every claimable job of the node or of none, oldest id first. */
function before(db: Executor, now: string, node: string) {
  const claimable = (eb: ExpressionBuilder<Database, 'jobs'>) =>
    eb.or([
      eb.and([eb('state', '=', 'queued'), eb('run_at', '<=', now)]),
      eb.and([eb('state', '=', 'running'), eb('lease_expires_at', '<', now)]),
    ]);
  return db
    .selectFrom('jobs')
    .select('id')
    .where(claimable)
    .where((eb) => eb.or([eb('node', '=', node), eb('node', 'is', null)]))
    .orderBy('id')
    .limit(1)
    .forUpdate()
    .skipLocked();
}

const name = `aerie_bench_claim_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`create database ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
const db = connect({ kind: 'postgres', url: url.toString(), sqlitePath: null });
try {
  await migrateToLatest(db);
  const jobs = new JobRepository(db.kysely, 'postgres', transactorFor(db.kysely));
  const seed = (n: number, node: string, state: string, runAt: string) =>
    sql`insert into jobs (kind, payload, state, batch, node, attempts, max_attempts, run_at, created_at, updated_at, finished_at)
      select 'backup.create', '{}', ${state}, gen_random_uuid()::text, ${node}, 0, 3,
        ${sql.raw(runAt)}, now(), now(), ${sql.raw(state === 'queued' ? 'null' : 'now()')}
      from generate_series(1, ${n}) as i`.execute(db.kysely);
  const started = performance.now();
  await seed(count('finished'), 'mine', 'succeeded', `now() - interval '1 day' + i * interval '1 ms'`);
  await seed(count('other'), 'other', 'queued', `now() - interval '1 hour' + i * interval '1 ms'`);
  await seed(count('mine'), 'mine', 'queued', `now() - interval '1 minute' + i * interval '1 ms'`);
  await sql`analyze jobs`.execute(db.kysely);
  console.log(
    `seeded ${count('finished')} finished jobs of mine, ${count('other')} queued for other, ` +
      `${count('mine')} queued for mine in ${((performance.now() - started) / 1000).toFixed(1)} s; ANALYZE done`,
  );

  const now = new Date().toISOString();
  const shapes = {
    before: (node: string) => before(db.kysely, now, node),
    after: (node: string) => jobs.candidateQuery(now, node),
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const summary = (xs: number[]) =>
    `${median(xs).toFixed(3)} ms (min ${Math.min(...xs).toFixed(3)}, max ${Math.max(...xs).toFixed(3)})`;
  for (const node of ['mine', 'idle', 'other']) {
    for (const [shape, query] of Object.entries(shapes)) {
      const { rows } = await sql<{
        'QUERY PLAN': string;
      }>`explain (analyze, buffers) ${query(node)}`.execute(db.kysely);
      const plan = rows.map((row) => row['QUERY PLAN']);
      const top = plan.find((line) => /Scan using|Seq Scan|Bitmap Heap Scan/.test(line))?.trim() ?? '';
      const execution = plan.find((line) => line.startsWith('Execution Time')) ?? '';
      if (values.plans) console.log(`\n-- ${shape}, worker of ${node}:\n${plan.join('\n')}`);
      const times: number[] = [];
      for (let run = 0; run < count('runs') + 20; run++) {
        const t = performance.now();
        await query(node).execute();
        if (run >= 20) times.push(performance.now() - t);
      }
      console.log(
        `${node.padEnd(5)} ${shape.padEnd(6)} ${summary(times)}; EXPLAIN: ${execution}; first scan: ${top.replace(/\s+\(cost.*$/, '')}`,
      );
    }
  }

  // Whole claims of mine's jobs, each put back in the queue (not timed) for the next: now, and
  // as the repository claimed before (the same transaction, UPDATE and read-back around the old
  // SELECT).
  const transaction = transactorFor(db.kysely);
  const claimBefore = (owner: string, leaseUntil: string) =>
    transaction(async (trx) => {
      const candidate = await before(trx, now, 'mine').executeTakeFirst();
      if (candidate === undefined) return undefined;
      await trx
        .updateTable('jobs')
        .set((eb) => ({
          state: 'running',
          lease_owner: owner,
          lease_expires_at: leaseUntil,
          attempts: eb('attempts', '+', 1),
          updated_at: now,
        }))
        .where('id', '=', candidate.id)
        .execute();
      return trx.selectFrom('jobs').selectAll().where('id', '=', candidate.id).executeTakeFirst();
    });
  const claimers = {
    before: claimBefore,
    after: (owner: string, leaseUntil: string) => jobs.claim(owner, now, leaseUntil, 'mine'),
  };
  console.log('');
  for (const [shape, claim] of Object.entries(claimers)) {
    const claims: number[] = [];
    for (let run = 0; run < count('runs') + 20; run++) {
      const t = performance.now();
      const job = await claim('bench', new Date(Date.now() + 60_000).toISOString());
      const elapsed = performance.now() - t;
      if (job === undefined) throw new Error('nothing claimed');
      if (run >= 20) claims.push(elapsed);
      await db.kysely
        .updateTable('jobs')
        .set({ state: 'queued', lease_owner: null, lease_expires_at: null, attempts: 0 })
        .where('id', '=', Number(job.id))
        .execute();
    }
    console.log(`whole claims by a worker of mine, ${shape.padEnd(6)} ${summary(claims)}`);
  }
} finally {
  await db.destroy();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}
