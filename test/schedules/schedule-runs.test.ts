/**
 * How schedules run, on the suite's database, with a clock moved by hand: the tick starts a due
 * schedule once and moves its next time past now (so a schedule missed during downtime runs
 * once); tasks run in order, each after its offset, as queued jobs; a failed task stops the run
 * unless it may fail; `only_when_online`; a run whose worker died, whose job failed for good, or
 * that was left processing is ended; and an active `* * * * *` schedule runs by itself, by the
 * ticker and a worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScheduleRunRepository } from '../../src/schedules/schedule-run.repository.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { until } from '../support/wait.ts';
import {
  backupTask,
  scheduleBody,
  scheduleOf,
  schedulesClient,
  serverEvents,
  taskJobs,
  taskOf,
} from './schedules-support.ts';

const START = '2027-01-10T12:00:00.000Z';

describe('schedule runs', () => {
  let app: TestApp;
  const clock = new ManualClock(START);
  beforeAll(async () => {
    app = await startTestApp({ clock: clock.clock });
  });
  afterAll(async () => app.close());

  async function setup(
    body: Record<string, unknown> = {},
    tasks: Record<string, unknown>[] = [backupTask()],
  ) {
    clock.set(START);
    // The earlier tests' schedules stay out of the way of this one's ticks.
    await app.db.kysely.updateTable('schedules').set({ is_active: 0 }).execute();
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const { token } = await createApiKey(app, owner);
    const api = schedulesClient(app, token, server.identifier);
    const schedule = scheduleOf(await api.create(scheduleBody(body)));
    const created = [];
    for (const task of tasks) created.push(taskOf(await api.createTask(schedule.id, task)));
    const read = async () => scheduleOf(await api.get(schedule.id));
    const backups = () =>
      app.db.kysely
        .selectFrom('backups')
        .select(['id', 'is_successful', 'schedule_id'])
        .where('server_id', '=', server.id)
        .execute();
    const setStatus = (status: 'suspended' | null) =>
      app.db.kysely.updateTable('servers').set({ status }).where('id', '=', server.id).execute();
    return { owner, server, api, schedule, tasks: created, read, backups, setStatus };
  }

  const tick = () => app.services.scheduleRuns.tick();

  it('starts a due schedule at one tick, once; its next time is the first after now', async () => {
    const { schedule, read, backups } = await setup({ minute: '0', hour: '3' });
    expect(schedule.next_run_at).toBe('2027-01-11T03:00:00+00:00');
    expect((await tick()).started).not.toContain(schedule.id);
    clock.set('2027-01-11T03:00:05.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    const running = await read();
    expect(running).toMatchObject({
      is_processing: true,
      last_run_at: '2027-01-11T03:00:05+00:00',
      next_run_at: '2027-01-12T03:00:00+00:00',
    });
    expect(running.relationships.tasks.data[0]?.attributes.is_queued).toBe(true);
    expect((await tick()).started).toEqual([]);
    await drainJobs(app);
    const done = await read();
    expect(done.is_processing).toBe(false);
    expect(done.relationships.tasks.data[0]?.attributes.is_queued).toBe(false);
    expect(await backups()).toEqual([
      expect.objectContaining({ is_successful: 1, schedule_id: schedule.id }),
    ]);
    expect((await tick()).started).toEqual([]);
    expect(await taskJobs(app, schedule.id)).toHaveLength(1);
  });

  it('runs a schedule missed while Aerie was down once, not once per missed time', async () => {
    const { schedule, read } = await setup({ minute: '*/5', hour: '*' });
    expect(schedule.next_run_at).toBe('2027-01-10T12:05:00+00:00');
    // Three hours without a tick: 36 times missed.
    clock.set('2027-01-10T15:02:30.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    expect((await read()).next_run_at).toBe('2027-01-10T15:05:00+00:00');
    await drainJobs(app);
    expect((await tick()).started).toEqual([]);
    expect(await taskJobs(app, schedule.id)).toHaveLength(1);
    clock.set('2027-01-10T15:05:00.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    await drainJobs(app);
  });

  it('runs the tasks in sequence order, each after its offset, queued meanwhile', async () => {
    const { schedule, read, backups, api } = await setup({ minute: '0', hour: '3' }, [
      backupTask({ time_offset: 60, payload: 'second' }),
      backupTask({ time_offset: 30, payload: 'first', sequence_id: 1 }),
    ]);
    const queued = async () =>
      (await read()).relationships.tasks.data.map((t) => [t.attributes.payload, t.attributes.is_queued]);
    clock.set('2027-01-11T03:00:00.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    expect(await queued()).toEqual([
      ['first', true],
      ['second', false],
    ]);
    // The first task waits 30 s after the start: no worker waits with it.
    expect(await drainJobs(app)).toBe(0);
    clock.advance(30_000);
    await drainJobs(app);
    expect(await queued()).toEqual([
      ['first', false],
      ['second', true],
    ]);
    expect(await backups()).toHaveLength(1);
    clock.advance(59_000);
    expect(await drainJobs(app)).toBe(0);
    clock.advance(1_000);
    await drainJobs(app);
    expect(await backups()).toHaveLength(2);
    expect(await queued()).toEqual([
      ['first', false],
      ['second', false],
    ]);
    expect((await read()).is_processing).toBe(false);
    const jobs = await taskJobs(app, schedule.id);
    expect(jobs.map((j) => [j.run_at, j.state])).toEqual([
      ['2027-01-11T03:00:30.000Z', 'succeeded'],
      ['2027-01-11T03:01:30.000Z', 'succeeded'],
    ]);
    // Both runs of the tasks were this schedule's automatic backups.
    expect((await api.get(schedule.id)).statusCode).toBe(200);
  });

  it('stops the run at a failed task, unless the task may fail', async () => {
    const { schedule, read, backups, setStatus, server } = await setup({ is_active: true }, [
      backupTask(),
      backupTask(),
    ]);
    // The server is busy by the time the first task runs: the backup is refused.
    clock.set('2027-01-11T03:00:00.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    await setStatus('suspended');
    await drainJobs(app);
    await setStatus(null);
    await drainJobs(app);
    const after = await read();
    expect(after.is_processing).toBe(false);
    expect(after.relationships.tasks.data.map((t) => t.attributes.is_queued)).toEqual([false, false]);
    expect(await backups()).toEqual([]);
    expect(await taskJobs(app, schedule.id)).toHaveLength(1);
    const failures = (await serverEvents(app, server.id)).filter((e) => e.event === 'server:backup.fail');
    expect(failures.map((e) => e.properties.schedule_name)).toEqual([schedule.name]);
  });

  it('goes on after a failed task whose continue_on_failure is set', async () => {
    const { schedule, read, backups, setStatus } = await setup({}, [
      backupTask({ continue_on_failure: true }),
      backupTask({ time_offset: 10 }),
    ]);
    clock.set('2027-01-11T03:00:00.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    await setStatus('suspended');
    await drainJobs(app);
    const between = await read();
    expect(between.is_processing).toBe(true);
    expect(between.relationships.tasks.data.map((t) => t.attributes.is_queued)).toEqual([false, true]);
    await setStatus(null);
    clock.advance(10_000);
    await drainJobs(app);
    expect(await backups()).toEqual([expect.objectContaining({ is_successful: 1 })]);
    expect((await read()).is_processing).toBe(false);
  });

  it('skips a run of an only_when_online schedule whose server is busy as it starts; others fail their task', async () => {
    for (const onlyWhenOnline of [true, false]) {
      const { schedule, read, backups, setStatus, server, api } = await setup(
        { only_when_online: onlyWhenOnline },
        [backupTask({ continue_on_failure: true }), backupTask({ time_offset: 10 })],
      );
      expect((await api.execute(schedule.id)).statusCode).toBe(202);
      await setStatus('suspended');
      await drainJobs(app);
      await setStatus(null);
      clock.advance(10_000);
      await drainJobs(app);
      expect((await read()).is_processing).toBe(false);
      const failures = (await serverEvents(app, server.id)).filter((e) => e.event === 'server:backup.fail');
      // Skipped: no task ran, none failed. Not skipped: the first failed, the second (the server
      // idle again) made its backup.
      expect(failures).toHaveLength(onlyWhenOnline ? 0 : 1);
      expect(await backups()).toHaveLength(onlyWhenOnline ? 0 : 1);
    }
  });

  it("leaves a busy server's schedules due, and runs them once when it is idle again", async () => {
    const { schedule, setStatus, read } = await setup({ minute: '*', hour: '*' });
    await setStatus('suspended');
    clock.set('2027-01-10T12:30:00.000Z');
    expect((await tick()).started).toEqual([]);
    expect((await read()).next_run_at).toBe('2027-01-10T12:01:00+00:00');
    await setStatus(null);
    expect((await tick()).started).toEqual([schedule.id]);
    expect((await read()).next_run_at).toBe('2027-01-10T12:31:00+00:00');
    await drainJobs(app);
  });

  it('moves the next time of a due schedule without tasks on, running nothing', async () => {
    const { schedule, read } = await setup({ minute: '0', hour: '3' }, []);
    clock.set('2027-01-11T03:00:00.000Z');
    const report = await tick();
    expect(report.skipped).toEqual([schedule.id]);
    expect(await read()).toMatchObject({
      is_processing: false,
      last_run_at: null,
      next_run_at: '2027-01-12T03:00:00+00:00',
    });
  });

  it('does not start an inactive schedule; turning one off ends its run', async () => {
    const inactive = await setup({ is_active: false, minute: '*', hour: '*' });
    clock.set('2027-01-10T12:05:00.000Z');
    expect((await tick()).started).not.toContain(inactive.schedule.id);

    const { schedule, read, backups, api } = await setup({ minute: '*', hour: '*' }, [
      backupTask({ time_offset: 60 }),
    ]);
    clock.set('2027-01-10T12:01:00.000Z');
    expect((await tick()).started).toEqual([schedule.id]);
    expect((await read()).is_processing).toBe(true);
    scheduleOf(await api.update(schedule.id, scheduleBody({ is_active: false, minute: '*', hour: '*' })));
    const stopped = await read();
    expect(stopped.is_processing).toBe(false);
    expect(stopped.relationships.tasks.data[0]?.attributes.is_queued).toBe(false);
    clock.advance(60_000);
    await drainJobs(app);
    // The run's job found its run over, and did nothing.
    expect(await backups()).toEqual([]);
    expect((await taskJobs(app, schedule.id)).map((j) => j.state)).toEqual(['succeeded']);
  });

  it('ends the run when its schedule or its task is deleted meanwhile', async () => {
    const a = await setup({}, [backupTask({ time_offset: 5 })]);
    expect((await a.api.execute(a.schedule.id)).statusCode).toBe(202);
    expect((await a.api.deleteTask(a.schedule.id, a.tasks[0]!.id)).statusCode).toBe(204);
    clock.advance(0);
    await drainJobs(app);
    expect((await a.read()).is_processing).toBe(false);
    expect(await a.backups()).toEqual([]);

    const b = await setup({}, [backupTask()]);
    expect((await b.api.execute(b.schedule.id)).statusCode).toBe(202);
    expect((await b.api.delete(b.schedule.id)).statusCode).toBe(204);
    await drainJobs(app);
    expect(await b.backups()).toEqual([]);
    expect((await taskJobs(app, b.schedule.id)).map((j) => j.state)).toEqual(['succeeded']);
  });
});

describe('runs whose worker died', () => {
  let app: TestApp;
  const clock = new ManualClock(START);
  beforeAll(async () => {
    app = await startTestApp({ clock: clock.clock, env: { AERIE_JOB_LEASE_SECONDS: '30' } });
  });
  afterAll(async () => app.close());

  async function started(tasks = [backupTask(), backupTask()]) {
    clock.set(START);
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const { token } = await createApiKey(app, owner);
    const api = schedulesClient(app, token, server.identifier);
    const schedule = scheduleOf(await api.create(scheduleBody({ is_active: false })));
    for (const task of tasks) taskOf(await api.createTask(schedule.id, task));
    expect((await api.execute(schedule.id)).statusCode).toBe(202);
    const read = async () => scheduleOf(await api.get(schedule.id));
    const backups = async () =>
      (await app.db.kysely.selectFrom('backups').select('id').where('server_id', '=', server.id).execute())
        .length;
    return { schedule, read, backups };
  }

  /** A worker takes the job and dies with it: its lease runs out unrenewed. */
  async function dieWithJob(): Promise<number> {
    const now = clock.clock().toISOString();
    const job = await app.services.jobs.claim(
      'dead-worker',
      now,
      new Date(clock.clock().getTime() + 30_000).toISOString(),
    );
    if (job === undefined) throw new Error('no job to take');
    clock.advance(31_000);
    return job.id;
  }

  it('carries on a run whose worker died before its task started', async () => {
    const { read, backups } = await started();
    await dieWithJob();
    await drainJobs(app);
    expect(await backups()).toBe(2);
    expect((await read()).is_processing).toBe(false);
  });

  it('does not do a task twice when its worker died after starting it: the task counts as failed', async () => {
    const { schedule, read, backups } = await started([backupTask(), backupTask()]);
    const job = await dieWithJob();
    // The dead worker had started the task (and made its backup) before it died.
    const [first] = (await read()).relationships.tasks.data;
    const runs = new ScheduleRunRepository(app.db.kysely);
    expect(await runs.startTask(schedule.id, first!.attributes.id, job)).toBe(true);
    await drainJobs(app);
    const after = await read();
    expect(after.is_processing).toBe(false);
    expect(after.relationships.tasks.data.map((t) => t.attributes.is_queued)).toEqual([false, false]);
    // No backup made by the second try; the second task did not run (the first did not succeed).
    expect(await backups()).toBe(0);
  });

  it('ends the run when its job fails for good', async () => {
    const { schedule, read } = await started();
    const job = await dieWithJob();
    // Every attempt used up: the next claim gives the job up and tells its handler.
    await app.db.kysely.updateTable('jobs').set({ attempts: 3 }).where('id', '=', job).execute();
    await drainJobs(app);
    expect((await read()).is_processing).toBe(false);
    expect((await taskJobs(app, schedule.id)).map((j) => j.state)).toEqual(['failed']);
  });

  it('ends runs left processing with no job to carry them, and no other', async () => {
    const stuck = await started();
    const live = await started();
    // The stuck run's job ended without ending the run (its handler could not write).
    const [job] = await taskJobs(app, stuck.schedule.id);
    await app.db.kysely.updateTable('jobs').set({ state: 'failed' }).where('id', '=', job!.id).execute();
    expect(await app.services.scheduleRuns.recoverStuck()).toBe(1);
    expect((await stuck.read()).is_processing).toBe(false);
    expect((await stuck.read()).relationships.tasks.data.map((t) => t.attributes.is_queued)).toEqual([
      false,
      false,
    ]);
    expect((await live.read()).is_processing).toBe(true);
    expect(await app.services.scheduleRuns.recoverStuck()).toBe(0);
    await drainJobs(app);
    expect((await live.read()).is_processing).toBe(false);
    expect(await live.backups()).toBe(2);
  });
});

describe('the ticker', () => {
  let app: TestApp;
  const clock = new ManualClock(START);
  beforeAll(async () => {
    app = await startTestApp({
      clock: clock.clock,
      env: { AERIE_SCHEDULE_TICK_SECONDS: '1', AERIE_WORKER_POLL_MS: '50' },
    });
  });
  afterAll(async () => app.close());

  it('runs an active * * * * * schedule by itself, with a worker beside it', async () => {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const { token } = await createApiKey(app, owner);
    const api = schedulesClient(app, token, server.identifier);
    const schedule = scheduleOf(await api.create(scheduleBody({ minute: '*', hour: '*', is_active: true })));
    taskOf(await api.createTask(schedule.id));
    expect(schedule.next_run_at).toBe('2027-01-10T12:01:00+00:00');
    const worker = app.services.createWorker('ticker-test');
    app.services.scheduleTicker.start();
    worker.start();
    try {
      clock.set('2027-01-10T12:01:00.000Z');
      const backup = await until(
        async () =>
          (await app.db.kysely
            .selectFrom('backups')
            .select(['is_successful', 'schedule_id'])
            .where('server_id', '=', server.id)
            .where('is_successful', '=', 1)
            .executeTakeFirst()) ?? false,
        { what: 'the schedule to make its backup', timeoutMs: 20_000 },
      );
      expect(backup.schedule_id).toBe(schedule.id);
      const after = await until(
        async () => {
          const s = scheduleOf(await api.get(schedule.id));
          return s.is_processing ? false : s;
        },
        { what: 'the run to end' },
      );
      expect(after).toMatchObject({
        last_run_at: '2027-01-10T12:01:00+00:00',
        next_run_at: '2027-01-10T12:02:00+00:00',
      });
    } finally {
      await worker.stop();
      await app.services.scheduleTicker.stop();
    }
    expect(await taskJobs(app, schedule.id)).toHaveLength(1);
  });
});
