/**
 * Queued work starts at once, not at the next poll: a worker of the process that queued a job is
 * woken once the job's transaction commits (never before, never on a rollback), and on PostgreSQL
 * workers of other processes are woken by NOTIFY, also after their listening connection was
 * dropped. Every worker here polls only once a minute, so a job claimed quickly was woken for.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { afterCommit, transactorFor } from '../../src/db/executor.ts';
import { JobWakeups } from '../../src/jobs/job-wakeups.ts';
import { Worker, type JobHandler, type JobHandlers } from '../../src/jobs/worker.ts';
import { SERVER_DIALECT_CASES, scratchDatabase, type ScratchDatabase } from '../support/dialects.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

const SLOW_POLL = { AERIE_WORKER_POLL_MS: '60000' };
// Far below the one-minute poll, with room for a loaded machine: only a wake-up gets there.
const WITHIN_MS = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined || Date.now() >= deadline) return value;
    await sleep(5);
  }
}

/** POSTs a backup of a new server of a new user through `app`'s API; the job is queued with it. */
async function postBackup(app: TestApp): Promise<string> {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token } = await createApiKey(app, owner);
  const res = await app.http.inject({
    method: 'POST',
    url: `/api/client/servers/${server.identifier}/backups`,
    headers: bearer(token),
    payload: {},
  });
  expect(res.statusCode).toBe(200);
  return res.json<{ attributes: { uuid: string } }>().attributes.uuid;
}

/** A worker on `app`'s queue whose backup.create handler only records which backups it ran. */
function recordingWorker(app: TestApp, node: string) {
  const ran: { backupId: string; at: number }[] = [];
  const record: JobHandler<{ backupId: string }> = {
    run: (job) => {
      ran.push({ backupId: job.payload.backupId, at: Date.now() });
      return Promise.resolve();
    },
    fail: () => Promise.resolve(),
  };
  const worker = new Worker({
    jobs: app.services.jobs,
    handlers: { 'backup.create': record } as unknown as JobHandlers,
    wakeups: app.services.jobWakeups,
    clock: () => new Date(),
    logger: pino({ level: 'silent' }),
    node,
    pollMs: 60_000,
    leaseMs: 30_000,
    timeoutMs: 60_000,
  });
  return { worker, ran };
}

describe('in one process', () => {
  let app: TestApp;
  const workers: Worker[] = [];
  beforeAll(async () => {
    app = await startTestApp({ env: SLOW_POLL });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  });
  afterAll(async () => {
    await app.close();
  });

  it('a backup requested through the API is claimed by the idle worker at once', async () => {
    const worker = app.services.createWorker('wake');
    workers.push(worker);
    worker.start();
    await sleep(100); // its first look finds nothing; the next poll is a minute away

    const requested = Date.now();
    const backupId = await postBackup(app);
    const claimed = await until(async () => {
      const rows = await app.db.kysely
        .selectFrom('jobs')
        .select(['state', 'payload', 'lease_owner'])
        .where('kind', '=', 'backup.create')
        .execute();
      return rows.find((row) => row.payload.includes(backupId) && row.state !== 'queued');
    }, WITHIN_MS);
    expect(claimed?.lease_owner).toBe(worker.owner);
    expect(Date.now() - requested).toBeLessThan(WITHIN_MS + 100);
  });

  it('wakes workers after the enqueuing transaction commits, and not when it rolls back', async () => {
    const wakeups = app.services.jobWakeups;
    let woken = 0;
    const unsubscribe = wakeups.subscribe(() => (woken += 1));
    if (app.db.kind === 'postgres') {
      // Listening for other processes' jobs starts with one wake-up, for what was queued before.
      for (let i = 0; i < 100 && woken === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(woken).toBe(1);
      woken = 0;
    }
    const job = { kind: 'backup.create', payload: { i: 1 } as never, batch: randomUUID() } as const;
    const transaction = transactorFor(app.db.kysely);
    try {
      await transaction(async (trx) => {
        await app.services.jobs.enqueue(job, new Date().toISOString(), trx);
        expect(woken).toBe(0); // the row is not visible to a worker yet
      });
      expect(woken).toBe(1);

      await expect(
        transaction(async (trx) => {
          await app.services.jobs.enqueue(job, new Date().toISOString(), trx);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(woken).toBe(1);

      await app.services.jobs.enqueue(job, new Date().toISOString());
      expect(woken).toBe(2);
      // On PostgreSQL the NOTIFYs of these jobs come back to this process too: they are its own,
      // so they wake no one a second time.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(woken).toBe(2);
    } finally {
      await unsubscribe();
    }
  });

  it('refuses to wait for the commit of a transaction no Transactor opened', async () => {
    await app.db.kysely.transaction().execute(async (trx) => {
      expect(() => afterCommit(trx, () => undefined)).toThrow(/Transactor/);
      await Promise.resolve();
    });
  });

  it('a worker woken while it claims looks again once it is done', async () => {
    const wakeups = new JobWakeups();
    let claims = 0;
    let release: () => void = () => undefined;
    const jobs = {
      claim: () => {
        claims += 1;
        // The first claim is still running when the wake-up comes; it finds nothing.
        return claims === 1
          ? new Promise<undefined>((resolve) => (release = () => resolve(undefined)))
          : Promise.resolve(undefined);
      },
    };
    const worker = new Worker({
      jobs: jobs as never,
      handlers: {} as JobHandlers,
      wakeups,
      clock: () => new Date(),
      logger: pino({ level: 'silent' }),
      node: 'busy',
      pollMs: 60_000,
      leaseMs: 30_000,
      timeoutMs: 60_000,
    });
    workers.push(worker);
    worker.start();
    await until(() => Promise.resolve(claims === 1 ? true : undefined), 1000);
    wakeups.notify();
    expect(claims).toBe(1);
    release();
    expect(await until(() => Promise.resolve(claims === 2 ? true : undefined), WITHIN_MS)).toBe(true);
  });
});

const postgres = SERVER_DIALECT_CASES.find((dialect) => dialect.kind === 'postgres')!;

describe.runIf(postgres.available)('across processes on PostgreSQL', () => {
  let scratch: ScratchDatabase;
  /** A queues jobs through its API and runs no worker; B and C each run one. */
  let a: TestApp, b: TestApp, c: TestApp;
  const workers: Worker[] = [];

  beforeAll(async () => {
    scratch = await scratchDatabase(postgres);
    a = await startTestApp({ databaseUrl: scratch.url, env: SLOW_POLL });
    b = await startTestApp({ databaseUrl: scratch.url, env: SLOW_POLL });
    c = await startTestApp({ databaseUrl: scratch.url, env: SLOW_POLL });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  });
  afterAll(async () => {
    for (const app of [a, b, c]) await app?.close();
    await scratch?.drop();
  });

  /** The backend pids of the connections listening for jobs on the scratch database. */
  async function listenerPids(): Promise<number[]> {
    const { rows } = await sql<{ pid: number }>`
      select pid from pg_stat_activity
      where datname = current_database() and query = 'LISTEN aerie_jobs'`.execute(a.db.kysely);
    return rows.map((row) => row.pid);
  }

  async function started(app: TestApp, node: string) {
    const listening = (await listenerPids()).length;
    const recording = recordingWorker(app, node);
    workers.push(recording.worker);
    recording.worker.start();
    // Listening once pg_stat_activity shows the LISTEN; the first look has found nothing by then.
    await until(async () => ((await listenerPids()).length > listening ? true : undefined), 5000);
    await sleep(50);
    return recording;
  }

  it("B's idle worker claims a job queued by A's API at once", async () => {
    const { ran } = await started(b, 'b');
    const requested = Date.now();
    const backupId = await postBackup(a);
    const run = await until(() => Promise.resolve(ran.find((r) => r.backupId === backupId)), WITHIN_MS);
    expect(run).toBeDefined();
    expect(run!.at - requested).toBeLessThan(WITHIN_MS);
  });

  it('listens again after its connection is dropped, and wakes on the next job', async () => {
    const { ran } = await started(b, 'b');
    const [before] = await listenerPids();
    expect(before).toBeDefined();
    await sql`select pg_terminate_backend(${before})`.execute(a.db.kysely);
    const after = await until(async () => {
      const pids = await listenerPids();
      return pids.find((pid) => pid !== before);
    }, 5000);
    expect(after).toBeDefined();

    const backupId = await postBackup(a);
    expect(
      await until(() => Promise.resolve(ran.find((r) => r.backupId === backupId)), WITHIN_MS),
    ).toBeDefined();
  });

  it('gives each of many woken-for jobs to exactly one of two workers', async () => {
    const fromB = await started(b, 'b');
    const fromC = await started(c, 'c');
    const backupIds: string[] = [];
    for (let i = 0; i < 20; i++) {
      const backupId = randomUUID();
      backupIds.push(backupId);
      await a.services.jobs.enqueue(
        { kind: 'backup.create', payload: { backupId } as never, batch: randomUUID() },
        new Date().toISOString(),
      );
    }
    const ran = () => [...fromB.ran, ...fromC.ran].map((r) => r.backupId);
    await until(() => Promise.resolve(ran().length >= 20 ? true : undefined), 5000);
    await sleep(200); // time for any second run of a job to show
    expect(ran().sort()).toEqual([...backupIds].sort());
  });
});
