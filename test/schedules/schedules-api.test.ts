/**
 * Pterodactyl's schedules API, through HTTP: its bodies and objects, the rules it keeps (cron
 * expressions, 10 tasks, sequence ids, backups disabled), what Aerie refuses (power and command
 * tasks) and the activity each change records. On the suite's database (SQLite, or the engine of
 * AERIE_TEST_DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { ManualClock } from '../support/manual-clock.ts';
import {
  backupTask,
  scheduleBody,
  scheduleOf,
  schedulesClient,
  serverEvents,
  taskJobs,
  taskOf,
  type ErrorBody,
} from './schedules-support.ts';

const NOW = '2027-01-10T12:00:00.000Z';
const INVALID_CRON = 'The cron data provided does not evaluate to a valid expression.';

let app: TestApp;
const clock = new ManualClock(NOW);
beforeAll(async () => {
  app = await startTestApp({ clock: clock.clock });
});
afterAll(async () => app.close());

async function setup() {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token } = await createApiKey(app, owner);
  return { owner, server, token, api: schedulesClient(app, token, server.identifier) };
}

const count = async (table: 'schedules' | 'schedule_tasks') =>
  Number(
    (
      await app.db.kysely
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('schedules', () => {
  it("creates a schedule from Pterodactyl's body and answers Pterodactyl's object", async () => {
    const { api } = await setup();
    const res = await api.create(scheduleBody({ name: 'nightly', minute: '0', hour: '3' }));
    expect(res.statusCode).toBe(200);
    const body = res.json<Record<string, unknown>>();
    const id = (body as { attributes: { id: unknown } }).attributes.id;
    expect(Number.isInteger(id)).toBe(true);
    expect(body).toEqual({
      object: 'server_schedule',
      attributes: {
        id,
        name: 'nightly',
        cron: { day_of_week: '*', day_of_month: '*', month: '*', hour: '3', minute: '0' },
        is_active: true,
        is_processing: false,
        only_when_online: false,
        last_run_at: null,
        next_run_at: '2027-01-11T03:00:00+00:00',
        created_at: '2027-01-10T12:00:00+00:00',
        updated_at: '2027-01-10T12:00:00+00:00',
        relationships: { tasks: { object: 'list', data: [] } },
      },
    });
    // Listed, and read alone, the same.
    const list = await api.list();
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({ object: 'list', data: [body] });
    expect((await api.get(id as number)).json()).toEqual(body);
  });

  it('leaves is_active and only_when_online false when the body leaves them out, as Pterodactyl', async () => {
    const { api } = await setup();
    const body = scheduleBody();
    delete body.is_active;
    delete body.only_when_online;
    const schedule = scheduleOf(await api.create(body));
    expect([schedule.is_active, schedule.only_when_online]).toEqual([false, false]);
    // Inactive schedules still say when they would run.
    expect(schedule.next_run_at).toBe('2027-01-11T03:00:00+00:00');
  });

  it('updates with a POST of the whole body, and works out the next run again', async () => {
    const { api } = await setup();
    const created = scheduleOf(await api.create());
    clock.advance(60_000);
    try {
      const res = await api.update(
        created.id,
        scheduleBody({ name: 'hourly', minute: '*/15', hour: '*', only_when_online: true, is_active: false }),
      );
      const updated = scheduleOf(res);
      expect(updated).toMatchObject({
        id: created.id,
        name: 'hourly',
        cron: { minute: '*/15', hour: '*', day_of_month: '*', month: '*', day_of_week: '*' },
        is_active: false,
        only_when_online: true,
        next_run_at: '2027-01-10T12:15:00+00:00',
        created_at: created.created_at,
        updated_at: '2027-01-10T12:01:00+00:00',
      });
      expect(scheduleOf(await api.get(created.id))).toEqual(updated);
    } finally {
      clock.set(NOW);
    }
  });

  it('deletes a schedule and its tasks (204), after which it is a 404', async () => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    taskOf(await api.createTask(id));
    const before = await count('schedule_tasks');
    const res = await api.delete(id);
    expect([res.statusCode, res.body]).toEqual([204, '']);
    expect((await api.get(id)).statusCode).toBe(404);
    expect(await count('schedule_tasks')).toBe(before - 1);
    expect((await api.delete(id)).statusCode).toBe(404);
  });

  it("deletes a server's schedules and their tasks with the server", async () => {
    const { api, server } = await setup();
    const { id } = scheduleOf(await api.create());
    taskOf(await api.createTask(id));
    await app.db.kysely.deleteFrom('servers').where('id', '=', server.id).execute();
    const left = await app.db.kysely
      .selectFrom('schedule_tasks')
      .select('id')
      .where('schedule_id', '=', id)
      .execute();
    expect(left).toEqual([]);
    expect(await app.db.kysely.selectFrom('schedules').select('id').where('id', '=', id).execute()).toEqual(
      [],
    );
  });

  it.each([
    ['minute', { minute: '60' }],
    ['minute', { minute: '0 0' }],
    ['minute', { minute: '5/5' }],
    ['hour', { hour: '24' }],
    ['hour', { hour: '*/0' }],
    ['day_of_month', { day_of_month: '32' }],
    ['month', { month: '13' }],
    ['month', { month: 'JANUARY' }],
    ['day_of_week', { day_of_week: 'FOO' }],
    ['day_of_week', { day_of_week: '8' }],
    ['day_of_month', { day_of_month: '31', month: '2' }],
  ])(
    'refuses a cron expression that does not evaluate (%s: %j) with 400, naming the field, storing nothing',
    async (field, cron) => {
      const { api } = await setup();
      const before = await count('schedules');
      const res = await api.create(scheduleBody(cron));
      expect(res.statusCode).toBe(400);
      const { errors } = res.json<ErrorBody>();
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ code: 'DisplayException', status: '400', detail: INVALID_CRON });
      expect(errors[0]?.meta).toMatchObject({ source_field: field, rule: 'cron' });
      expect(errors[0]?.meta?.message).toMatch(
        field === 'day_of_month' && 'month' in cron ? /never/ : new RegExp(field),
      );
      expect(await count('schedules')).toBe(before);
    },
  );

  it('refuses an invalid expression on update too, and leaves the schedule as it was', async () => {
    const { api } = await setup();
    const created = scheduleOf(await api.create());
    const res = await api.update(created.id, scheduleBody({ name: 'changed', hour: '25' }));
    expect(res.statusCode).toBe(400);
    expect(res.json<ErrorBody>().errors[0]?.meta?.source_field).toBe('hour');
    expect(scheduleOf(await api.get(created.id))).toEqual(created);
  });

  it.each([
    ['name', { name: undefined }, 'required'],
    ['name', { name: '   ' }, 'required'],
    ['name', { name: 'x'.repeat(192) }, 'max'],
    ['minute', { minute: 0 }, 'string'],
    ['hour', { hour: undefined }, 'required'],
    ['day_of_week', { day_of_week: '' }, 'min'],
    ['is_active', { is_active: 'yes' }, 'boolean'],
  ])('refuses a body whose %s is wrong with 422', async (field, change, rule) => {
    const { api } = await setup();
    const before = await count('schedules');
    const body = scheduleBody(change);
    for (const [key, value] of Object.entries(change)) if (value === undefined) delete body[key];
    const res = await api.create(body);
    expect(res.statusCode).toBe(422);
    const { errors } = res.json<ErrorBody>();
    expect(errors.map((e) => [e.code, e.meta?.source_field, e.meta?.rule])).toEqual([
      ['ValidationException', field, rule],
    ]);
    expect(await count('schedules')).toBe(before);
  });
});

describe('tasks', () => {
  it("creates a backup task and answers Pterodactyl's schedule_task, included in the schedule", async () => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    const res = await api.createTask(id, { action: 'backup', payload: 'logs\n*.tmp', time_offset: 30 });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ attributes: { id: number } }>();
    expect(body).toEqual({
      object: 'schedule_task',
      attributes: {
        id: body.attributes.id,
        sequence_id: 1,
        action: 'backup',
        payload: 'logs\n*.tmp',
        time_offset: 30,
        is_queued: false,
        continue_on_failure: false,
        created_at: '2027-01-10T12:00:00+00:00',
        updated_at: '2027-01-10T12:00:00+00:00',
      },
    });
    const schedule = scheduleOf(await api.get(id));
    expect(schedule.relationships.tasks).toEqual({ object: 'list', data: [body] });
    // A backup's payload may be left out or null: an empty list of ignored files.
    expect(taskOf(await api.createTask(id, { action: 'backup', time_offset: 0 })).payload).toBe('');
    expect(
      taskOf(await api.createTask(id, { action: 'backup', payload: null, time_offset: 0 })).payload,
    ).toBe('');
  });

  it.each(['power', 'command'])(
    'refuses a %s task with 422: Aerie controls no server process; nothing is stored',
    async (action) => {
      const { api } = await setup();
      const { id } = scheduleOf(await api.create());
      const before = await count('schedule_tasks');
      const payload = action === 'power' ? 'restart' : 'say hello';
      const res = await api.createTask(id, { action, payload, time_offset: 0 });
      expect(res.statusCode).toBe(422);
      const { errors } = res.json<ErrorBody>();
      expect(errors).toEqual([
        {
          code: 'ValidationException',
          status: '422',
          detail: 'The given data was invalid.',
          meta: {
            source_field: 'action',
            rule: 'in',
            message:
              'Aerie controls no server process, so it cannot send power actions or console commands: only backup tasks can be scheduled.',
          },
        },
      ]);
      expect(await count('schedule_tasks')).toBe(before);
      // Nor can a backup task become one.
      const task = taskOf(await api.createTask(id));
      const changed = await api.updateTask(id, task.id, { action, payload, time_offset: 0 });
      expect(changed.statusCode).toBe(422);
      expect(taskOf(await api.createTask(id, backupTask())).action).toBe('backup');
      const stored = await app.db.kysely
        .selectFrom('schedule_tasks')
        .select('action')
        .where('schedule_id', '=', id)
        .execute();
      expect(stored.map((t) => t.action)).toEqual(['backup', 'backup']);
    },
  );

  it('refuses a backup task when the server may keep no backups (403, as Pterodactyl)', async () => {
    const { api, server } = await setup();
    const { id } = scheduleOf(await api.create());
    const task = taskOf(await api.createTask(id));
    await app.db.kysely.updateTable('servers').set({ backup_limit: 0 }).where('id', '=', server.id).execute();
    const before = await count('schedule_tasks');
    const res = await api.createTask(id);
    expect(res.statusCode).toBe(403);
    expect(res.json<ErrorBody>().errors[0]).toMatchObject({
      status: '403',
      detail: "A backup task cannot be created when the server's backup limit is set to 0.",
    });
    expect(await count('schedule_tasks')).toBe(before);
    const update = await api.updateTask(id, task.id, backupTask({ time_offset: 60 }));
    expect(update.statusCode).toBe(403);
    const tasks = scheduleOf(await api.get(id)).relationships.tasks.data.map((t) => t.attributes);
    expect(tasks).toEqual([task]);
  });

  it("allows 10 tasks a schedule and refuses the 11th with Pterodactyl's error", async () => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    for (let i = 0; i < 10; i++) taskOf(await api.createTask(id, backupTask({ time_offset: i })));
    const res = await api.createTask(id);
    expect(res.statusCode).toBe(400);
    expect(res.json<ErrorBody>().errors).toEqual([
      {
        code: 'ServiceLimitExceededException',
        status: '400',
        detail:
          'Schedules may not have more than 10 tasks associated with them. Creating this task would put this schedule over the limit.',
      },
    ]);
    expect(scheduleOf(await api.get(id)).relationships.tasks.data).toHaveLength(10);
  });

  it('holds the 10-task limit when tasks are added at once', async () => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    const answers = await Promise.all(Array.from({ length: 14 }, () => api.createTask(id)));
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(10);
    expect(answers.filter((r) => r.statusCode === 400)).toHaveLength(4);
    const tasks = scheduleOf(await api.get(id)).relationships.tasks.data.map((t) => t.attributes.sequence_id);
    expect(tasks).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('inserts a task at its sequence_id, shifting the others; moves one on update; closes the gap on delete', async () => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    const order = async () =>
      scheduleOf(await api.get(id)).relationships.tasks.data.map((t) => [
        t.attributes.time_offset,
        t.attributes.sequence_id,
      ]);
    // The time offset names each task here: A=1, B=2, C=3, D=4.
    const a = taskOf(await api.createTask(id, backupTask({ time_offset: 1 })));
    taskOf(await api.createTask(id, backupTask({ time_offset: 2 })));
    const c = taskOf(await api.createTask(id, backupTask({ time_offset: 3 })));
    expect(await order()).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    const d = taskOf(await api.createTask(id, backupTask({ time_offset: 4, sequence_id: 2 })));
    expect(d.sequence_id).toBe(2);
    expect(await order()).toEqual([
      [1, 1],
      [4, 2],
      [2, 3],
      [3, 4],
    ]);
    // Past the end: last.
    const e = taskOf(await api.createTask(id, backupTask({ time_offset: 5, sequence_id: 99 })));
    expect(e.sequence_id).toBe(5);
    // C to the front: the ones before it move down.
    expect(
      taskOf(await api.updateTask(id, c.id, backupTask({ time_offset: 3, sequence_id: 1 }))).sequence_id,
    ).toBe(1);
    expect(await order()).toEqual([
      [3, 1],
      [1, 2],
      [4, 3],
      [2, 4],
      [5, 5],
    ]);
    // A to the end (past it: the end): the ones after it move up.
    expect(
      taskOf(await api.updateTask(id, a.id, backupTask({ time_offset: 1, sequence_id: 50 }))).sequence_id,
    ).toBe(5);
    expect(await order()).toEqual([
      [3, 1],
      [4, 2],
      [2, 3],
      [5, 4],
      [1, 5],
    ]);
    // Without a sequence_id, a task keeps its place.
    expect(
      taskOf(await api.updateTask(id, d.id, backupTask({ time_offset: 4, continue_on_failure: true })))
        .sequence_id,
    ).toBe(2);
    const res = await api.deleteTask(id, d.id);
    expect([res.statusCode, res.body]).toEqual([204, '']);
    expect(await order()).toEqual([
      [3, 1],
      [2, 2],
      [5, 3],
      [1, 4],
    ]);
  });

  it.each([
    ['action', { action: 'explode' }, 'in'],
    ['action', { action: undefined }, 'required'],
    ['time_offset', { time_offset: 901 }, 'max'],
    ['time_offset', { time_offset: -1 }, 'min'],
    ['time_offset', { time_offset: undefined }, 'required'],
    ['time_offset', { time_offset: '30' }, 'integer'],
    ['sequence_id', { sequence_id: 0 }, 'min'],
    ['continue_on_failure', { continue_on_failure: 'true' }, 'boolean'],
    ['payload', { payload: 'a\u0000b' }, 'ignored'],
  ])('refuses a task whose %s is wrong with 422', async (field, change, rule) => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    const body = backupTask(change);
    for (const [key, value] of Object.entries(change)) if (value === undefined) delete body[key];
    const res = await api.createTask(id, body);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().errors.map((e) => [e.meta?.source_field, e.meta?.rule])).toEqual([
      [field, rule],
    ]);
    expect(scheduleOf(await api.get(id)).relationships.tasks.data).toEqual([]);
  });
});

describe('ids out of reach', () => {
  it("answers 404 for another server's schedule, another user's, and ids that name nothing", async () => {
    const mine = await setup();
    const other = await setup();
    const sameOwnerServer = await createServer(app, mine.owner);
    const sameOwner = schedulesClient(app, mine.token, sameOwnerServer.identifier);
    const theirs = scheduleOf(await other.api.create());
    const theirTask = taskOf(await other.api.createTask(theirs.id));
    const ofOtherServer = scheduleOf(await sameOwner.create());
    const otherTask = taskOf(await sameOwner.createTask(ofOtherServer.id));
    const own = scheduleOf(await mine.api.create());
    for (const id of [theirs.id, ofOtherServer.id, 999_999_999, 'abc', '1.5', '-1', '0x10']) {
      for (const res of [
        await mine.api.get(id),
        await mine.api.update(id, scheduleBody()),
        await mine.api.delete(id),
        await mine.api.execute(id),
        await mine.api.createTask(id),
      ]) {
        expect(res.statusCode, `${String(id)}: ${res.body}`).toBe(404);
        expect(res.json<ErrorBody>().errors[0]?.code).toBe('NotFoundHttpException');
      }
    }
    // A task of another schedule, through one's own schedule.
    for (const task of [theirTask.id, otherTask.id, 12345678]) {
      expect((await mine.api.updateTask(own.id, task, backupTask())).statusCode).toBe(404);
      expect((await mine.api.deleteTask(own.id, task)).statusCode).toBe(404);
    }
    // Another user's server itself.
    const stranger = schedulesClient(app, mine.token, other.server.identifier);
    expect((await stranger.list()).statusCode).toBe(404);
    expect((await stranger.get(theirs.id)).statusCode).toBe(404);
    // Nothing of theirs changed.
    expect(scheduleOf(await other.api.get(theirs.id)).relationships.tasks.data).toHaveLength(1);
    expect(scheduleOf(await sameOwner.get(ofOtherServer.id)).relationships.tasks.data).toHaveLength(1);
  });
});

describe('execute', () => {
  it('runs an inactive schedule now: 202 with an empty body, then its backup is made', async () => {
    const { api, server } = await setup();
    const created = scheduleOf(await api.create(scheduleBody({ is_active: false })));
    taskOf(await api.createTask(created.id, backupTask({ payload: '*.log' })));
    const res = await api.execute(created.id);
    expect([res.statusCode, res.body]).toEqual([202, '']);
    const running = scheduleOf(await api.get(created.id));
    expect(running).toMatchObject({ is_processing: true, last_run_at: '2027-01-10T12:00:00+00:00' });
    expect(running.relationships.tasks.data[0]?.attributes.is_queued).toBe(true);
    await drainJobs(app);
    const done = scheduleOf(await api.get(created.id));
    expect(done).toMatchObject({
      is_processing: false,
      is_active: false,
      last_run_at: '2027-01-10T12:00:00+00:00',
    });
    expect(done.relationships.tasks.data[0]?.attributes.is_queued).toBe(false);
    const backups = await app.db.kysely
      .selectFrom('backups')
      .select(['is_successful', 'ignored_files', 'is_automatic', 'schedule_id'])
      .where('server_id', '=', server.id)
      .execute();
    expect(backups).toEqual([
      { is_successful: 1, ignored_files: '["*.log"]', is_automatic: 1, schedule_id: created.id },
    ]);
    expect((await taskJobs(app, created.id)).map((j) => j.state)).toEqual(['succeeded']);
  });

  it('refuses a schedule without tasks (400, as Pterodactyl) and a second run while one is in progress', async () => {
    const { api } = await setup();
    const { id } = scheduleOf(await api.create());
    const empty = await api.execute(id);
    expect(empty.statusCode).toBe(400);
    expect(empty.json<ErrorBody>().errors[0]).toMatchObject({
      code: 'DisplayException',
      detail: 'Cannot process schedule for task execution: no tasks are registered.',
    });
    taskOf(await api.createTask(id));
    expect((await api.execute(id)).statusCode).toBe(202);
    const again = await api.execute(id);
    expect(again.statusCode).toBe(400);
    expect(again.json<ErrorBody>().errors[0]?.detail).toMatch(/already running/);
    expect(await taskJobs(app, id)).toHaveLength(1);
    await drainJobs(app);
    expect((await api.execute(id)).statusCode).toBe(202);
    await drainJobs(app);
  });

  it('refuses to run on a server that is busy (409)', async () => {
    const { api, server } = await setup();
    const { id } = scheduleOf(await api.create());
    taskOf(await api.createTask(id));
    await app.db.kysely
      .updateTable('servers')
      .set({ status: 'suspended' })
      .where('id', '=', server.id)
      .execute();
    const res = await api.execute(id);
    expect(res.statusCode).toBe(409);
    expect(scheduleOf(await api.get(id)).is_processing).toBe(false);
  });
});

describe('activity', () => {
  it("records each change with Pterodactyl's events and properties, in the server's feed", async () => {
    const { api, server, owner, token } = await setup();
    const { id } = scheduleOf(await api.create(scheduleBody({ name: 'nightly' })));
    scheduleOf(await api.update(id, scheduleBody({ name: 'nightly', is_active: false })));
    const task = taskOf(await api.createTask(id, backupTask({ payload: 'cache/' })));
    taskOf(await api.updateTask(id, task.id, backupTask({ payload: 'cache/\nlogs/' })));
    expect((await api.execute(id)).statusCode).toBe(202);
    await drainJobs(app);
    expect((await api.deleteTask(id, task.id)).statusCode).toBe(204);
    expect((await api.delete(id)).statusCode).toBe(204);
    const events = (await serverEvents(app, server.id)).filter((e) =>
      /^server:(schedule|task)\./.test(e.event),
    );
    expect(events.map((e) => [e.event, e.properties, e.actor_id])).toEqual([
      ['server:schedule.create', { name: 'nightly' }, owner.id],
      ['server:schedule.update', { name: 'nightly', active: false }, owner.id],
      ['server:task.create', { name: 'nightly', action: 'backup', payload: 'cache/' }, owner.id],
      ['server:task.update', { name: 'nightly', action: 'backup', payload: 'cache/\nlogs/' }, owner.id],
      ['server:schedule.execute', { name: 'nightly' }, owner.id],
      ['server:task.delete', { name: 'nightly' }, owner.id],
      ['server:schedule.delete', { name: 'nightly' }, owner.id],
    ]);
    // The backup the run made shares the execute request's batch.
    const all = await serverEvents(app, server.id);
    const execute = all.find((e) => e.event === 'server:schedule.execute');
    expect(all.find((e) => e.event === 'server:backup.start')?.batch).toBe(execute?.batch);
    // The feed says it in words.
    const feed = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${server.identifier}/activity?filter[event]=server:&per_page=50`,
      headers: bearer(token),
    });
    const descriptions = feed
      .json<{ data: { attributes: { event: string; description: string } }[] }>()
      .data.filter((e) => /schedule|task/.test(e.attributes.event))
      .map((e) => e.attributes.description);
    expect(descriptions).toEqual([
      'Deleted schedule nightly',
      'Removed a task from schedule nightly',
      'Ran schedule nightly by hand',
      'Changed a backup task of schedule nightly',
      'Added a backup task to schedule nightly',
      'Updated schedule nightly (inactive)',
      'Created schedule nightly',
    ]);
  });
});
