/**
 * A claimed job's payload is checked against the schema its kind's handler declares: one that does
 * not match fails at once, naming the kind and the first field that is wrong, and its handler is
 * neither run nor told; one that matches runs. On the database of AERIE_TEST_DATABASE_URL (SQLite
 * by default).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BackupJobPayloadSchema } from '../../src/backups/backup.job.ts';
import type { JobPayloads } from '../../src/jobs/job-kinds.ts';
import type { NewJob } from '../../src/jobs/job.repository.ts';
import { Worker, type JobHandler, type JobHandlers } from '../../src/jobs/worker.ts';
import { RestoreJobPayloadSchema } from '../../src/restores/restore.job.ts';
import { ScheduleTaskPayloadSchema } from '../../src/schedules/schedule-task.job.ts';
import { systemClock } from '../../src/shared/time.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});
beforeEach(async () => {
  await app.db.kysely.deleteFrom('jobs').execute();
});

const row = (id: number) =>
  app.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Queues a job of `kind` with any payload at all, as a bug or an older version could. */
const enqueue = (kind: NewJob['kind'], payload: unknown) =>
  app.services.jobs.enqueue(
    { kind, payload: payload as never, batch: randomUUID() },
    new Date().toISOString(),
  );

/** A worker whose handlers hold the real schemas, and record what they are asked to do. */
function recordingWorker() {
  const seen: string[] = [];
  const recording = <P>(kind: string, payload: JobHandler<P>['payload']): JobHandler<P> => ({
    payload,
    run: () => {
      seen.push(`${kind} run`);
      return Promise.resolve();
    },
    fail: (_job, reason) => {
      seen.push(`${kind} failed: ${reason}`);
      return Promise.resolve();
    },
  });
  const handlers: JobHandlers = {
    'backup.create': recording<JobPayloads['backup.create']>('backup.create', BackupJobPayloadSchema),
    'backup.restore': recording<JobPayloads['backup.restore']>('backup.restore', RestoreJobPayloadSchema),
    'schedule.task': recording<JobPayloads['schedule.task']>('schedule.task', ScheduleTaskPayloadSchema),
  };
  const worker = new Worker({
    jobs: app.services.jobs,
    handlers,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    node: 'test',
    pollMs: 1000,
    leaseMs: 30_000,
    timeoutMs: 60_000,
  });
  return { worker, seen };
}

const goodBackup = { serverId: randomUUID(), backupId: randomUUID(), actorId: null, ip: '127.0.0.1' };
const goodRestore = { ...goodBackup, truncate: true };

describe('a job whose payload does not match its kind', () => {
  it.each([
    [
      'backup.create',
      { ...goodBackup, serverId: 42 },
      'the payload of a backup.create job is invalid at serverId: expected string',
    ],
    [
      'backup.restore',
      { ...goodRestore, truncate: undefined },
      'the payload of a backup.restore job is invalid at truncate: expected required property',
    ],
    [
      'backup.restore',
      { ...goodRestore, actorId: 7 },
      'the payload of a backup.restore job is invalid at actorId: expected union value',
    ],
    [
      'backup.create',
      ['not', 'an', 'object'],
      'the payload of a backup.create job is invalid: expected object',
    ],
  ] as const)(
    'fails at once (%s), naming the kind and the first bad field',
    async (kind, payload, reason) => {
      const { worker, seen } = recordingWorker();
      const id = await enqueue(kind, payload);
      expect(await worker.runOnce()).toBe(true);
      expect(await row(id)).toMatchObject({ state: 'failed', attempts: 1, error: reason });
      // Never claimed again, and its handler, which could not make sense of it, is not involved.
      expect(await worker.runOnce()).toBe(false);
      expect(seen).toEqual([]);
    },
  );

  it("fails so on the app's own worker too", async () => {
    const id = await enqueue('backup.create', { serverId: randomUUID(), backupId: randomUUID() });
    expect(await drainJobs(app)).toBe(1);
    expect(await row(id)).toMatchObject({
      state: 'failed',
      attempts: 1,
      error: 'the payload of a backup.create job is invalid at actorId: expected required property',
    });
  });
});

describe('a job whose payload matches its kind', () => {
  it('runs', async () => {
    const { worker, seen } = recordingWorker();
    const backup = await enqueue('backup.create', goodBackup);
    const restore = await enqueue('backup.restore', { ...goodRestore, extra: 'tolerated' });
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(true);
    expect(seen).toEqual(['backup.restore run', 'backup.create run']);
    for (const id of [backup, restore])
      expect(await row(id)).toMatchObject({ state: 'succeeded', error: null });
  });

  it("is archived by the app's own worker", async () => {
    const owner = await createUser(app);
    const { token } = await createApiKey(app, owner);
    const server = await createServer(app, owner);
    fs.writeFileSync(path.join(server.volume, 'level.dat'), 'level');
    const created = await app.http.inject({
      method: 'POST',
      url: `/api/client/servers/${server.identifier}/backups`,
      headers: bearer(token),
      payload: { name: 'checked' },
    });
    expect(created.statusCode, created.body).toBe(200);
    expect(await drainJobs(app)).toBe(1);
    const job = await app.db.kysely
      .selectFrom('jobs')
      .select(['state', 'error'])
      .where('kind', '=', 'backup.create')
      .executeTakeFirstOrThrow();
    expect(job).toEqual({ state: 'succeeded', error: null });
  });
});
