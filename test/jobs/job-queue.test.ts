/**
 * The durable job queue on the database: claims are exclusive (also between worker processes that
 * share only the SQLite file), leases run out and are taken over, a worker that lost its lease can
 * neither renew nor finish the job, and the Worker retries, fails and gives up as promised.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withJobErrors } from '../../src/backups/job-errors.ts';
import { transactorFor } from '../../src/db/executor.ts';
import { JobRepository } from '../../src/jobs/job.repository.ts';
import { Worker, type JobContext, type JobHandler, type JobHandlers } from '../../src/jobs/worker.ts';
import { AppError } from '../../src/shared/errors.ts';
import { ArchiveError } from '../../src/storage/archive/archive.types.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

let app: TestApp;
let jobs: JobRepository;

beforeAll(async () => {
  app = await startTestApp();
  jobs = new JobRepository(app.db.kysely, app.db.kind, transactorFor(app.db.kysely));
});

afterAll(async () => {
  await app.close();
});

beforeEach(async () => {
  await app.db.kysely.deleteFrom('jobs').execute();
});

async function enqueue(count: number, runAt = at(0), maxAttempts?: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      await jobs.enqueue(
        // The queue does not look into payloads: any kind and payload will do for these tests.
        {
          kind: 'backup.create',
          payload: { i } as never,
          batch: randomUUID(),
          ...(maxAttempts ? { maxAttempts } : {}),
        },
        runAt,
      ),
    );
  }
  return ids;
}

const row = (id: number) =>
  app.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Claims until nothing is left, as `owner`. */
async function claimAll(repo: JobRepository, owner: string, now = at(1000)): Promise<number[]> {
  const claimed: number[] = [];
  for (
    let job = await repo.claim(owner, now, at(600_000));
    job;
    job = await repo.claim(owner, now, at(600_000))
  )
    claimed.push(job.id);
  return claimed;
}

describe('claim', () => {
  it('gives each job to exactly one of several concurrent owners', async () => {
    const ids = await enqueue(40);
    const owners = ['a', 'b', 'c', 'd', 'e'];
    const claims = await Promise.all(owners.map((owner) => claimAll(jobs, owner)));
    expect(claims.flat().sort((x, y) => x - y)).toEqual(ids);
    for (const [i, owner] of owners.entries()) {
      for (const id of claims[i]!)
        expect(await row(id)).toMatchObject({ state: 'running', lease_owner: owner, attempts: 1 });
    }
  });

  it(
    'gives each job to exactly one of several worker processes sharing the database, without errors',
    { timeout: 60_000 },
    async () => {
      const ids = await enqueue(600); // enough that the claims overlap in time
      const script = path.join(app.dataDir, 'claimer.mts');
      await writeFile(
        script,
        `import { connect } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/db/connection.ts')).href)};
import { transactorFor } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/db/executor.ts')).href)};
import { JobRepository } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/jobs/job.repository.ts')).href)};
import { loadConfig } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/config.ts')).href)};
const [url, owner, startAt] = process.argv.slice(2);
const db = connect(loadConfig({ DATABASE_URL: url }).database);
const jobs = new JobRepository(db.kysely, db.kind, transactorFor(db.kysely));
while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
const claimed = [], errors = [];
for (let misses = 0; misses < 3; ) {
  try {
    const job = await jobs.claim(owner, ${JSON.stringify(at(1000))}, ${JSON.stringify(at(600_000))});
    if (job) { claimed.push(job.id); misses = 0; } else misses += 1;
  } catch (error) { errors.push(String(error.message)); misses = 0; }
}
process.stdout.write(JSON.stringify({ claimed, errors }));
await db.destroy();
`,
      );
      const startAt = Date.now() + 4000; // all of them claim at once, after starting up
      const run = promisify(execFile);
      const outputs = await Promise.all(
        ['p1', 'p2', 'p3', 'p4'].map((owner) =>
          run(
            process.execPath,
            ['--import', 'tsx', script, app.config.database.url, owner, String(startAt)],
            { cwd: ROOT },
          ),
        ),
      );
      const results = outputs.map((o) => JSON.parse(o.stdout) as { claimed: number[]; errors: string[] });
      expect(results.flatMap((r) => r.errors)).toEqual([]);
      expect(results.flatMap((r) => r.claimed).sort((x, y) => x - y)).toEqual(ids);
      // The processes really raced for the same rows.
      expect(results.filter((r) => r.claimed.length > 0).length).toBeGreaterThan(1);
    },
  );

  it('leaves a job whose run_at is still to come', async () => {
    const [id] = await enqueue(1, at(5000));
    expect(await jobs.claim('a', at(4999), at(60_000))).toBeUndefined();
    expect((await row(id!)).state).toBe('queued');
    expect(await jobs.claim('a', at(5000), at(60_000))).toMatchObject({ id, state: 'running', attempts: 1 });
  });

  it('skips a job still to come for a younger one that is due', async () => {
    const [later] = await enqueue(1, at(5000));
    const [due] = await enqueue(1, at(0));
    expect((await jobs.claim('a', at(1000), at(60_000)))?.id).toBe(due);
    expect(await jobs.claim('a', at(1000), at(60_000))).toBeUndefined();
    expect((await row(later!)).state).toBe('queued');
  });

  it('claims the oldest due job first and ignores finished ones', async () => {
    const [first, second] = await enqueue(2);
    expect((await jobs.claim('a', at(1), at(100)))?.id).toBe(first);
    expect(await jobs.finish(first!, 'a', 'succeeded', null, at(2))).toBe(true);
    expect((await jobs.claim('a', at(3), at(100)))?.id).toBe(second);
    expect(await jobs.finish(second!, 'a', 'failed', 'no', at(4))).toBe(true);
    expect(await jobs.claim('b', at(1_000_000), at(2_000_000))).toBeUndefined();
  });
});

describe('leases', () => {
  it('are taken over once expired; the old owner can then neither renew nor finish', async () => {
    const [id] = await enqueue(1);
    expect(await jobs.claim('old', at(0), at(1000))).toMatchObject({ id, attempts: 1, lease_owner: 'old' });
    expect(await jobs.heartbeat(id!, 'old', at(500), at(1500))).toBe(true);
    expect(await jobs.claim('new', at(1499), at(99_000))).toBeUndefined(); // renewed: not yet expired
    const taken = await jobs.claim('new', at(1501), at(99_000));
    expect(taken).toMatchObject({ id, attempts: 2, lease_owner: 'new', lease_expires_at: at(99_000) });

    expect(await jobs.heartbeat(id!, 'old', at(1600), at(2600))).toBe(false);
    expect(await jobs.finish(id!, 'old', 'succeeded', null, at(1700))).toBe(false);
    expect(await row(id!)).toMatchObject({
      state: 'running',
      lease_owner: 'new',
      lease_expires_at: at(99_000),
      finished_at: null,
    });

    expect(await jobs.heartbeat(id!, 'new', at(2000), at(100_000))).toBe(true);
    expect(await jobs.finish(id!, 'new', 'succeeded', null, at(3000))).toBe(true);
    expect(await row(id!)).toMatchObject({
      state: 'succeeded',
      finished_at: at(3000),
      lease_expires_at: null,
    });
    expect(await jobs.heartbeat(id!, 'new', at(4000), at(5000))).toBe(false); // finished: nothing to renew
  });
});

// ---------------------------------------------------------------------------------------------
// The Worker, with a handler of our own for the one job kind.

const silent = pino({ level: 'silent' });

function recordingHandler(run: (job: JobContext<unknown>) => Promise<void>) {
  const failures: { id: number; reason: string; attempt: number }[] = [];
  const runs: number[] = [];
  const handler: JobHandler<unknown> = {
    run: async (job) => {
      runs.push(job.attempt);
      await run(job);
    },
    fail: (job, reason) => {
      failures.push({ id: job.id, reason, attempt: job.attempt });
      return Promise.resolve();
    },
  };
  return { handler, failures, runs };
}

function workerWith(handler: JobHandler<unknown>, now: () => Date, leaseMs = 30_000, timeoutMs = 60_000) {
  // Only restore jobs are queued in these tests; the other kinds need no handler here.
  // Its failures are told to the queue as the backup and restore handlers tell theirs.
  const handlers = { 'backup.restore': withJobErrors(handler) } as Partial<JobHandlers> as JobHandlers;
  return new Worker({
    jobs,
    handlers,
    clock: now,
    logger: silent,
    node: 'test',
    pollMs: 10,
    leaseMs,
    timeoutMs,
  });
}

const enqueueKind = (maxAttempts = 3, runAt = at(0)) =>
  jobs.enqueue(
    { kind: 'backup.restore', payload: { x: 1 } as never, batch: randomUUID(), maxAttempts },
    runAt,
  );

describe('Worker', () => {
  it('retries a job that failed for a passing reason later, then fails it for good', async () => {
    let clock = T0 + 10;
    const { handler, failures, runs } = recordingHandler(() =>
      Promise.reject(new Error('ECONNRESET: something passing')),
    );
    const worker = workerWith(handler, () => new Date(clock));
    const id = await enqueueKind(3);

    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({
      state: 'queued',
      attempts: 1,
      run_at: at(10 + 2000),
      lease_owner: null,
    });
    expect((await row(id)).error).toMatch(/internal error/); // the details stay in the log
    expect(await worker.runOnce()).toBe(false); // not due yet
    clock = T0 + 2010;
    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({ state: 'queued', attempts: 2, run_at: at(2010 + 4000) });
    clock = T0 + 6010;
    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 3 });
    expect(runs).toEqual([1, 2, 3]);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ id, attempt: 3 });
    expect(failures[0]?.reason).toMatch(/internal error/);
  });

  it.each([
    ['an archive error', new ArchiveError('corrupt', 'the archive is damaged')],
    [
      'a refusal',
      new (class extends AppError {
        status = 400;
        code = 'X';
      })('the backup no longer exists'),
    ],
  ])('fails a job at once on %s, with its message as the reason', async (_n, error) => {
    const { handler, failures, runs } = recordingHandler(() => Promise.reject(error));
    const id = await enqueueKind(3);
    expect(await workerWith(handler, () => new Date(T0)).runOnce()).toBe(true);
    expect(runs).toEqual([1]);
    expect(failures).toEqual([{ id, reason: error.message, attempt: 1 }]);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 1, error: error.message });
  });

  it('gives up a job claimed more often than max_attempts without running it', async () => {
    const { handler, failures, runs } = recordingHandler(async () => {});
    const id = await enqueueKind(2);
    await app.db.kysely
      .updateTable('jobs')
      .set({ state: 'running', attempts: 2, lease_owner: 'dead', lease_expires_at: at(5) })
      .where('id', '=', id)
      .execute();
    expect(await workerWith(handler, () => new Date(T0 + 10)).runOnce()).toBe(true);
    expect(runs).toEqual([]);
    expect(failures).toEqual([{ id, reason: 'gave up after 2 attempts that did not finish', attempt: 3 }]);
    expect(await row(id)).toMatchObject({
      state: 'failed',
      attempts: 3,
      error: 'gave up after 2 attempts that did not finish',
    });
  });

  it('tells a running handler when its lease was taken, and then leaves the job to the new owner', async () => {
    let sawAbort = false;
    const { handler, failures } = recordingHandler(
      (job) =>
        new Promise<void>((_resolve, reject) => {
          job.signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(new ArchiveError('corrupt', 'would be permanent, but the lease is gone'));
          });
        }),
    );
    const id = await enqueueKind(3, new Date().toISOString());
    const worker = workerWith(handler, () => new Date(), 150);
    const running = worker.runOnce();
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Another worker that believes the lease ran out takes the job.
    const thief = await jobs.claim('thief', new Date(Date.now() + 3_600_000).toISOString(), at(99_000_000));
    expect(thief?.id).toBe(id);
    expect(await running).toBe(true);
    expect(sawAbort).toBe(true);
    expect(failures).toEqual([]);
    expect(await row(id)).toMatchObject({ state: 'running', lease_owner: 'thief', attempts: 2, error: null });
  });

  it('stops an attempt that runs past its time limit, retries it, and fails it for good after max_attempts', async () => {
    let clock = T0;
    const aborted: string[] = [];
    // Ignores its signal on the first attempt (the worker must not wait for it), honours it later.
    const { handler, failures, runs } = recordingHandler(
      (job) =>
        new Promise<void>((_resolve, reject) => {
          job.signal.addEventListener('abort', () => {
            aborted.push(String((job.signal.reason as Error).message));
            if (job.attempt > 1) reject(job.signal.reason as Error);
          });
        }),
    );
    const worker = workerWith(handler, () => new Date(clock), 30_000, 100);
    const id = await enqueueKind(2);
    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({ state: 'queued', attempts: 1, lease_owner: null });
    expect((await row(id)).error).toBe('the job did not finish within 0.1 seconds');
    clock += 10_000;
    expect(await worker.runOnce()).toBe(true);
    expect(runs).toEqual([1, 2]);
    expect(aborted).toEqual(['the job ran out of time', 'the job ran out of time']);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 2 });
    expect(failures).toEqual([{ id, reason: 'the job did not finish within 0.1 seconds', attempt: 2 }]);
  });

  it('fails a job whose payload cannot be read, instead of claiming it again forever', async () => {
    const { handler, failures, runs } = recordingHandler(async () => {});
    const id = await enqueueKind(3);
    const corrupt = app.db.kysely.updateTable('jobs').set({ payload: '{not json' }).where('id', '=', id);
    if (app.db.kind === 'postgres') {
      // PostgreSQL's payload column is json (migration 2026_12_02_000000_postgres_types): no
      // unreadable payload can be stored for a worker to meet.
      await expect(corrupt.execute()).rejects.toThrow(/invalid input syntax for type json/);
      expect(await row(id)).toMatchObject({ state: 'queued', payload: '{"x":1}' });
      return;
    }
    await corrupt.execute();
    const worker = workerWith(handler, () => new Date(T0 + 10));
    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 1, error: 'the job could not be read' });
    expect(await worker.runOnce()).toBe(false);
    expect(runs).toEqual([]);
    expect(failures).toEqual([]);
  });

  it('marks a job failed even when its handler cannot record the failure', async () => {
    const handler: JobHandler<unknown> = {
      run: () => Promise.reject(new ArchiveError('corrupt', 'the archive is damaged')),
      fail: () => Promise.reject(new Error('the database is away')),
    };
    const id = await enqueueKind(3);
    const worker = workerWith(handler, () => new Date(T0 + 10));
    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 1, error: 'the archive is damaged' });
    expect(await worker.runOnce()).toBe(false);
  });

  it('on stop, waits for the job in hand up to the deadline, then leaves it to its lease for another worker', async () => {
    let sawAbort = false;
    const { handler, failures } = recordingHandler(
      (job) =>
        new Promise<void>(() => {
          job.signal.addEventListener('abort', () => (sawAbort = true)); // and never ends
        }),
    );
    const id = await enqueueKind(3, new Date().toISOString());
    const worker = workerWith(handler, () => new Date(), 60_000);
    worker.start();
    await expect.poll(async () => (await row(id)).state).toBe('running');
    const started = Date.now();
    expect(await worker.stop(200)).toEqual({ abandoned: true });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(sawAbort).toBe(true);
    expect(failures).toEqual([]);
    const left = await row(id);
    expect(left).toMatchObject({ state: 'running', lease_owner: worker.owner, attempts: 1, error: null });
    // Once the lease has run out, the next worker takes the job over.
    const later = new Date(Date.parse(left.lease_expires_at!) + 1).toISOString();
    expect((await jobs.claim('next', later, at(99_000_000)))?.id).toBe(id);
  });

  it('on stop, lets a job that ends before the deadline finish', async () => {
    const { handler } = recordingHandler(() => new Promise((resolve) => setTimeout(resolve, 100)));
    const id = await enqueueKind(3, new Date().toISOString());
    const worker = workerWith(handler, () => new Date());
    worker.start();
    await expect.poll(async () => (await row(id)).state).toBe('running');
    expect(await worker.stop(10_000)).toEqual({ abandoned: false });
    expect(await row(id)).toMatchObject({ state: 'succeeded' });
  });

  it('runs what a job leaves for afterwards once it is recorded succeeded, before it claims another', async () => {
    const seen: string[] = [];
    let release: () => void = () => {};
    const handler: JobHandler<unknown> = {
      run: (job) =>
        Promise.resolve({
          afterwards: async () => {
            seen.push(`job ${job.id} afterwards: ${(await row(job.id)).state}`);
            await new Promise<void>((resolve) => (release = resolve));
            seen.push(`job ${job.id} afterwards done`);
          },
        }),
      fail: () => Promise.resolve(),
    };
    const first = await enqueueKind();
    const second = await enqueueKind();
    const worker = workerWith(handler, () => new Date(T0));
    expect(await worker.runOnce()).toBe(true);
    expect((await row(first)).state).toBe('succeeded');
    // The next claim waits for the first job's afterwards.
    const next = worker.runOnce();
    await expect.poll(() => seen.length).toBe(1);
    expect((await row(second)).state).toBe('queued');
    release();
    expect(await next).toBe(true);
    await expect.poll(() => seen.length).toBe(3);
    expect(seen).toEqual([
      `job ${first} afterwards: succeeded`,
      `job ${first} afterwards done`,
      `job ${second} afterwards: succeeded`,
    ]);
    release();
    expect(await worker.runOnce()).toBe(false);
    expect(seen.at(-1)).toBe(`job ${second} afterwards done`);
  });

  it('keeps a job succeeded, and goes on, when what it left for afterwards fails', async () => {
    const handler: JobHandler<unknown> = {
      run: () => Promise.resolve({ afterwards: () => Promise.reject(new Error('disk gone')) }),
      fail: () => Promise.resolve(),
    };
    const first = await enqueueKind();
    const second = await enqueueKind();
    const worker = workerWith(handler, () => new Date(T0));
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(false);
    expect((await row(first)).state).toBe('succeeded');
    expect((await row(second)).state).toBe('succeeded');
  });

  it('finishes a job that succeeds, once', async () => {
    const { handler, runs } = recordingHandler(async () => {});
    const id = await enqueueKind();
    const worker = workerWith(handler, () => new Date(T0));
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(false);
    expect(runs).toEqual([1]);
    expect(await row(id)).toMatchObject({ state: 'succeeded', attempts: 1, error: null, finished_at: at(0) });
  });
});
