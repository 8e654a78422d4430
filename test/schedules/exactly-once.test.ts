/**
 * Each due time of a schedule starts exactly one run, however many processes tick at once: on
 * SQLite, PostgreSQL and MariaDB, with several runtimes on one database ticking together (their
 * own connections, a clock moved by hand), and with several real `aerie worker` processes ticking
 * every second on the same due schedules.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScheduleRunRepository } from '../../src/schedules/schedule-run.repository.ts';
import { spawnAerie, type AerieProcess } from '../support/aerie-process.ts';
import { ALL_DIALECT_CASES, scratchDatabase } from '../support/dialects.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { freePort, until } from '../support/wait.ts';
import {
  backupTask,
  scheduleBody,
  scheduleOf,
  schedulesClient,
  taskJobs,
  taskOf,
} from './schedules-support.ts';

/** A database for several apps or processes at once, and how to drop it. */
async function sharedDatabase(dialect: (typeof ALL_DIALECT_CASES)[number]) {
  if (dialect.kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-schedules-'));
    return {
      url: `sqlite:${path.join(dir, 'aerie.db')}`,
      drop: () => Promise.resolve(fs.rmSync(dir, { recursive: true, force: true })),
    };
  }
  return scratchDatabase({ kind: dialect.kind, url: dialect.url });
}

const RUNTIMES = 4;
const SCHEDULES = 8;

/**
 * RUNTIMES test apps on one scratch database of the dialect's server, all on `clock`: started
 * before the block's tests, closed (and the database dropped) after them.
 */
function runtimesOnOneDatabase(dialect: (typeof ALL_DIALECT_CASES)[number], clock: ManualClock): TestApp[] {
  let database: Awaited<ReturnType<typeof sharedDatabase>> | undefined;
  const apps: TestApp[] = [];
  beforeAll(async () => {
    database = await sharedDatabase(dialect);
    for (let i = 0; i < RUNTIMES; i++)
      apps.push(await startTestApp({ databaseUrl: database.url, clock: clock.clock }));
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
  });
  return apps;
}

describe.each(ALL_DIALECT_CASES)('exactly once on $kind', (dialect) => {
  describe.runIf(dialect.available)('claims of one due time read by every runtime', () => {
    const clock = new ManualClock('2027-01-10T12:00:00.000Z');
    const apps = runtimesOnOneDatabase(dialect, clock);

    it('lets one claim win, whatever the order the others come in', async () => {
      const [first] = apps;
      const owner = await createUser(first!);
      const server = await createServer(first!, owner);
      const { token } = await createApiKey(first!, owner);
      const api = schedulesClient(first!, token, server.identifier);
      const { id } = scheduleOf(await api.create(scheduleBody({ minute: '*', hour: '*' })));
      clock.set('2027-01-10T12:01:00.000Z');
      const now = clock.clock().toISOString();
      // Every runtime has read the schedule as due (the race a tick runs into) before any claims.
      const repositories = apps.map((app) => new ScheduleRunRepository(app.db.kysely));
      const read = await Promise.all(repositories.map((runs) => runs.due(now, 100)));
      for (const due of read) expect(due.map((d) => d.id)).toContain(id);
      const dueAt = read[0]!.find((d) => d.id === id)!.next_run_at!;
      const claim = (i: number) =>
        apps[i]!.db.kysely.transaction().execute((trx) =>
          repositories[i]!.claimDue(id, dueAt, now, '2027-01-10T12:02:00.000Z', trx),
        );
      // SQLite writes one transaction at a time (and one thread must not wait on another's lock):
      // in turn; the server engines: at once.
      const won =
        dialect.kind === 'sqlite'
          ? await apps.reduce<Promise<boolean[]>>(
              async (all, _, i) => [...(await all), await claim(i)],
              Promise.resolve([]),
            )
          : await Promise.all(apps.map((_, i) => claim(i)));
      expect(won.filter(Boolean)).toHaveLength(1);
      expect((await repositories[0]!.due(now, 100)).map((d) => d.id)).not.toContain(id);
    });
  });

  // One process holds one SQLite connection, so runtimes sharing a thread cannot race on SQLite
  // (one would wait for a lock the other cannot release): processes race there, below.
  describe.runIf(dialect.available && dialect.kind !== 'sqlite')('runtimes ticking together', () => {
    const clock = new ManualClock('2027-01-10T12:00:00.000Z');
    const apps = runtimesOnOneDatabase(dialect, clock);

    it('starts each due time of each schedule once, every minute for five minutes', async () => {
      const [first] = apps;
      const owner = await createUser(first!);
      const server = await createServer(first!, owner);
      const { token } = await createApiKey(first!, owner);
      const api = schedulesClient(first!, token, server.identifier);
      const ids: number[] = [];
      for (let i = 0; i < SCHEDULES; i++) {
        const schedule = scheduleOf(
          await api.create(scheduleBody({ name: `s${i}`, minute: '*', hour: '*' })),
        );
        taskOf(await api.createTask(schedule.id, backupTask()));
        ids.push(schedule.id);
      }
      // Forty backups in all: past the default limit of 10.
      await first!.db.kysely.updateTable('servers').set({ backup_limit: 100 }).execute();
      const started: number[] = [];
      for (let minute = 1; minute <= 5; minute++) {
        clock.set(`2027-01-10T12:0${minute}:0${minute}.000Z`);
        // Every runtime ticks three times, all at once.
        const reports = await Promise.all(
          apps.flatMap((app) => [1, 2, 3].map(() => app.services.scheduleRuns.tick())),
        );
        const thisMinute = reports.flatMap((report) => report.started);
        expect([...thisMinute].sort((a, b) => a - b)).toEqual(ids);
        started.push(...thisMinute);
        await drainJobs(first!);
      }
      expect(started).toHaveLength(SCHEDULES * 5);
      for (const id of ids) {
        const jobs = await taskJobs(first!, id);
        expect(jobs.map((j) => j.state)).toEqual([
          'succeeded',
          'succeeded',
          'succeeded',
          'succeeded',
          'succeeded',
        ]);
        expect(scheduleOf(await api.get(id))).toMatchObject({
          is_processing: false,
          last_run_at: '2027-01-10T12:05:05+00:00',
          next_run_at: '2027-01-10T12:06:00+00:00',
        });
      }
      const backups = await first!.db.kysely
        .selectFrom('backups')
        .select('schedule_id')
        .where('server_id', '=', server.id)
        .execute();
      expect(backups).toHaveLength(SCHEDULES * 5);
    }, 120_000);
  });

  describe.runIf(dialect.available)('aerie processes ticking together', () => {
    let database: Awaited<ReturnType<typeof sharedDatabase>>;
    let app: TestApp;
    const workers: AerieProcess[] = [];
    const logs = () => workers.map((w, i) => `--- process ${i}\n${w.output().slice(-3000)}`).join('\n');
    beforeAll(async () => {
      database = await sharedDatabase(dialect);
      app = await startTestApp({ databaseUrl: database.url });
    });
    afterAll(async () => {
      for (const worker of workers) {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
      await app?.close();
      await database?.drop();
    });

    it('runs each schedule that three processes find due at once exactly once', async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const api = schedulesClient(app, token, server.identifier);
      // Once a year: none comes due by itself while the test runs.
      const ids: number[] = [];
      for (let i = 0; i < 4; i++) {
        const schedule = scheduleOf(
          await api.create(
            scheduleBody({ name: `yearly ${i}`, minute: '0', hour: '0', day_of_month: '1', month: '1' }),
          ),
        );
        taskOf(await api.createTask(schedule.id, backupTask()));
        ids.push(schedule.id);
      }
      // Two workers and a `serve` (whose default role runs jobs, and so ticks, too).
      const env = { AERIE_SCHEDULE_TICK_SECONDS: '1', LOG_LEVEL: 'warn' };
      for (let i = 0; i < 2; i++) workers.push(spawnAerie(app, ['worker', '--node', 'local'], env));
      const port = await freePort();
      workers.push(spawnAerie(app, ['serve', '--host', '127.0.0.1', '--port', String(port)], env));
      // Let them start (and tick a few times on nothing due), then make every schedule due.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      await app.db.kysely
        .updateTable('schedules')
        .set({ next_run_at: new Date(Date.now() - 60_000).toISOString() })
        .where('id', 'in', ids)
        .execute();
      const backups = () =>
        app.db.kysely
          .selectFrom('backups')
          .select(['schedule_id', 'is_successful'])
          .where('server_id', '=', server.id)
          .execute();
      await until(async () => (await backups()).filter((b) => b.is_successful === 1).length >= ids.length, {
        what: 'each schedule to make its backup',
        timeoutMs: 60_000,
        context: logs,
      });
      // Three more ticks of each worker: nothing more starts.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      for (const id of ids) {
        expect(
          (await taskJobs(app, id)).map((j) => j.state),
          logs(),
        ).toEqual(['succeeded']);
        const schedule = scheduleOf(await api.get(id));
        expect(schedule.is_processing).toBe(false);
        expect(schedule.next_run_at?.startsWith(`${new Date().getUTCFullYear() + 1}-01-01T`)).toBe(true);
      }
      expect((await backups()).map((b) => b.schedule_id).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(ids);
      for (const worker of workers) expect(worker.child.exitCode, logs()).toBeNull();
    }, 120_000);
  });
});
