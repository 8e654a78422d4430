import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRepository } from '../../src/activity/activity.repository.ts';
import { loadConfig } from '../../src/config.ts';
import { LeaseRepository } from '../../src/ops/lease.repository.ts';
import { RetentionRepository } from '../../src/ops/retention.repository.ts';
import { RetentionService } from '../../src/ops/retention.service.ts';
import { openRuntime, type Runtime } from '../../src/runtime.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { SERVER_DIALECT_CASES, scratchDatabase, type ScratchDatabase } from '../support/dialects.ts';
import { createUser, startTestApp, type TestApp } from '../support/harness.ts';

const DAY = 24 * 3600 * 1000;
const NOW = new Date('2026-11-27T12:00:00.000Z');
const clock = () => NOW;
const ago = (days: number) => toStoredTime(new Date(NOW.getTime() - days * DAY));

const CASES = [{ kind: 'sqlite' as const, url: '', available: true }, ...SERVER_DIALECT_CASES];

function retentionOn(
  runtime: Pick<Runtime, 'db'>,
  options: { days?: number; batchSize?: number; pauseMs?: number } = {},
) {
  const { db } = runtime;
  return new RetentionService({
    activity: new ActivityRepository(db.kysely, db.kind),
    retention: new RetentionRepository(db.kysely),
    leases: new LeaseRepository(db.kysely),
    clock,
    logger: pino({ level: 'silent' }),
    activityRetentionDays: options.days ?? 90,
    batchSize: options.batchSize ?? 100,
    pauseMs: options.pauseMs ?? 1,
  });
}

for (const dialect of CASES)
  describe.runIf(dialect.available)(`retention on ${dialect.kind}`, () => {
    let scratch: ScratchDatabase | undefined;
    let app: TestApp;
    let activity: ActivityRepository;
    let userId: string;
    let serverSubject: string;

    beforeAll(async () => {
      if (dialect.kind !== 'sqlite') scratch = await scratchDatabase(dialect);
      app = await startTestApp({ ...(scratch ? { databaseUrl: scratch.url } : {}), clock });
      activity = new ActivityRepository(app.db.kysely, app.db.kind);
      userId = (await createUser(app)).id;
      serverSubject = randomUUID();
    }, 60_000);

    afterAll(async () => {
      await app?.close();
      await scratch?.drop();
    });

    async function addActivity(count: number, daysAgo: number): Promise<void> {
      for (let i = 0; i < count; i++)
        await activity.insert({
          batch: randomUUID(),
          event: 'user:api-key.create',
          ip: '10.0.0.1',
          actorId: userId,
          apiKeyId: null,
          properties: {},
          timestamp: ago(daysAgo),
          subjects: [
            { type: 'user', id: userId },
            { type: 'server', id: serverSubject },
          ],
        });
    }

    async function counts() {
      const k = app.db.kysely;
      const n = async (q: { executeTakeFirstOrThrow(): Promise<{ n: unknown }> }) =>
        Number((await q.executeTakeFirstOrThrow()).n);
      return {
        logs: await n(k.selectFrom('activity_logs').select((eb) => eb.fn.countAll().as('n'))),
        subjects: await n(k.selectFrom('activity_log_subjects').select((eb) => eb.fn.countAll().as('n'))),
        jobs: await n(k.selectFrom('jobs').select((eb) => eb.fn.countAll().as('n'))),
        sessions: await n(k.selectFrom('sessions').select((eb) => eb.fn.countAll().as('n'))),
      };
    }

    /** The feeds' kept totals still count what they hold. */
    async function expectFeedCountsToMatch(): Promise<void> {
      for (const subject of [
        { type: 'user' as const, id: userId },
        { type: 'server' as const, id: serverSubject },
      ]) {
        const feed = { subject, viewer: { userId, admin: true } };
        const rows = await app.db.kysely
          .selectFrom('activity_log_subjects')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('subject_type', '=', subject.type)
          .where('subject_id', '=', subject.id)
          .executeTakeFirstOrThrow();
        expect(await activity.count(feed)).toBe(Number(rows.n));
      }
    }

    async function addJob(
      state: 'queued' | 'running' | 'succeeded' | 'failed',
      finishedDaysAgo: number | null,
    ) {
      await app.db.kysely
        .insertInto('jobs')
        .values({
          kind: 'backup.create',
          payload: '{}',
          state,
          batch: randomUUID(),
          attempts: 1,
          max_attempts: 3,
          run_at: ago(30),
          lease_owner: null,
          lease_expires_at: null,
          error: null,
          created_at: ago(30),
          updated_at: ago(30),
          finished_at: finishedDaysAgo === null ? null : ago(finishedDaysAgo),
        })
        .execute();
    }

    async function addSession(expiresDaysAgo: number) {
      await app.db.kysely
        .insertInto('sessions')
        .values({
          id: randomUUID().replaceAll('-', '') + randomUUID().replaceAll('-', ''),
          user_id: userId,
          ip: '10.0.0.1',
          user_agent: 'test',
          created_at: ago(expiresDaysAgo + 1),
          expires_at: ago(expiresDaysAgo),
        })
        .execute();
    }

    it('deletes old activity with its subjects and feed counts, old finished jobs and expired sessions, in batches', async () => {
      const before = await counts();
      await addActivity(250, 91);
      await addActivity(5, 89);
      await addJob('succeeded', 8);
      await addJob('failed', 30);
      await addJob('succeeded', 6);
      await addJob('queued', null);
      await addJob('running', null);
      await addSession(1);
      await addSession(0.001);
      await addSession(-1);

      const report = await retentionOn(app, { batchSize: 100 }).runOnce();

      // 250 old entries in batches of 100: three batches; then one each for jobs and sessions.
      expect(report).toMatchObject({ activity: 250, jobs: 2, sessions: 2, batches: 5 });
      const after = await counts();
      expect(after.logs).toBe(before.logs + 5);
      expect(after.subjects).toBe(before.subjects + 10);
      expect(after.jobs).toBe(before.jobs + 3);
      expect(after.sessions).toBe(before.sessions + 1);
      const left = await app.db.kysely
        .selectFrom('activity_logs')
        .select('timestamp')
        .where('actor_id', '=', userId)
        .execute();
      expect(left.every((row) => row.timestamp > ago(90))).toBe(true);
      await expectFeedCountsToMatch();
      // A second run finds nothing left to do.
      expect(await retentionOn(app).runOnce()).toMatchObject({
        activity: 0,
        jobs: 0,
        sessions: 0,
        batches: 3,
      });
    }, 120_000);

    it('keeps all activity with a retention of 0 days', async () => {
      await addActivity(3, 400);
      const before = await counts();
      expect(await retentionOn(app, { days: 0 }).runOnce()).toMatchObject({ activity: 0 });
      expect((await counts()).logs).toBe(before.logs);
      await retentionOn(app).runOnce();
      expect((await counts()).logs).toBe(before.logs - 3);
    }, 60_000);

    it('lets other writers in between its batches, and never makes them fail', async () => {
      await addActivity(300, 100);
      const service = retentionOn(app, { batchSize: 50, pauseMs: 40 });
      let done = false;
      const run = service.runOnce().finally(() => (done = true));
      // New entries written while it runs (the API's writes, touching the same feeds' counts)
      // get through between batches, and none dies in a deadlock.
      let written = 0;
      let writtenDuringRun = 0;
      while (!done || written < 3) {
        await addActivity(1, 0);
        written += 1;
        if (!done) writtenDuringRun += 1;
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
      expect(await run).toMatchObject({ activity: 300, batches: 9 });
      expect(writtenDuringRun).toBeGreaterThanOrEqual(2);
      await expectFeedCountsToMatch();
    }, 60_000);

    it('is harmless when several processes run it at once: one does the work, the others skip', async () => {
      await addActivity(400, 120);
      await addJob('succeeded', 10);
      const config = loadConfig({
        AERIE_DATA_DIR: app.dataDir,
        DATABASE_URL: scratch?.url ?? app.config.database.url,
        LOG_LEVEL: 'silent',
      });
      // Separate runtimes: separate connections (pools), as separate processes would have. They
      // are opened one after another: on SQLite, a migration holds the file's write lock, and a
      // second connection in this same thread would wait for it synchronously, never letting
      // the first finish (separate processes wait for each other instead).
      const first = await openRuntime(config);
      const second = await openRuntime(config);
      const others = [first, second, await openRuntime(config)] as const;
      try {
        const before = await counts();
        const reports = await Promise.all(
          [app, ...others].map((runtime) => retentionOn(runtime, { batchSize: 50, pauseMs: 5 }).runOnce()),
        );
        const ran = reports.filter((report) => report !== null);
        expect(ran.length).toBeGreaterThanOrEqual(1);
        const deleted = ran.reduce((sum, report) => sum + report.activity, 0);
        expect(deleted).toBe(400);
        const after = await counts();
        expect(after.logs).toBe(before.logs - 400);
        expect(after.subjects).toBe(before.subjects - 800);
        await expectFeedCountsToMatch();
        // While one holds the lease, another skips at once.
        const leases = new LeaseRepository(app.db.kysely);
        expect(
          await leases.take(
            'retention',
            'someone-else',
            ago(0),
            toStoredTime(new Date(NOW.getTime() + 60_000)),
          ),
        ).toBe(true);
        expect(await retentionOn(others[0]).runOnce()).toBeNull();
        await leases.release('retention', 'someone-else', ago(0));
        expect(await retentionOn(others[0]).runOnce()).not.toBeNull();
      } finally {
        await Promise.all(others.map((runtime) => runtime.close()));
      }
    }, 120_000);
  });
