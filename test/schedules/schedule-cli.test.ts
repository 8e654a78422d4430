/**
 * `aerie schedule run --server ID --schedule ID`: starts a run now, as `POST …/execute` does (an
 * inactive schedule too), recorded with no actor; refuses what execute refuses, naming why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAerie } from '../support/aerie-process.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import {
  backupTask,
  scheduleBody,
  scheduleOf,
  schedulesClient,
  serverEvents,
  taskJobs,
  taskOf,
} from './schedules-support.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

async function setup(tasks = [backupTask()]) {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token } = await createApiKey(app, owner);
  const api = schedulesClient(app, token, server.identifier);
  const schedule = scheduleOf(await api.create(scheduleBody({ name: 'from the shell', is_active: false })));
  for (const task of tasks) taskOf(await api.createTask(schedule.id, task));
  return { server, api, schedule };
}

describe('aerie schedule run', () => {
  it('starts a run of an inactive schedule now, and prints it', async () => {
    const { server, api, schedule } = await setup();
    const aerie = spawnAerie(
      app,
      ['schedule', 'run', '--server', server.identifier, '--schedule', String(schedule.id), '--json'],
      {
        LOG_LEVEL: 'error',
      },
    );
    expect(await aerie.exited, aerie.output()).toBe(0);
    const printed = JSON.parse(aerie.output()) as Record<string, unknown>;
    expect(printed).toMatchObject({
      id: schedule.id,
      name: 'from the shell',
      server: server.id,
      is_processing: true,
    });
    expect(printed.last_run_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    expect(await taskJobs(app, schedule.id)).toHaveLength(1);
    const execute = (await serverEvents(app, server.id)).filter((e) => e.event === 'server:schedule.execute');
    expect(execute.map((e) => [e.actor_id, e.properties])).toEqual([[null, { name: 'from the shell' }]]);
    await drainJobs(app);
    expect(scheduleOf(await api.get(schedule.id)).is_processing).toBe(false);
    const backups = await app.db.kysely
      .selectFrom('backups')
      .select('schedule_id')
      .where('server_id', '=', server.id)
      .execute();
    expect(backups).toEqual([{ schedule_id: schedule.id }]);
  });

  it('says why it cannot: an unknown schedule, one without tasks, a busy server', async () => {
    const other = await setup();
    const empty = await setup([]);
    const busy = await setup();
    await app.db.kysely
      .updateTable('servers')
      .set({ status: 'suspended' })
      .where('id', '=', busy.server.id)
      .execute();
    const cases: [string[], RegExp][] = [
      [['--server', empty.server.identifier, '--schedule', String(other.schedule.id)], /has no schedule/],
      [
        ['--server', empty.server.identifier, '--schedule', String(empty.schedule.id)],
        /no tasks are registered/,
      ],
      [['--server', busy.server.identifier, '--schedule', String(busy.schedule.id)], /suspended/],
      [['--server', 'nosuchsv', '--schedule', '1'], /No server "nosuchsv"/],
      [['--server', empty.server.identifier, '--schedule', 'two'], /not a whole number/],
    ];
    for (const [args, message] of cases) {
      const aerie = spawnAerie(app, ['schedule', 'run', ...args], { LOG_LEVEL: 'error' });
      expect(await aerie.exited, aerie.output()).toBe(1);
      expect(aerie.output()).toMatch(message);
    }
    for (const { schedule } of [other, empty, busy]) expect(await taskJobs(app, schedule.id)).toEqual([]);
  });
});
