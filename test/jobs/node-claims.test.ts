/**
 * Servers live on nodes, and a worker runs only its node's jobs: the node is copied onto each job
 * when it is queued, claims filter on it (jobs of no server go to any node), and a database made
 * before nodes existed puts its servers and queued jobs on `local` — on every engine.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/connection.ts';
import { transactorFor } from '../../src/db/executor.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { JobRepository, type NewJob } from '../../src/jobs/job.repository.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';
import {
  contextFor,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { migrateThrough } from '../support/migrations.ts';

const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();
const NOW = '2026-11-26T10:00:00.000Z';
const OWNER = '00000000-0000-4000-8000-00000000000a';

async function insertServer(db: Db, id: string, node?: string): Promise<void> {
  await db.kysely
    .insertInto('servers')
    .values({
      id,
      identifier: id.slice(0, 8),
      owner_id: OWNER,
      name: 'server',
      description: '',
      status: null,
      disk_mb: 0,
      backup_limit: 10,
      created_at: NOW,
      updated_at: NOW,
      ...(node === undefined ? {} : { node }),
    } as never)
    .execute();
}

async function insertOwner(db: Db): Promise<void> {
  await db.kysely
    .insertInto('users')
    .values({
      id: OWNER,
      username: 'owner',
      email: 'owner@example.com',
      password_hash: 'x',
      first_name: 'O',
      last_name: 'W',
      created_at: NOW,
      updated_at: NOW,
    } as never)
    .execute();
}

function backupOf(serverId: string): NewJob {
  return {
    kind: 'backup.create',
    payload: { serverId, backupId: randomUUID(), actorId: null, ip: null },
    batch: randomUUID(),
  };
}

describe.each(ALL_DIALECT_CASES)('nodes on $kind', ({ kind, url, available }) => {
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
  let db: Db;

  beforeAll(async () => {
    if (!available) return;
    database = await emptyDatabase({ kind, url, available });
    db = database.db;
  });
  afterAll(async () => {
    await database?.close();
  });

  it.runIf(available)('puts existing servers and their queued jobs on local when upgrading', async () => {
    await migrateThrough(db, '2026_11_24_000000_feed_filter_columns');
    await insertOwner(db);
    const old = randomUUID();
    await insertServer(db, old);
    await sql`insert into jobs (kind, payload, state, batch, attempts, max_attempts, run_at, created_at, updated_at)
      values ('backup.restore', ${JSON.stringify({ serverId: old })}, 'queued', ${randomUUID()}, 0, 3, ${NOW}, ${NOW}, ${NOW})`.execute(
      db.kysely,
    );

    await migrateToLatest(db);

    const server = await db.kysely
      .selectFrom('servers')
      .select('node')
      .where('id', '=', old)
      .executeTakeFirst();
    expect(server?.node).toBe('local');
    const jobs = await db.kysely.selectFrom('jobs').select('node').execute();
    expect(jobs).toEqual([{ node: 'local' }]);
    // A server inserted without a node is on local too.
    const later = randomUUID();
    await insertServer(db, later);
    const row = await db.kysely
      .selectFrom('servers')
      .select('node')
      .where('id', '=', later)
      .executeTakeFirst();
    expect(row?.node).toBe('local');
  });

  it.runIf(available)(
    "copies the server's node onto each job; a worker claims only its node's jobs and those of no server",
    async () => {
      await db.kysely.deleteFrom('jobs').execute();
      const jobs = new JobRepository(db.kysely, db.kind, transactorFor(db.kysely));
      const onA = randomUUID();
      const onB = randomUUID();
      await insertServer(db, onA, 'node-a');
      await insertServer(db, onB, 'node-b.example');
      const due = iso(-1000);
      const a1 = await jobs.enqueue(backupOf(onA), due);
      const b1 = await jobs.enqueue(backupOf(onB), due);
      const a2 = await jobs.enqueue(backupOf(onA), due);
      // A kind of job with no server in its payload (none exists yet): any node's worker runs it.
      const loose = await jobs.enqueue(
        { kind: 'backup.create', payload: { purpose: 'maintenance' } as never, batch: randomUUID() },
        due,
      );
      const rows = await db.kysely.selectFrom('jobs').select(['id', 'node']).orderBy('id').execute();
      expect(rows.map((r) => [Number(r.id), r.node])).toEqual([
        [a1, 'node-a'],
        [b1, 'node-b.example'],
        [a2, 'node-a'],
        [loose, null],
      ]);

      const claim = (node: string) => jobs.claim(`${node}:worker`, iso(), iso(60_000), node);
      expect(await claim('node-c')).toMatchObject({ id: loose, node: null });
      expect(await claim('node-c')).toBeUndefined();
      expect(await claim('node-a')).toMatchObject({ id: a1, node: 'node-a' });
      expect(await claim('node-a')).toMatchObject({ id: a2, node: 'node-a' });
      expect(await claim('node-a')).toBeUndefined();
      // Case and near-misses do not match: names compare exactly.
      expect(await claim('NODE-B.EXAMPLE')).toBeUndefined();
      expect(await claim('node-b')).toBeUndefined();
      expect(await claim('node-b.example')).toMatchObject({ id: b1 });

      // A lost lease is taken over by a worker of the same node only.
      await db.kysely
        .updateTable('jobs')
        .set({ lease_expires_at: iso(-60_000) })
        .where('id', '=', a1)
        .execute();
      expect(await claim('node-b.example')).toBeUndefined();
      expect(await claim('node-a')).toMatchObject({ id: a1, attempts: 2 });
      // Without a node (the queue's own tests, tools) a claim takes any job.
      await db.kysely
        .updateTable('jobs')
        .set({ lease_expires_at: iso(-60_000) })
        .execute();
      expect(await jobs.claim('any', iso(), iso(60_000))).toMatchObject({ id: a1 });
    },
  );
});

describe('servers and workers on nodes', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.close();
  });

  it('creates servers on local unless told, and refuses node names that are not short and plain', async () => {
    const owner = await createUser(app);
    const plain = await app.services.servers.create({ owner: owner.username, name: 'plain' });
    expect(plain.server.node).toBe('local');
    const placed = await app.services.servers.create({
      owner: owner.username,
      name: 'placed',
      node: 'eu-1.b_2',
    });
    expect(placed.server.node).toBe('eu-1.b_2');
    for (const bad of ['', 'EU-1', 'eu 1', 'eu/1', 'é', 'a'.repeat(65), '../x']) {
      await expect(
        app.services.servers.create({ owner: owner.username, name: 'bad', node: bad }),
      ).rejects.toThrow(/node name is 1 to 64 characters/);
    }
    const count = await app.db.kysely
      .selectFrom('servers')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(2);
  });

  it("runs a server's backup on a worker of its node only", async () => {
    const owner = await createUser(app);
    const { server } = await app.services.servers.create({ owner: owner.username, name: 'far', node: 'far' });
    const near = await createServer(app, owner);
    const context = contextFor(owner);
    const access = (id: string) => app.services.access.resolve(context.actor, id);
    await app.services.backupManagement.create(context, await access(server.id), {
      name: 'far',
      is_locked: false,
    });
    await app.services.backupManagement.create(context, await access(near.id), {
      name: 'near',
      is_locked: false,
    });

    // The harness's worker runs local's jobs: the near backup, not the far one.
    expect(await drainJobs(app)).toBe(1);
    const far = app.services.createWorker('far-worker', 'far');
    expect(await far.runOnce()).toBe(true);
    expect(await far.runOnce()).toBe(false);
    const states = await app.db.kysely
      .selectFrom('backups')
      .select(['name', 'is_successful'])
      .orderBy('name')
      .execute();
    expect(states.map((s) => [s.name, Boolean(s.is_successful)])).toEqual([
      ['far', true],
      ['near', true],
    ]);
  });
});
