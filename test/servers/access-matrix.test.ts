/**
 * The access matrix of the client API: every route under /api/client, called by every kind of
 * caller, and every object ID in a path swapped for one the caller may not reach.
 *
 * - An object the caller cannot see (someone else's server, another server's backup or subuser,
 *   another user's API key, an ID that names nothing, garbage) answers 404 — never 403, never 500.
 * - Each subuser permission opens exactly its routes: a subuser holding only that permission
 *   succeeds, a subuser holding every other permission gets 403.
 * - Every answer that is not 2xx is the JSON error envelope.
 * - A refused request changes nothing; an accepted one changes what it should.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { SUBUSER_PERMISSIONS, type Permission } from '../../src/servers/permissions.ts';
import type { User } from '../../src/users/user.ts';
import { backupOf, tempDir } from '../support/archives.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { codeAt, requestSecret } from '../support/two-factor.ts';

// ---------------------------------------------------------------------------------------------
// Callers and routes.

const CALLERS = [
  'owner',
  'admin',
  'subuser with the permission',
  'subuser with every other permission',
  'subuser with no permissions',
  'stranger',
] as const;
type Caller = (typeof CALLERS)[number];

/**
 * What a route needs: a subuser permission; `visible` (any user who may see the server, subusers
 * with no permissions included); `self` (an account route: any authenticated user, about
 * themselves). No client route is owner-only: owners and administrators hold every permission.
 */
type Need = Permission | 'visible' | 'self';

interface Fixture {
  server: { id: string; identifier: string };
  backup: string;
  /** A schedule of the server, with one task (0 when the route names none). */
  schedule: number;
  task: number;
  /** The user UUID of a subuser of the server who is not the caller. */
  user: string;
  /** An API key identifier of the caller's own. */
  identifier: string;
  caller: User;
}

interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** With {server}, {backup}, {schedule}, {task}, {user}, {identifier} placeholders. */
  path: string;
  /** A valid query string, sent after the path (not part of the route's name). */
  query?: string;
  need: Need;
  /** A valid body (a function when it needs what only exists once the suite has started). */
  body?:
    | Record<string, unknown>
    | ((caller: Caller) => Record<string, unknown> | Promise<Record<string, unknown>>);
  success: 200 | 202 | 204;
  /**
   * For routes that change something: what they change, read from the database. A refused call
   * must leave it as it was, an accepted one must change it.
   */
  state?: (fixture: Fixture) => Promise<unknown>;
  /**
   * The subuser routes check the caller's `user.*` permission before looking up the {user} in the
   * path (a 403 that says nothing about the ID); the backup routes look the {backup} up first, as
   * the reference panel does. This decides what a subuser without the permission gets for an ID
   * that names nothing.
   */
  permissionBeforeObject?: boolean;
}

let app: TestApp;
const db = () => app.db.kysely;

const backupState = async (f: Fixture) =>
  (await db()
    .selectFrom('backups')
    .select(['id', 'is_locked'])
    .where('id', '=', f.backup)
    .executeTakeFirst()) ?? 'gone';
const subuserState = async (serverId: string, userId: string) =>
  (await db()
    .selectFrom('subusers')
    .select('permissions')
    .where('server_id', '=', serverId)
    .where('user_id', '=', userId)
    .executeTakeFirst()) ?? 'not a subuser';
const serverStatus = async (serverId: string) =>
  (await db().selectFrom('servers').select('status').where('id', '=', serverId).executeTakeFirstOrThrow())
    .status;

const SCHEDULE_BODY = {
  name: 'matrix',
  is_active: true,
  only_when_online: false,
  minute: '0',
  hour: '3',
  day_of_month: '*',
  month: '*',
  day_of_week: '*',
};
const TASK_BODY = { action: 'backup', payload: '', time_offset: 0, continue_on_failure: false };
const scheduleState = async (id: number) =>
  (await db()
    .selectFrom('schedules')
    .select(['id', 'name', 'is_processing'])
    .where('id', '=', id)
    .executeTakeFirst()) ?? 'gone';
const taskState = async (id: number) =>
  (await db()
    .selectFrom('schedule_tasks')
    .select(['id', 'time_offset'])
    .where('id', '=', id)
    .executeTakeFirst()) ?? 'gone';

/** A schedule of the server, with one backup task, made through the API as `token`'s user. */
async function scheduleWithTask(server: string, token: string): Promise<{ schedule: number; task: number }> {
  const base = `/api/client/servers/${server}/schedules`;
  const post = async (url: string, payload: Record<string, unknown>) => {
    const res = await app.http.inject({ method: 'POST', url, headers: bearer(token), payload });
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    return res.json<{ attributes: { id: number } }>().attributes.id;
  };
  const schedule = await post(base, SCHEDULE_BODY);
  return { schedule, task: await post(`${base}/${schedule}/tasks`, TASK_BODY) };
}

/** Every caller's password (the harness's default), which the account's own settings ask for. */
const PASSWORD = 'correct horse battery';
const userColumn = async (
  f: Fixture,
  column: 'email' | 'password_hash' | 'totp_secret' | 'totp_enabled_at',
) =>
  (await db().selectFrom('users').selectAll().where('id', '=', f.caller.id).executeTakeFirstOrThrow())[
    column
  ];

const BACKUPS = '/api/client/servers/{server}/backups';
const SCHEDULES = '/api/client/servers/{server}/schedules';
const USERS = '/api/client/servers/{server}/users';

const ROUTES: Route[] = [
  // Servers.
  { method: 'GET', path: '/api/client/servers/{server}', need: 'visible', success: 200 },
  { method: 'GET', path: '/api/client/servers/{server}/activity', need: 'activity.read', success: 200 },
  // Backups.
  { method: 'GET', path: BACKUPS, need: 'backup.read', success: 200 },
  {
    method: 'POST',
    path: BACKUPS,
    need: 'backup.create',
    body: { name: 'matrix' },
    success: 200,
    state: async (f) =>
      (
        await db()
          .selectFrom('backups')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('server_id', '=', f.server.id)
          .executeTakeFirstOrThrow()
      ).n,
  },
  { method: 'GET', path: `${BACKUPS}/{backup}`, need: 'backup.read', success: 200 },
  { method: 'GET', path: `${BACKUPS}/{backup}/download`, need: 'backup.download', success: 200 },
  // Looking inside a backup (beyond Pterodactyl).
  {
    method: 'GET',
    path: `${BACKUPS}/{backup}/files/list`,
    query: 'directory=/',
    need: 'backup.download',
    success: 200,
  },
  {
    method: 'GET',
    path: `${BACKUPS}/{backup}/files/download`,
    query: 'file=/',
    need: 'backup.download',
    success: 200,
  },
  {
    method: 'POST',
    path: `${BACKUPS}/{backup}/lock`,
    need: 'backup.delete',
    success: 200,
    state: backupState,
  },
  { method: 'DELETE', path: `${BACKUPS}/{backup}`, need: 'backup.delete', success: 204, state: backupState },
  // Automatic backups' retention, and bulk delete (beyond Pterodactyl).
  { method: 'GET', path: `${BACKUPS}/retention`, need: 'backup.delete', success: 200 },
  {
    method: 'PUT',
    path: `${BACKUPS}/retention`,
    need: 'backup.delete',
    body: { keep_last: 3 },
    success: 200,
    state: async (f) =>
      (await db()
        .selectFrom('backup_retention')
        .select('keep_last')
        .where('server_id', '=', f.server.id)
        .executeTakeFirst()) ?? 'no policy',
  },
  { method: 'GET', path: `${BACKUPS}/retention/preview`, need: 'backup.delete', success: 200 },
  {
    method: 'POST',
    path: `${BACKUPS}/delete`,
    need: 'backup.delete',
    body: { backups: ['00000000-0000-4000-8000-000000000000'] },
    success: 200,
  },
  {
    method: 'POST',
    path: `${BACKUPS}/{backup}/restore`,
    need: 'backup.restore',
    body: { truncate: false },
    success: 204,
    state: (f) => serverStatus(f.server.id),
  },
  // Schedules.
  { method: 'GET', path: SCHEDULES, need: 'schedule.read', success: 200 },
  {
    method: 'POST',
    path: SCHEDULES,
    need: 'schedule.create',
    body: SCHEDULE_BODY,
    success: 200,
    state: async (f) =>
      (
        await db()
          .selectFrom('schedules')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('server_id', '=', f.server.id)
          .executeTakeFirstOrThrow()
      ).n,
  },
  { method: 'GET', path: `${SCHEDULES}/{schedule}`, need: 'schedule.read', success: 200 },
  {
    method: 'POST',
    path: `${SCHEDULES}/{schedule}`,
    need: 'schedule.update',
    body: { ...SCHEDULE_BODY, name: 'changed by the matrix' },
    success: 200,
    state: (f) => scheduleState(f.schedule),
  },
  {
    method: 'DELETE',
    path: `${SCHEDULES}/{schedule}`,
    need: 'schedule.delete',
    success: 204,
    state: (f) => scheduleState(f.schedule),
  },
  {
    method: 'POST',
    path: `${SCHEDULES}/{schedule}/execute`,
    need: 'schedule.update',
    success: 202,
    state: (f) => scheduleState(f.schedule),
  },
  {
    method: 'POST',
    path: `${SCHEDULES}/{schedule}/tasks`,
    need: 'schedule.update',
    body: TASK_BODY,
    success: 200,
    state: async (f) =>
      (
        await db()
          .selectFrom('schedule_tasks')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('schedule_id', '=', f.schedule)
          .executeTakeFirstOrThrow()
      ).n,
  },
  {
    method: 'POST',
    path: `${SCHEDULES}/{schedule}/tasks/{task}`,
    need: 'schedule.update',
    body: { ...TASK_BODY, time_offset: 42 },
    success: 200,
    state: (f) => taskState(f.task),
  },
  {
    method: 'DELETE',
    path: `${SCHEDULES}/{schedule}/tasks/{task}`,
    need: 'schedule.update',
    success: 204,
    state: (f) => taskState(f.task),
  },
  // Subusers.
  { method: 'GET', path: USERS, need: 'user.read', success: 200 },
  {
    method: 'POST',
    path: USERS,
    need: 'user.create',
    body: () => ({ email: invitee.email, permissions: [] }),
    success: 200,
    state: (f) => subuserState(f.server.id, invitee.id),
  },
  {
    method: 'GET',
    path: `${USERS}/{user}`,
    need: 'user.read',
    success: 200,
    permissionBeforeObject: true,
  },
  {
    method: 'POST',
    path: `${USERS}/{user}`,
    need: 'user.update',
    body: { permissions: [] },
    success: 200,
    state: (f) => subuserState(f.server.id, f.user),
    permissionBeforeObject: true,
  },
  {
    method: 'DELETE',
    path: `${USERS}/{user}`,
    need: 'user.delete',
    success: 204,
    state: (f) => subuserState(f.server.id, f.user),
    permissionBeforeObject: true,
  },
  // The account.
  { method: 'GET', path: '/api/client', need: 'self', success: 200 },
  { method: 'GET', path: '/api/client/account', need: 'self', success: 200 },
  { method: 'GET', path: '/api/client/account/activity', need: 'self', success: 200 },
  { method: 'GET', path: '/api/client/activity', need: 'self', success: 200 },
  { method: 'GET', path: '/api/client/account/api-keys', need: 'self', success: 200 },
  {
    method: 'POST',
    path: '/api/client/account/api-keys',
    need: 'self',
    body: { description: 'matrix', allowed_ips: [] },
    success: 200,
    state: async (f) =>
      (
        await db()
          .selectFrom('api_keys')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', f.caller.id)
          .executeTakeFirstOrThrow()
      ).n,
  },
  {
    method: 'DELETE',
    path: '/api/client/account/api-keys/{identifier}',
    need: 'self',
    success: 204,
    state: async (f) =>
      (await db()
        .selectFrom('api_keys')
        .select('user_id')
        .where('identifier', '=', f.identifier)
        .executeTakeFirst()) ?? 'gone',
  },
  {
    method: 'PUT',
    path: '/api/client/account/email',
    need: 'self',
    body: () => ({ email: `matrix-${randomUUID()}@example.com`, password: PASSWORD }),
    success: 204,
    state: (f) => userColumn(f, 'email'),
  },
  {
    method: 'PUT',
    path: '/api/client/account/password',
    need: 'self',
    body: { current_password: PASSWORD, password: PASSWORD, password_confirmation: PASSWORD },
    success: 204,
    // The same password again, under a new salt.
    state: (f) => userColumn(f, 'password_hash'),
  },
  // Two-factor authentication: set up, turned on, turned off again, by each caller in turn.
  {
    method: 'GET',
    path: '/api/client/account/two-factor',
    need: 'self',
    success: 200,
    state: (f) => userColumn(f, 'totp_secret'),
  },
  {
    method: 'POST',
    path: '/api/client/account/two-factor',
    need: 'self',
    body: async (caller) => ({
      code: codeAt(await requestSecret(app, bearer(tokens[caller])), new Date()),
      password: PASSWORD,
    }),
    success: 200,
    state: (f) => userColumn(f, 'totp_enabled_at'),
  },
  {
    method: 'POST',
    path: '/api/client/account/two-factor/disable',
    need: 'self',
    body: { password: PASSWORD },
    success: 204,
    state: (f) => userColumn(f, 'totp_enabled_at'),
  },
];

const routeName = (route: Route) => `${route.method} ${route.path}`;

// ---------------------------------------------------------------------------------------------
// Users, tokens and fixtures.

let users: Record<Caller, User>;
let tokens: Record<Caller, string>;
/** A subuser of every fresh server, whom the {user} routes read, change and remove. */
let target: User;
/** Never a subuser of a fresh server: whom POST …/users adds. */
let invitee: User;
/** A .tar.gz that every fixture imports as its successful backup. */
let archive: string;

/** The permissions a caller holds as a subuser of a server, for a route needing `need`. */
function subuserPermissions(caller: Caller, need: Need): string[] | null {
  const all = [...SUBUSER_PERMISSIONS];
  switch (caller) {
    case 'subuser with the permission':
      return need === 'visible' || need === 'self' ? [] : [need];
    case 'subuser with every other permission':
      return all.filter((p) => p !== need);
    case 'subuser with no permissions':
      return [];
    default:
      return null;
  }
}

/** A fresh server of the owner, with a successful backup and a subuser, and the caller in place. */
async function serverFixture(
  caller: Caller,
  need: Need,
  options: { backup?: boolean; schedule?: boolean } = {},
) {
  const server = await createServer(app, users.owner);
  const permissions = subuserPermissions(caller, need);
  if (permissions !== null) await addSubuser(app, server.id, users[caller], permissions);
  await addSubuser(app, server.id, target, ['activity.read']);
  const backup = options.backup === false ? '' : (await importBackup(app, server.id, archive)).uuid;
  const schedule = options.schedule
    ? await scheduleWithTask(server.identifier, tokens.owner)
    : { schedule: 0, task: 0 };
  return { server: { id: server.id, identifier: server.identifier }, backup, ...schedule };
}

async function fixtureFor(route: Route, caller: Caller): Promise<Fixture> {
  const base = { caller: users[caller], user: target.id, identifier: '' };
  if (route.need === 'self') {
    const identifier = route.path.includes('{identifier}')
      ? (await createApiKey(app, users[caller])).identifier
      : '';
    return { ...base, server: { id: '', identifier: '' }, backup: '', schedule: 0, task: 0, identifier };
  }
  return {
    ...base,
    ...(await serverFixture(caller, route.need, {
      backup: route.path.includes('{backup}'),
      schedule: route.path.includes('{schedule}'),
    })),
  };
}

function urlOf(
  route: Route,
  values: {
    server: string;
    backup: string;
    schedule: number | string;
    task: number | string;
    user: string;
    identifier: string;
  },
) {
  return route.path
    .replace('{server}', values.server)
    .replace('{backup}', values.backup)
    .replace('{schedule}', String(values.schedule))
    .replace('{task}', String(values.task))
    .replace('{user}', values.user)
    .replace('{identifier}', values.identifier);
}

async function call(route: Route, url: string, caller: Caller): Promise<LightMyRequestResponse> {
  const body = typeof route.body === 'function' ? await route.body(caller) : route.body;
  const options: InjectOptions = {
    method: route.method,
    url: route.query === undefined ? url : `${url}?${route.query}`,
    headers: bearer(tokens[caller]),
    ...(body === undefined ? {} : { payload: body }),
  };
  return app.http.inject(options);
}

interface Envelope {
  errors: { code: string; status: string; detail: string }[];
}

const CODES: Record<number, [string, string]> = {
  403: ['AccessDeniedHttpException', 'This action is unauthorized.'],
  404: ['NotFoundHttpException', 'The requested resource could not be found on the server.'],
};

/** A 2xx with the right body, or the error envelope whose status matches the response's. */
function expectWellFormed(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBeLessThan(500);
  if (res.statusCode === 204 || res.statusCode === 202) {
    expect(res.body).toBe('');
    return;
  }
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json<Record<string, unknown>>();
  if (res.statusCode < 300) {
    expect(body).toBeTypeOf('object');
    expect(body).not.toHaveProperty('errors');
    return;
  }
  expect(body, `not the error envelope: ${res.body}`).toHaveProperty('errors');
  const { errors } = body as unknown as Envelope;
  expect(errors).toHaveLength(1);
  expect(Object.keys(errors[0]!).sort()).toEqual(['code', 'detail', 'status']);
  expect(errors[0]!.status).toBe(String(res.statusCode));
  const known = CODES[res.statusCode];
  if (known !== undefined)
    expect(errors[0]).toEqual({ code: known[0], status: String(res.statusCode), detail: known[1] });
}

// ---------------------------------------------------------------------------------------------

async function byCaller<T>(make: (caller: Caller) => Promise<T>): Promise<Record<Caller, T>> {
  const values = await Promise.all(CALLERS.map(make));
  return Object.fromEntries(CALLERS.map((caller, i) => [caller, values[i]])) as Record<Caller, T>;
}

beforeAll(async () => {
  app = await startTestApp({ env: { AERIE_RATE_LIMIT_PER_MINUTE: '0' } });
  users = await byCaller((caller) => createUser(app, { admin: caller === 'admin' }));
  tokens = await byCaller(async (caller) => (await createApiKey(app, users[caller])).token);
  [target, invitee] = await Promise.all([createUser(app), createUser(app)]);
  archive = (
    await backupOf({ 'server.properties': 'motd=matrix\n', 'world/level.dat': 'level' }, await tempDir())
  ).archive;
});
afterAll(async () => app.close());

/** What a caller gets from a route when every ID in the path is valid. */
function expectedStatus(route: Route, caller: Caller): number {
  if (route.need === 'self') return route.success;
  if (caller === 'stranger') return 404;
  const lacksPermission =
    caller === 'subuser with every other permission' || caller === 'subuser with no permissions';
  if (lacksPermission && route.need !== 'visible') return 403;
  return route.success;
}

for (const route of ROUTES) {
  describe(routeName(route), () => {
    it.each(CALLERS)('%s', async (caller) => {
      const fixture = await fixtureFor(route, caller);
      const before = await route.state?.(fixture);
      const res = await call(route, urlOf(route, { ...fixture, server: fixture.server.identifier }), caller);
      const expected = expectedStatus(route, caller);
      expect(res.statusCode, `${caller}: ${res.body}`).toBe(expected);
      expectWellFormed(res);
      if (route.state !== undefined) {
        const after = await route.state(fixture);
        if (expected < 300) expect(after).not.toEqual(before);
        else expect(after).toEqual(before);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// IDs the caller may not reach.

interface Probe {
  name: string;
  value: (f: ProbeFixture) => string;
  /**
   * Refused before the route looks at anything (an overlong or undecodable path segment): 404
   * for everyone, before any permission check.
   */
  early?: boolean;
  /** An undecodable URL may be refused as malformed (400, in the envelope) rather than 404. */
  badRequestAllowed?: boolean;
}

/** Servers A and B of the owner, C of another user; a backup, a schedule (with a task) and a subuser of each. */
interface ProbeFixture {
  a: Fixture['server'];
  b: Fixture['server'];
  c: Fixture['server'];
  backups: { a: string; b: string; c: string };
  schedules: { a: number; b: number; c: number };
  tasks: { a: number; b: number; c: number };
  subusers: { a: string; b: string; c: string };
  /** A key of a user who is none of the callers. */
  othersKey: { identifier: string; token: string };
}

async function probeFixture(need: Need): Promise<ProbeFixture> {
  const [other, bOnly, cOnly] = await Promise.all([createUser(app), createUser(app), createUser(app)]);
  const [a, b, c] = await Promise.all([
    createServer(app, users.owner),
    createServer(app, users.owner),
    createServer(app, other),
  ]);
  for (const caller of CALLERS) {
    const permissions = subuserPermissions(caller, need);
    if (permissions === null) continue;
    await addSubuser(app, a.id, users[caller], permissions);
    // The subuser with the permission holds it on B too: B's objects are in reach, through B.
    if (caller === 'subuser with the permission') await addSubuser(app, b.id, users[caller], permissions);
  }
  await addSubuser(app, a.id, target, ['activity.read']);
  await addSubuser(app, b.id, bOnly, ['activity.read']);
  await addSubuser(app, c.id, cOnly, ['activity.read']);
  const [ba, bb, bc] = await Promise.all([a, b, c].map((s) => importBackup(app, s.id, archive)));
  const othersKey = await createApiKey(app, other);
  const [sa, sb, sc] = [
    await scheduleWithTask(a.identifier, tokens.owner),
    await scheduleWithTask(b.identifier, tokens.owner),
    await scheduleWithTask(c.identifier, othersKey.token),
  ];
  return {
    a: { id: a.id, identifier: a.identifier },
    b: { id: b.id, identifier: b.identifier },
    c: { id: c.id, identifier: c.identifier },
    backups: { a: ba!.uuid, b: bb!.uuid, c: bc!.uuid },
    schedules: { a: sa.schedule, b: sb.schedule, c: sc.schedule },
    tasks: { a: sa.task, b: sb.task, c: sc.task },
    subusers: { a: target.id, b: bOnly.id, c: cOnly.id },
    othersKey,
  };
}

/** Everything in the probe fixture that a refused request must leave alone. */
async function probeState(f: ProbeFixture) {
  const servers = [f.a.id, f.b.id, f.c.id];
  return {
    statuses: await Promise.all(servers.map((id) => serverStatus(id))),
    schedules: await db()
      .selectFrom('schedules')
      .select(['id', 'server_id', 'name', 'is_processing'])
      .where('server_id', 'in', servers)
      .orderBy('id')
      .execute(),
    tasks: await db()
      .selectFrom('schedule_tasks')
      .innerJoin('schedules', 'schedules.id', 'schedule_tasks.schedule_id')
      .select(['schedule_tasks.id', 'schedule_tasks.schedule_id', 'schedule_tasks.time_offset'])
      .where('schedules.server_id', 'in', servers)
      .orderBy('schedule_tasks.id')
      .execute(),
    backups: await db()
      .selectFrom('backups')
      .select(['id', 'server_id', 'is_locked'])
      .where('server_id', 'in', servers)
      .orderBy('id')
      .execute(),
    subusers: await db()
      .selectFrom('subusers')
      .select(['server_id', 'user_id', 'permissions'])
      .where('server_id', 'in', servers)
      .orderBy('id')
      .execute(),
    key: await db()
      .selectFrom('api_keys')
      .select(['identifier', 'user_id'])
      .where('identifier', '=', f.othersKey.identifier)
      .executeTakeFirst(),
  };
}

const constant = (value: string) => () => value;
/**
 * Fastify answers a path parameter longer than the router's maxParamLength (200, src/app.ts) or
 * one that does not percent-decode itself, before any route, hook or error handler runs: 414 or
 * 400 with its own body `{"error","code","message","statusCode"}` — not the envelope, and no
 * x-request-id. The fix belongs in src/app.ts (Fastify's `frameworkErrors` option, answering
 * FST_ERR_MAX_PARAM_LENGTH and FST_ERR_BAD_URL with the envelope).
 */
const UNKNOWN: Probe[] = [
  { name: 'a random UUID', value: constant(randomUUID()) },
  { name: 'a path traversal', value: constant('..%2f..%2fetc') },
  { name: 'an SQL injection', value: constant(encodeURIComponent("' OR 1=1 --")) },
  { name: 'a 100-character string', value: constant('a'.repeat(100)), early: true },
  {
    name: 'a 300-character string',
    value: constant('a'.repeat(300)),
    early: true,
  },
  {
    name: 'a malformed percent-encoding',
    value: constant('%E0%A4%A'),
    early: true,
    badRequestAllowed: true,
  },
];

/** The placeholder a route's probes replace, and what they replace it with. */
function objectProbes(route: Route): {
  slot: 'backup' | 'schedule' | 'task' | 'user' | 'identifier';
  probes: Probe[];
} {
  if (route.path.includes('{task}')) {
    return {
      slot: 'task',
      probes: [
        { name: "a task of a schedule of the owner's other server", value: (f) => String(f.tasks.b) },
        { name: "a task of a schedule of another user's server", value: (f) => String(f.tasks.c) },
        { name: 'an id that names no task', value: constant('999999999') },
        { name: 'a negative id', value: constant('-1') },
        ...UNKNOWN,
      ],
    };
  }
  if (route.path.includes('{schedule}')) {
    return {
      slot: 'schedule',
      probes: [
        { name: "a schedule of the owner's other server", value: (f) => String(f.schedules.b) },
        { name: "a schedule of another user's server", value: (f) => String(f.schedules.c) },
        { name: 'an id that names no schedule', value: constant('999999999') },
        { name: 'a number too large to be an id', value: constant('99999999999999999999') },
        { name: 'a number that is not an integer', value: constant('1.5') },
        ...UNKNOWN,
      ],
    };
  }
  if (route.path.includes('{backup}')) {
    return {
      slot: 'backup',
      probes: [
        { name: "a backup of the owner's other server", value: (f) => f.backups.b },
        { name: "a backup of another user's server", value: (f) => f.backups.c },
        { name: 'the UUID of the server itself', value: (f) => f.a.id },
        ...UNKNOWN,
      ],
    };
  }
  if (route.path.includes('{user}')) {
    return {
      slot: 'user',
      probes: [
        { name: "a subuser of the owner's other server", value: (f) => f.subusers.b },
        { name: "a subuser of another user's server", value: (f) => f.subusers.c },
        { name: 'the UUID of the server owner (not a subuser)', value: () => users.owner.id },
        ...UNKNOWN,
      ],
    };
  }
  return {
    slot: 'identifier',
    probes: [
      { name: "another user's API key", value: (f) => f.othersKey.identifier },
      {
        name: 'a random identifier',
        value: constant(`ptlc_${randomBytes(16).toString('hex').slice(0, 11)}`),
      },
      ...UNKNOWN,
    ],
  };
}

/** What a caller gets when one ID in the path names nothing they may reach. */
function expectedForProbe(route: Route, caller: Caller, probe: Probe): number {
  if (route.need === 'self' || caller === 'stranger') return 404;
  const lacksPermission =
    caller === 'subuser with every other permission' || caller === 'subuser with no permissions';
  if (lacksPermission && route.permissionBeforeObject && probe.early !== true) return 403;
  return 404;
}

const titleOf = (probe: Probe) => `${probe.name} → 404, and nothing changes`;

async function statusesOf(
  route: Route,
  url: string,
  probe: Probe,
  callers: readonly Caller[] = CALLERS,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const caller of callers) {
    const res = await call(route, url, caller);
    expectWellFormed(res);
    out[caller] = probe.badRequestAllowed && res.statusCode === 400 ? 404 : res.statusCode;
  }
  return out;
}

for (const route of ROUTES.filter((r) => /\{(backup|schedule|task|user|identifier)\}/.test(r.path))) {
  describe(`another object in ${routeName(route)}`, () => {
    let f: ProbeFixture;
    let before: Awaited<ReturnType<typeof probeState>>;
    beforeAll(async () => {
      f = await probeFixture(route.need);
      before = await probeState(f);
    });

    const { slot, probes } = objectProbes(route);
    for (const probe of probes) {
      it(titleOf(probe), async () => {
        const url = urlOf(route, {
          server: f.a.identifier,
          backup: f.backups.a,
          schedule: f.schedules.a,
          task: f.tasks.a,
          user: f.subusers.a,
          identifier: '',
          [slot]: probe.value(f),
        });
        const expected = Object.fromEntries(CALLERS.map((c) => [c, expectedForProbe(route, c, probe)]));
        expect(await statusesOf(route, url, probe)).toEqual(expected);
        expect(await probeState(f)).toEqual(before);
      });
    }

    if (route.need === 'self') {
      it("leaves another user's key working", async () => {
        const res = await app.http.inject({
          method: 'GET',
          url: '/api/client/account',
          headers: bearer(f.othersKey.token),
        });
        expect(res.statusCode).toBe(200);
      });
    }
  });
}

for (const route of ROUTES.filter((r) => r.path.includes('{server}'))) {
  describe(`another server in ${routeName(route)}`, () => {
    let f: ProbeFixture;
    let before: Awaited<ReturnType<typeof probeState>>;
    beforeAll(async () => {
      f = await probeFixture(route.need);
      before = await probeState(f);
    });

    const probes: Probe[] = [
      { name: 'a random identifier', value: constant(randomBytes(4).toString('hex')) },
      { name: 'not hexadecimal', value: constant('zzzzzzzz') },
      ...UNKNOWN,
      // The objects named after it are real, but they are of a server the caller cannot see.
      { name: "another user's server, with its own objects", value: (fx) => fx.c.identifier },
    ];
    for (const probe of probes) {
      it(titleOf(probe), async () => {
        const foreign = probe.name.startsWith("another user's server");
        const url = urlOf(route, {
          server: probe.value(f),
          backup: foreign ? f.backups.c : f.backups.a,
          schedule: foreign ? f.schedules.c : f.schedules.a,
          task: foreign ? f.tasks.c : f.tasks.a,
          user: foreign ? f.subusers.c : f.subusers.a,
          identifier: '',
        });
        // An administrator reaches every server that exists (the matrix above shows what they
        // get); another user's server is out of reach for everyone else.
        const callers = foreign ? CALLERS.filter((c) => c !== 'admin') : CALLERS;
        expect(await statusesOf(route, url, probe, callers)).toEqual(
          Object.fromEntries(callers.map((c) => [c, 404])),
        );
        expect(await probeState(f)).toEqual(before);
      });
    }
  });
}

/** The routes the OpenAPI document lists under /api/client, as `METHOD /path/{param}`. */
async function documentedRoutes(): Promise<string[]> {
  const res = await app.http.inject({ method: 'GET', url: '/api/openapi.json' });
  const doc = res.json<{ paths: Record<string, Record<string, unknown>> }>();
  return Object.entries(doc.paths)
    .filter(([path]) => path === '/api/client' || path.startsWith('/api/client/'))
    .flatMap(([path, operations]) =>
      Object.keys(operations)
        .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    )
    .sort();
}

/**
 * Routes whose answer is a stream that does not end (server-sent events), which `inject` cannot
 * wait for: their access rules (owner, administrator, subusers with and without a permission,
 * stranger, no credentials) are checked over a real socket in test/server-events/server-events.test.ts.
 */
const STREAMED = ['GET /api/client/servers/{server}/events'];

it('covers every client route the API documents', async () => {
  const names = ROUTES.map(routeName);
  expect(new Set(names).size).toBe(names.length);
  expect([...names, ...STREAMED].sort()).toEqual(await documentedRoutes());
});
