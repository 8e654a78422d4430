/**
 * Jobs that cannot reach the backup store or the database: tried again after growing, jittered
 * waits for the retry window (without counting against their attempts), then failed with a
 * reason that names what was unreachable, for how long and why. On the database of
 * AERIE_TEST_DATABASE_URL (SQLite by default).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withJobErrors } from '../../src/backups/job-errors.ts';
import { markDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { transactorFor } from '../../src/db/executor.ts';
import { JobRepository } from '../../src/jobs/job.repository.ts';
import type { RetryPolicy } from '../../src/jobs/retry-policy.ts';
import { Worker, type JobHandler, type JobHandlers } from '../../src/jobs/worker.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const MINUTE = 60_000;

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

const row = (id: number) =>
  app.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** What the S3 client raises when nothing listens at the store's address. */
function storeRefused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9000'), {
    code: 'ECONNREFUSED',
    $metadata: { attempts: 3, totalRetryDelay: 300 },
  });
}

function databaseGone(): Error {
  return markDatabaseUnavailable(Object.assign(new Error('terminating connection'), { code: '57P01' }));
}

/** A handler that fails with `failure()` while it returns an error, and records what it was told. */
function flakyHandler(failure: (attempt: number) => Error | null) {
  const failures: string[] = [];
  let runs = 0;
  const handler: JobHandler<unknown> = {
    run: (job) => {
      runs += 1;
      const error = failure(job.attempt);
      return error === null ? Promise.resolve() : Promise.reject(error);
    },
    fail: (_job, reason) => {
      failures.push(reason);
      return Promise.resolve();
    },
  };
  return { handler, failures, runs: () => runs };
}

function workerWith(
  handler: JobHandler<unknown>,
  clock: () => Date,
  retry: Partial<RetryPolicy>,
  repo = jobs,
) {
  // Its failures are told to the queue as the backup and restore handlers tell theirs.
  const handlers = { 'backup.restore': withJobErrors(handler) } as Partial<JobHandlers> as JobHandlers;
  return new Worker({
    jobs: repo,
    handlers,
    clock,
    logger: pino({ level: 'silent' }),
    node: 'test',
    pollMs: 10,
    leaseMs: 30_000,
    timeoutMs: 60_000,
    retry,
  });
}

const enqueue = () =>
  jobs.enqueue(
    { kind: 'backup.restore', payload: { x: 1 } as never, batch: randomUUID(), maxAttempts: 3 },
    new Date(T0).toISOString(),
  );

/** Runs the job each time it is due, moving the clock to its run_at, until it ends; the waits. */
async function runToTheEnd(worker: Worker, id: number, time: { now: number }): Promise<number[]> {
  const waits: number[] = [];
  for (let round = 0; round < 100; round++) {
    expect(await worker.runOnce()).toBe(true);
    const { state, run_at } = await row(id);
    if (state !== 'queued') return waits;
    const due = Date.parse(run_at);
    waits.push(due - time.now);
    time.now = due;
  }
  throw new Error('the job never ended');
}

describe('a job that cannot reach the backup store', () => {
  it('is tried again, more than its attempts allow, and succeeds once the store is back', async () => {
    const time = { now: T0 };
    // Down for seven tries (over two minutes with these waits), then back.
    const { handler, failures, runs } = flakyHandler((attempt) => (attempt <= 7 ? storeRefused() : null));
    const worker = workerWith(handler, () => new Date(time.now), { random: () => 1 });
    const id = await enqueue();

    expect(await worker.runOnce()).toBe(true);
    expect(await row(id)).toMatchObject({
      state: 'queued',
      attempts: 1,
      unreachable_retries: 1,
      error: 'the backup store could not be reached (ECONNREFUSED); the job will be tried again',
    });
    time.now = Date.parse((await row(id)).run_at);
    expect(time.now - T0).toBe(2000);
    // Then 4 s, 8 s… up to a minute (drawn at the top of each range here).
    const waits = await runToTheEnd(worker, id, time);
    expect(waits).toEqual([4000, 8000, 16_000, 32_000, 60_000, 60_000]);
    expect(await row(id)).toMatchObject({ state: 'succeeded', attempts: 8, unreachable_retries: 7 });
    expect(runs()).toBe(8);
    expect(failures).toEqual([]);
  });

  it('waits a jittered time: workers that lost the store together do not come back together', async () => {
    const draws = [0, 0.5, 0.99];
    const firstWaits: number[] = [];
    for (const draw of draws) {
      const { handler } = flakyHandler(() => storeRefused());
      const worker = workerWith(handler, () => new Date(T0), { random: () => draw });
      const id = await enqueue();
      await worker.runOnce();
      firstWaits.push(Date.parse((await row(id)).run_at) - T0);
    }
    expect(firstWaits).toEqual([1000, 1500, 1990]);
  });

  it('fails once the retry window has run out, naming the store, for how long, and why', async () => {
    const time = { now: T0 };
    const { handler, failures, runs } = flakyHandler(() => storeRefused());
    const worker = workerWith(handler, () => new Date(time.now), { windowMs: 15 * MINUTE });
    const id = await enqueue();
    const waits = await runToTheEnd(worker, id, time);

    const reason = 'the backup store was unreachable for 15 minutes (ECONNREFUSED)';
    expect(failures).toEqual([reason]);
    expect(await row(id)).toMatchObject({ state: 'failed', error: reason });
    // Tried over the whole window, the last try at its very end; never more than a minute apart.
    expect(time.now - T0).toBe(15 * MINUTE);
    expect(Math.max(...waits)).toBeLessThanOrEqual(MINUTE);
    expect(runs()).toBeGreaterThan(15);
    expect(runs()).toBeLessThan(40);
  });

  it('with a window of 0, fails at the first such try', async () => {
    const { handler, failures } = flakyHandler(() => storeRefused());
    const worker = workerWith(handler, () => new Date(T0), { windowMs: 0 });
    const id = await enqueue();
    await worker.runOnce();
    expect(failures).toEqual(['the backup store could not be reached (ECONNREFUSED)']);
    expect((await row(id)).state).toBe('failed');
  });
});

describe('a job that cannot reach the database', () => {
  it('is tried again while the window lasts, then fails naming the database', async () => {
    const time = { now: T0 };
    const { handler, failures } = flakyHandler(() => databaseGone());
    const worker = workerWith(handler, () => new Date(time.now), { windowMs: 5 * MINUTE });
    const id = await enqueue();
    await runToTheEnd(worker, id, time);
    expect(failures).toEqual(['the database was unreachable for 5 minutes (57P01)']);
    expect(await row(id)).toMatchObject({ state: 'failed' });
  });

  it('writes the outcome of a try once the database answers again', async () => {
    // The database is away just as the worker records that the try must be retried.
    let refusals = 2;
    const flaky = Object.create(jobs) as JobRepository;
    flaky.retryLater = (...args) => {
      if (refusals-- > 0) return Promise.reject(databaseGone());
      return jobs.retryLater(...args);
    };
    const { handler } = flakyHandler(() => storeRefused());
    const worker = workerWith(handler, () => new Date(T0), { firstDelayMs: 20 }, flaky);
    const id = await enqueue();
    await worker.runOnce();
    expect(refusals).toBe(-1);
    expect(await row(id)).toMatchObject({ state: 'queued', lease_owner: null, unreachable_retries: 1 });
  });
});

describe('other failures', () => {
  it('count against the attempts, whatever the unreachable tries before them', async () => {
    const time = { now: T0 };
    // Two tries cannot reach the store, then three fail for another reason.
    const { handler, failures, runs } = flakyHandler((attempt) =>
      attempt <= 2 ? storeRefused() : new Error('a bug'),
    );
    const worker = workerWith(handler, () => new Date(time.now), { random: () => 1 });
    const id = await enqueue();
    await runToTheEnd(worker, id, time);
    expect(runs()).toBe(5);
    expect(failures).toEqual(['an internal error occurred; the server log has the details']);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 5, unreachable_retries: 2 });
  });
});
