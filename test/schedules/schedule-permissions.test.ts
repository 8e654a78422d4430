/**
 * Subusers and schedules: each of `schedule.read`, `.create`, `.update` and `.delete` opens
 * exactly its routes (Pterodactyl's: tasks and `execute` need `update`), 403 otherwise; a user who
 * is no subuser gets 404. The permissions are offered like the others (a subuser may be given
 * them; the panel lists them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBUSER_PERMISSIONS } from '../../src/servers/permissions.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import {
  backupTask,
  scheduleBody,
  scheduleOf,
  schedulesClient,
  taskOf,
  type ErrorBody,
} from './schedules-support.ts';

const SCHEDULE_PERMISSIONS = [
  'schedule.read',
  'schedule.create',
  'schedule.update',
  'schedule.delete',
] as const;
type SchedulePermission = (typeof SCHEDULE_PERMISSIONS)[number];

type Client = ReturnType<typeof schedulesClient>;
/** Each route, the permission it needs, and a call of it on schedule `id` with task `task`. */
const ROUTES: [
  string,
  SchedulePermission,
  (api: Client, id: number, task: number) => ReturnType<Client['list']>,
][] = [
  ['GET schedules', 'schedule.read', (api) => api.list()],
  ['GET schedule', 'schedule.read', (api, id) => api.get(id)],
  ['POST schedules', 'schedule.create', (api) => api.create()],
  ['POST schedule', 'schedule.update', (api, id) => api.update(id, scheduleBody({ name: 'changed' }))],
  ['POST execute', 'schedule.update', (api, id) => api.execute(id)],
  ['POST tasks', 'schedule.update', (api, id) => api.createTask(id)],
  [
    'POST task',
    'schedule.update',
    (api, id, task) => api.updateTask(id, task, backupTask({ time_offset: 5 })),
  ],
  ['DELETE task', 'schedule.update', (api, id, task) => api.deleteTask(id, task)],
  ['DELETE schedule', 'schedule.delete', (api, id) => api.delete(id)],
];

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

/** A server of its own, with a schedule and a task, and a subuser holding `permissions`. */
async function fixture(permissions: string[] | null) {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token: ownerToken } = await createApiKey(app, owner);
  const own = schedulesClient(app, ownerToken, server.identifier);
  const schedule = scheduleOf(await own.create());
  const task = taskOf(await own.createTask(schedule.id));
  const caller = await createUser(app);
  if (permissions !== null) await addSubuser(app, server.id, caller, permissions);
  const { token } = await createApiKey(app, caller);
  return { api: schedulesClient(app, token, server.identifier), schedule: schedule.id, task: task.id };
}

describe('schedule permissions', () => {
  it('are subuser permissions, offered with the others', () => {
    for (const permission of SCHEDULE_PERMISSIONS) expect(SUBUSER_PERMISSIONS).toContain(permission);
  });

  it('can be granted to a subuser through the API', async () => {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const { token } = await createApiKey(app, owner);
    const invitee = await createUser(app);
    const res = await app.http.inject({
      method: 'POST',
      url: `/api/client/servers/${server.identifier}/users`,
      headers: bearer(token),
      payload: { email: invitee.email, permissions: [...SCHEDULE_PERMISSIONS] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json<{ attributes: { permissions: string[] } }>().attributes.permissions).toEqual(
      expect.arrayContaining([...SCHEDULE_PERMISSIONS]),
    );
  });

  for (const held of SCHEDULE_PERMISSIONS) {
    it(`${held} opens exactly its routes`, async () => {
      const outcomes: Record<string, number> = {};
      for (const [name, , route] of ROUTES) {
        // A fresh fixture each: a route that succeeds changes what the next one would find.
        const f = await fixture([held]);
        outcomes[name] = (await route(f.api, f.schedule, f.task)).statusCode;
      }
      const expected = Object.fromEntries(
        ROUTES.map(([name, needs]) => [
          name,
          needs !== held ? 403 : name === 'POST execute' ? 202 : name.startsWith('DELETE') ? 204 : 200,
        ]),
      );
      expect(outcomes).toEqual(expected);
    });
  }

  it('gives a subuser with every other permission 403, and a user who is no subuser 404', async () => {
    for (const [name, needs, route] of ROUTES) {
      const others = await fixture(SUBUSER_PERMISSIONS.filter((p) => p !== needs));
      const refused = await route(others.api, others.schedule, others.task);
      expect(refused.statusCode, name).toBe(403);
      expect(refused.json<ErrorBody>().errors[0]?.code).toBe('AccessDeniedHttpException');
      const stranger = await fixture(null);
      const hidden = await route(stranger.api, stranger.schedule, stranger.task);
      expect(hidden.statusCode, name).toBe(404);
    }
  });
});
