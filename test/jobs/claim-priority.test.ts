/**
 * Restores before backups, on every engine: of a node's due jobs a worker claims a restore before
 * the backups queued ahead of it (a restore holds its server in `restoring_backup` until it ends),
 * then the rest in the order they became due. Jobs queued before the priorities existed get their
 * kind's priority when the database is migrated.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/connection.ts';
import { transactorFor } from '../../src/db/executor.ts';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate.ts';
import type { JobKind } from '../../src/jobs/job-kinds.ts';
import { JobRepository } from '../../src/jobs/job.repository.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';
import { migrateThrough } from '../support/migrations.ts';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const NOW = at(0);
const MIGRATION = '2026_12_04_000000_job_priority';

describe.each(ALL_DIALECT_CASES)('claim priorities on $kind', (dialect) => {
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

  /** Queues a job of `kind` for `node`'s servers, due at `runAt`, as the API does. */
  async function queue(
    kind: Extract<JobKind, 'backup.create' | 'backup.restore'>,
    node: string | null,
    runAt: string,
  ): Promise<number> {
    const payload = { serverId: randomUUID(), backupId: randomUUID(), actorId: null, ip: null };
    const id = await jobs.enqueue(
      kind === 'backup.create'
        ? { kind, payload, batch: randomUUID() }
        : { kind, payload: { ...payload, truncate: false }, batch: randomUUID() },
      runAt,
    );
    // No such server exists here: the node is set as enqueue would have copied it.
    await db.kysely.updateTable('jobs').set({ node }).where('id', '=', id).execute();
    return id;
  }

  async function claimAll(node: string | undefined, now = NOW): Promise<number[]> {
    const claimed: number[] = [];
    for (;;) {
      const job = await jobs.claim('worker', now, at(3_600_000), node);
      if (job === undefined) return claimed;
      claimed.push(job.id);
      if (claimed.length > 50) throw new Error('claimed more than was queued');
    }
  }

  it.runIf(dialect.available)(
    "claims a node's restores before the backups queued ahead of them, then the rest as they became due",
    async () => {
      const backups: number[] = [];
      for (let i = 0; i < 10; i++) backups.push(await queue('backup.create', 'mine', at(-60_000 + i * 1000)));
      const restore = await queue('backup.restore', 'mine', at(-1_000));
      const earlierRestore = await queue('backup.restore', 'mine', at(-2_000));
      const ofNoServer = await queue('backup.create', null, at(-55_500));
      const otherNodes = await queue('backup.restore', 'other', at(-90_000));
      const later = await queue('backup.restore', 'mine', at(5_000));
      // A backup whose worker died, its lease run out before any of the backups was queued.
      const lost = await queue('backup.create', 'mine', at(-120_000));
      await db.kysely
        .updateTable('jobs')
        .set({ state: 'running', attempts: 1, lease_owner: 'dead', lease_expires_at: at(-58_500) })
        .where('id', '=', lost)
        .execute();

      expect(await claimAll('mine')).toEqual([
        earlierRestore,
        restore,
        backups[0],
        backups[1],
        lost,
        backups[2],
        backups[3],
        backups[4],
        ofNoServer,
        ...backups.slice(5),
      ]);
      // A restore still to come waits for its time; the other node's is never this node's.
      expect(await claimAll('mine', at(5_000))).toEqual([later]);
      expect(await claimAll('other')).toEqual([otherNodes]);
    },
    30_000,
  );

  it.runIf(dialect.available)('without a node, also takes restores first', async () => {
    const backup = await queue('backup.create', 'a', at(-3_000));
    const restore = await queue('backup.restore', 'b', at(-1_000));
    expect(await claimAll(undefined)).toEqual([restore, backup]);
  });
});

describe.each(ALL_DIALECT_CASES)('the priority migration on $kind', (dialect) => {
  it.runIf(dialect.available)(
    "gives the jobs queued before it their kind's priority",
    async () => {
      const database = await emptyDatabase(dialect);
      try {
        const { db } = database;
        const names = knownMigrations(db);
        await migrateThrough(db, names[names.indexOf(MIGRATION) - 1]!);
        const row = (kind: JobKind, runAt: string) => ({
          kind,
          payload: '{}',
          state: 'queued' as const,
          batch: randomUUID(),
          node: 'local',
          attempts: 0,
          max_attempts: 3,
          run_at: runAt,
          lease_owner: null,
          lease_expires_at: null,
          error: null,
          created_at: runAt,
          updated_at: runAt,
          finished_at: null,
        });
        await db.kysely
          .insertInto('jobs')
          .values([row('backup.create', at(-2_000)), row('backup.restore', at(-1_000))])
          .execute();
        await migrateToLatest(db);
        const rows = await db.kysely.selectFrom('jobs').select(['kind', 'priority']).orderBy('id').execute();
        expect(rows).toEqual([
          { kind: 'backup.create', priority: 10 },
          { kind: 'backup.restore', priority: 0 },
        ]);
        const jobs = new JobRepository(db.kysely, db.kind, transactorFor(db.kysely));
        expect((await jobs.claim('worker', NOW, at(60_000), 'local'))?.kind).toBe('backup.restore');
      } finally {
        await database.close();
      }
    },
    30_000,
  );
});
