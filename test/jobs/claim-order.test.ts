/**
 * Which job a claim takes, on every engine: a node's worker takes its own node's jobs and those of
 * no server, never another node's (however many are queued there, and however old), the one due
 * longest first (queued past its run_at, or running on a lease that ran out; ties to the older
 * job); nothing finished, nothing still to come, nothing whose lease still runs. On PostgreSQL
 * and MariaDB a job another worker holds locked is skipped, not waited for.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/connection.ts';
import { transactorFor } from '../../src/db/executor.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { JobRepository } from '../../src/jobs/job.repository.ts';
import type { JobState } from '../../src/jobs/job.table.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const NOW = at(0);
const OTHER_NODE_JOBS = 3000;

interface Seed {
  node: string | null;
  state?: JobState;
  runAt: string;
  leaseExpiresAt?: string;
}

describe.each(ALL_DIALECT_CASES)('claims on $kind', (dialect) => {
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
  let db: Db;
  let jobs: JobRepository;

  beforeAll(async () => {
    if (!dialect.available) return;
    database = await emptyDatabase(dialect);
    db = database.db;
    await migrateToLatest(db);
    jobs = new JobRepository(db.kysely, db.kind, transactorFor(db.kysely));
  });
  afterAll(async () => {
    await database?.close();
  });
  beforeEach(async () => {
    if (dialect.available) await db.kysely.deleteFrom('jobs').execute();
  });

  /** Inserts jobs as given, in this order (so ids follow it), and returns their ids. */
  async function seed(rows: Seed[]): Promise<number[]> {
    const values = rows.map((row) => ({
      kind: 'backup.create',
      payload: '{}',
      state: row.state ?? 'queued',
      batch: randomUUID(),
      node: row.node,
      attempts: row.state === 'running' ? 1 : 0,
      max_attempts: 3,
      run_at: row.runAt,
      lease_owner: row.state === 'running' ? 'someone' : null,
      lease_expires_at: row.leaseExpiresAt ?? null,
      error: null,
      created_at: row.runAt,
      updated_at: row.runAt,
      finished_at: row.state === 'succeeded' || row.state === 'failed' ? row.runAt : null,
    }));
    for (let i = 0; i < values.length; i += 500)
      await db.kysely
        .insertInto('jobs')
        .values(values.slice(i, i + 500))
        .execute();
    const ids = await db.kysely.selectFrom('jobs').select('id').orderBy('id').execute();
    return ids.slice(-rows.length).map((row) => Number(row.id));
  }

  /** Claims for `node` until nothing is left, and returns the ids in the order they came. */
  async function claimAll(node: string | undefined, now = NOW): Promise<number[]> {
    const claimed: number[] = [];
    for (;;) {
      const job = await jobs.claim(`${node ?? 'any'}:worker`, now, at(3_600_000), node);
      if (job === undefined) return claimed;
      expect(job).toMatchObject({ state: 'running', lease_owner: `${node ?? 'any'}:worker` });
      claimed.push(job.id);
      if (claimed.length > 100) throw new Error('claimed more than this node could have');
    }
  }

  it.runIf(dialect.available)(
    "takes this node's jobs, and those of no server, due longest first; never another node's",
    async () => {
      // Thousands queued for another node, all due before any of this node's.
      await seed(
        Array.from({ length: OTHER_NODE_JOBS }, (_, i) => ({ node: 'other', runAt: at(-600_000 + i) })),
      );
      // This node's history: finished jobs, older still.
      await seed(
        Array.from({ length: 200 }, (_, i) => ({
          node: 'mine',
          state: i % 2 ? ('succeeded' as const) : ('failed' as const),
          runAt: at(-900_000 + i),
        })),
      );
      // Inserted out of due order, so that id order and due order differ.
      const [m5, m1, m3, null2, m4, tieB, tieA, lostMine, lostOther, live, later, m2] = await seed([
        { node: 'mine', runAt: at(-5_000) },
        { node: 'mine', runAt: at(-50_000) },
        { node: 'mine', runAt: at(-30_000) },
        { node: null, runAt: at(-40_000) },
        { node: 'mine', runAt: at(-10_000) },
        { node: 'mine', runAt: at(-2_000) }, // the same due time as the next: the older id first
        { node: 'mine', runAt: at(-2_000) },
        // Running on leases that ran out 20 s ago: taken over as due since then.
        { node: 'mine', state: 'running', runAt: at(-120_000), leaseExpiresAt: at(-20_000) },
        { node: 'other', state: 'running', runAt: at(-120_000), leaseExpiresAt: at(-60_000) },
        // Running on a lease that still runs, and queued for later: not claimable.
        { node: 'mine', state: 'running', runAt: at(-120_000), leaseExpiresAt: at(60_000) },
        { node: 'mine', runAt: at(1) },
        { node: 'mine', runAt: at(-45_000) },
      ]);

      expect(await claimAll('mine')).toEqual([m1, m2, null2, m3, lostMine, m4, m5, tieB, tieA]);
      // Another node with nothing of its own finds nothing left (the job of no server is taken).
      expect(await claimAll('idle')).toEqual([]);
      // Once due, the later job comes too.
      expect(await claimAll('mine', at(1))).toEqual([later]);

      // Every one of the other node's jobs is still queued, and its lost lease still lost.
      const others = await db.kysely
        .selectFrom('jobs')
        .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
        .where('node', '=', 'other')
        .groupBy('state')
        .orderBy('state')
        .execute();
      expect(others.map((row) => [row.state, Number(row.n)])).toEqual([
        ['queued', OTHER_NODE_JOBS],
        ['running', 1],
      ]);
      const kept = await db.kysely
        .selectFrom('jobs')
        .select(['id', 'lease_owner'])
        .where('id', 'in', [live!, lostOther!])
        .orderBy('id')
        .execute();
      expect(kept.map((row) => row.lease_owner)).toEqual(['someone', 'someone']);

      // The other node's worker takes its own queue, oldest first.
      const first = await jobs.claim('other:worker', NOW, at(3_600_000), 'other');
      expect(first).toMatchObject({ node: 'other', run_at: at(-600_000) });
    },
    60_000,
  );

  it.runIf(dialect.available)('without a node, takes any job, due longest first', async () => {
    const [a, b, c, d] = await seed([
      { node: 'other', runAt: at(-1_000) },
      { node: 'mine', runAt: at(-3_000) },
      { node: null, runAt: at(-2_000) },
      { node: 'mine', state: 'running', runAt: at(-9_000), leaseExpiresAt: at(-2_500) },
    ]);
    expect(await claimAll(undefined)).toEqual([b, d, c, a]);
  });

  it.runIf(dialect.available && dialect.kind !== 'sqlite')(
    'skips a job another worker holds locked, at once, and takes the next',
    async () => {
      const [first, second] = await seed([
        { node: 'mine', runAt: at(-2_000) },
        { node: 'mine', runAt: at(-1_000) },
      ]);
      // Another worker's claim, caught between its SELECT … FOR UPDATE and its commit.
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked: () => void = () => undefined;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = db.kysely.transaction().execute(async (trx) => {
        await trx.selectFrom('jobs').select('id').where('id', '=', first!).forUpdate().execute();
        locked();
        await released;
      });
      try {
        await isLocked;
        const started = Date.now();
        const job = await jobs.claim('mine:worker', NOW, at(3_600_000), 'mine');
        expect(job?.id).toBe(second);
        // Not waited for: a lock wait would last until the holder let go (never, here).
        expect(Date.now() - started).toBeLessThan(5_000);
        expect(await jobs.claim('mine:worker', NOW, at(3_600_000), 'mine')).toBeUndefined();
      } finally {
        release();
        await holder;
      }
      expect((await jobs.claim('mine:worker', NOW, at(3_600_000), 'mine'))?.id).toBe(first);
    },
    30_000,
  );

  it.runIf(dialect.available && dialect.kind !== 'sqlite')(
    'on PostgreSQL waits for a job whose lease ran out while its row is being written (a heartbeat), then takes it; on MariaDB skips it',
    async () => {
      const [lost] = await seed([
        { node: 'mine', state: 'running', runAt: at(-9_000), leaseExpiresAt: at(-1_000) },
      ]);
      // The stalled worker's heartbeat, caught before its commit.
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let written: () => void = () => undefined;
      const isWritten = new Promise<void>((resolve) => (written = resolve));
      const heartbeat = db.kysely.transaction().execute(async (trx) => {
        await trx
          .updateTable('jobs')
          .set({ updated_at: at(-500) })
          .where('id', '=', lost!)
          .execute();
        written();
        await released;
      });
      try {
        await isWritten;
        const claim = jobs.claim('mine:worker', NOW, at(3_600_000), 'mine');
        const outcome = await Promise.race([
          claim.then((job) => (job === undefined ? 'skipped' : 'claimed')),
          new Promise((resolve) => setTimeout(() => resolve('waiting'), 300)),
        ]);
        if (dialect.kind === 'postgres') {
          expect(outcome).toBe('waiting');
          release();
          expect(await claim).toMatchObject({ id: lost, lease_owner: 'mine:worker', attempts: 2 });
        } else {
          // MariaDB's claims never wait (see dueFirst): the next poll takes it.
          expect(outcome).toBe('skipped');
          release();
          await heartbeat;
          const next = await jobs.claim('mine:worker', NOW, at(3_600_000), 'mine');
          expect(next).toMatchObject({ id: lost, lease_owner: 'mine:worker', attempts: 2 });
        }
      } finally {
        release();
        await heartbeat;
      }
    },
    30_000,
  );
});
