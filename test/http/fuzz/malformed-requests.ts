/**
 * A seeded fuzz of the whole HTTP surface, shared by the files of `test/http/fuzz/`: each of them
 * starts a real Aerie holding real data (an owner with servers, backups, subusers, keys and a
 * session; another user with a server of their own), so that authenticated requests reach deep
 * into the routes, and sends the requests of one surface (see `Surface`).
 *
 * Every request starts from a valid call of one route and gets one to three mutations: the query
 * string, the JSON body, the content type, the credentials, the Host and other headers, the path
 * segments, the method. Most go through `inject`; a slice goes over a real socket as raw bytes,
 * with what only a socket can carry (no Host, HTTP/1.0, raw bytes in the target, oversized
 * headers, broken Content-Length or chunking).
 *
 * The requests are one seeded stream over every route: each file walks the whole stream and sends
 * the requests for its surface's routes, so that together the files send each request of a seed
 * once, and a seed names the same requests whichever file sends them.
 *
 * What must hold for every one of them (`problemWith`):
 * - never a 5xx;
 * - every error (status >= 400) is JSON in the envelope `{"errors":[{"code","status","detail"}]}`,
 *   with `status` the response's status as a string (DESIGN.md §4: all endpoints);
 * - an answer within 5 s (a socket that gets none is a failure).
 *
 * Requests that succeed in changing the fixtures (a DELETE of the backup, a restore that marks the
 * server busy, a new key, a logout, …) are undone right after, so the run stays deep throughout.
 *
 * The seed is printed; rerun one with AERIE_FUZZ_SEED=<seed>, and change the size of the stream
 * with AERIE_FUZZ_COUNT=<n>. The counts by status are printed and written to
 * .tmp/fuzz-summary-<surface>.json.
 */
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { InjectOptions } from 'fastify';
import type { User } from '../../../src/users/user.ts';
import { at, insertActivity, userSubject } from '../../support/activity.ts';
import { backupOf, tempDir } from '../../support/archives.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  startTestApp,
  type TestApp,
} from '../../support/harness.ts';
import { sessionCookieOf } from '../../support/session-cookie.ts';

// ---------------------------------------------------------------------------------------------
// Settings.

function envInt(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  }
  return value;
}

export const SEED = envInt('AERIE_FUZZ_SEED', 20261123) >>> 0;
export const COUNT = envInt('AERIE_FUZZ_COUNT', 3000);
/** The share of requests sent as raw bytes over a socket rather than through `inject`. */
const RAW_SHARE = 0.12;
const TIMEOUT_MS = 5000;
/** After this many unanswered requests the run stops: each one costs TIMEOUT_MS. */
const MAX_UNANSWERED = 8;
/** Where a surface's counts are written. */
const summaryFile = (surface: Surface) =>
  fileURLToPath(new URL(`../../../.tmp/fuzz-summary-${surface}.json`, import.meta.url));

// ---------------------------------------------------------------------------------------------
// A small deterministic PRNG (mulberry32) and helpers.

class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [item, weight] of items) {
      roll -= weight;
      if (roll < 0) return item;
    }
    return items[items.length - 1]![0];
  }
  hex(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += '0123456789abcdef'[this.int(16)];
    return out;
  }
  uuid(): string {
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-a${this.hex(3)}-${this.hex(12)}`;
  }
  bytes(length: number): Buffer {
    return Buffer.from(Array.from({ length }, () => this.int(256)));
  }
}

const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

// ---------------------------------------------------------------------------------------------
// The app and its data.

export let app: TestApp;
let port: number;

const SUBUSER_CALLER_PERMISSIONS = ['activity.read', 'backup.read', 'user.read'];

interface Fixture {
  owner: User & { password: string };
  admin: User;
  /** Owns `other.server`: for everything of the owner's, a stranger. */
  stranger: User;
  /** A subuser of the owner's server, with SUBUSER_CALLER_PERMISSIONS, who also makes calls. */
  subCaller: User;
  /** A subuser of the owner's server whom the {user} routes read, change and remove. */
  subTarget: User;
  /** Never a subuser: whom POST …/users adds. */
  invitee: User;
  tokens: { owner: string; admin: string; subuser: string; stranger: string };
  /** API key identifiers: each caller's own, and `victim`, an owner's key for the DELETE route. */
  keys: { owner: string; admin: string; subuser: string; stranger: string; victim: string };
  cookie: string;
  server: { id: string; identifier: string };
  /** A second server of the owner, without backups: the owner's server list has two pages at 1. */
  server2: { id: string; identifier: string };
  backups: { main: string; locked: string; pending: string };
  other: { server: { id: string; identifier: string }; backup: string; subuser: User };
  downloadToken: string;
  archive: string;
}

export let fx: Fixture;

async function login(): Promise<string> {
  const res = await app.http.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { user: fx.owner.username, password: fx.owner.password },
  });
  expect(res.statusCode, res.body).toBe(200);
  return sessionCookieOf(res);
}

/** A backup that was started and never finished (its job is never run): restoring it is a 400. */
async function pendingBackup(): Promise<string> {
  const res = await app.http.inject({
    method: 'POST',
    url: `/api/client/servers/${fx.server.identifier}/backups`,
    headers: bearer(fx.tokens.owner),
    payload: { name: 'pending' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ attributes: { uuid: string } }>().attributes.uuid;
}

async function downloadToken(): Promise<string> {
  const res = await app.http.inject({
    method: 'GET',
    url: `/api/client/servers/${fx.server.identifier}/backups/${fx.backups.main}/download`,
    headers: bearer(fx.tokens.owner),
  });
  expect(res.statusCode, res.body).toBe(200);
  const url = new URL(res.json<{ attributes: { url: string } }>().attributes.url);
  return url.searchParams.get('token') ?? '';
}

/** Starts the app and writes the fixtures (`app` and `fx`). */
export async function startFuzzApp(): Promise<void> {
  // A request that never finishes arriving (a malformed chunked body behind Upgrade headers,
  // which Node's parser stops reading without an error) is answered when its time runs out:
  // 2 s here, so that a 408 comes within the test's patience.
  app = await startTestApp({ env: { AERIE_RATE_LIMIT_PER_MINUTE: '0', AERIE_REQUEST_TIMEOUT_SECONDS: '2' } });
  await app.http.listen({ port: 0, host: '127.0.0.1' });
  port = (app.http.server.address() as AddressInfo).port;

  const [owner, admin, stranger, subCaller, subTarget, invitee, otherSub] = await Promise.all([
    createUser(app),
    createUser(app, { admin: true }),
    createUser(app),
    createUser(app),
    createUser(app),
    createUser(app),
    createUser(app),
  ]);
  const [server, server2, otherServer] = await Promise.all([
    createServer(app, owner),
    createServer(app, owner),
    createServer(app, stranger),
  ]);
  await addSubuser(app, server.id, subTarget, ['activity.read']);
  await addSubuser(app, server.id, subCaller, SUBUSER_CALLER_PERMISSIONS);
  await addSubuser(app, otherServer.id, otherSub, ['activity.read']);
  const archive = (
    await backupOf({ 'server.properties': 'motd=fuzz\n', 'world/level.dat': 'level' }, await tempDir())
  ).archive;
  const main = await importBackup(app, server.id, archive, 'main');
  const locked = await importBackup(app, server.id, archive, 'locked');
  const foreign = await importBackup(app, otherServer.id, archive, 'foreign');
  const [ownerKey, adminKey, subKey, strangerKey, victimKey] = await Promise.all([
    createApiKey(app, owner),
    createApiKey(app, admin),
    createApiKey(app, subCaller),
    createApiKey(app, stranger),
    createApiKey(app, owner, { description: 'victim' }),
  ]);
  fx = {
    owner,
    admin,
    stranger,
    subCaller,
    subTarget,
    invitee,
    tokens: {
      owner: ownerKey.token,
      admin: adminKey.token,
      subuser: subKey.token,
      stranger: strangerKey.token,
    },
    keys: {
      owner: ownerKey.identifier,
      admin: adminKey.identifier,
      subuser: subKey.identifier,
      stranger: strangerKey.identifier,
      victim: victimKey.identifier,
    },
    cookie: '',
    server: { id: server.id, identifier: server.identifier },
    server2: { id: server2.id, identifier: server2.identifier },
    backups: { main: main.uuid, locked: locked.uuid, pending: '' },
    other: {
      server: { id: otherServer.id, identifier: otherServer.identifier },
      backup: foreign.uuid,
      subuser: otherSub,
    },
    downloadToken: '',
    archive,
  };
  fx.cookie = await login();
  fx.backups.pending = await pendingBackup();
  fx.downloadToken = await downloadToken();

  // Two pages of feed at the default page size, for the owner and for the server: every feed
  // request builds pagination links.
  const events = [
    'auth:login',
    'auth:fail',
    'server:backup.start',
    'server:backup.complete',
    'user:api-key.create',
  ];
  await insertActivity(
    app,
    Array.from({ length: 30 }, (_, i) =>
      at(i, String(i), [userSubject(owner), { type: 'server', id: server.id }], {
        actorId: i % 3 === 0 ? null : owner.id,
        event: events[i % events.length]!,
        ip: i % 2 === 0 ? '203.0.113.7' : '2001:db8::1',
      }),
    ),
  );
  await repair();
}

/**
 * Puts the fixtures back as they were after a request that may have changed them: server states,
 * queued jobs, backups (a deleted one comes back under a new id), API keys, subusers, the session.
 */
export async function repair(): Promise<void> {
  const db = app.db.kysely;
  const servers = [fx.server.id, fx.server2.id, fx.other.server.id];
  await db.deleteFrom('jobs').execute();
  await db.updateTable('servers').set({ status: null }).where('id', 'in', servers).execute();

  const keep = [fx.backups.main, fx.backups.locked, fx.backups.pending, fx.other.backup];
  await db.deleteFrom('backups').where('server_id', 'in', servers).where('id', 'not in', keep).execute();
  const present = new Set(
    (await db.selectFrom('backups').select('id').where('id', 'in', keep).execute()).map((r) => r.id),
  );
  if (!present.has(fx.backups.main)) {
    fx.backups.main = (await importBackup(app, fx.server.id, fx.archive, 'main')).uuid;
    fx.downloadToken = await downloadToken();
  }
  if (!present.has(fx.backups.locked))
    fx.backups.locked = (await importBackup(app, fx.server.id, fx.archive, 'locked')).uuid;
  if (!present.has(fx.other.backup))
    fx.other.backup = (await importBackup(app, fx.other.server.id, fx.archive, 'foreign')).uuid;
  if (!present.has(fx.backups.pending)) {
    fx.backups.pending = await pendingBackup();
    await db.deleteFrom('jobs').execute();
  }
  await db
    .updateTable('backups')
    .set({ is_locked: 0 })
    .where('id', 'in', [fx.backups.main, fx.backups.pending, fx.other.backup])
    .execute();
  await db.updateTable('backups').set({ is_locked: 1 }).where('id', '=', fx.backups.locked).execute();

  const owners: Record<keyof Fixture['keys'], User> = {
    owner: fx.owner,
    admin: fx.admin,
    subuser: fx.subCaller,
    stranger: fx.stranger,
    victim: fx.owner,
  };
  const userIds = [fx.owner.id, fx.admin.id, fx.subCaller.id, fx.stranger.id];
  await db
    .deleteFrom('api_keys')
    .where('user_id', 'in', userIds)
    .where('identifier', 'not in', Object.values(fx.keys))
    .execute();
  const keys = new Set(
    (await db.selectFrom('api_keys').select('identifier').where('user_id', 'in', userIds).execute()).map(
      (r) => r.identifier,
    ),
  );
  for (const slot of Object.keys(owners) as (keyof Fixture['keys'])[]) {
    if (keys.has(fx.keys[slot])) continue;
    const created = await createApiKey(app, owners[slot]);
    fx.keys[slot] = created.identifier;
    if (slot !== 'victim') fx.tokens[slot] = created.token;
  }

  const expected: [string, User, string[]][] = [
    [fx.server.id, fx.subTarget, ['activity.read']],
    [fx.server.id, fx.subCaller, SUBUSER_CALLER_PERMISSIONS],
    [fx.other.server.id, fx.other.subuser, ['activity.read']],
  ];
  const rows = await db
    .selectFrom('subusers')
    .select(['id', 'server_id', 'user_id', 'permissions'])
    .where('server_id', 'in', servers)
    .execute();
  const same = (a: string[], b: string[]) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
  for (const row of rows) {
    if (!expected.some(([server, user]) => row.server_id === server && row.user_id === user.id))
      await db.deleteFrom('subusers').where('id', '=', row.id).execute();
  }
  for (const [server, user, permissions] of expected) {
    const row = rows.find((r) => r.server_id === server && r.user_id === user.id);
    if (row === undefined || !same(JSON.parse(row.permissions) as string[], permissions))
      await addSubuser(app, server, user, permissions);
  }

  const session = await app.http.inject({
    method: 'GET',
    url: '/api/client/account',
    headers: { cookie: fx.cookie },
  });
  if (session.statusCode !== 200) fx.cookie = await login();
}

// ---------------------------------------------------------------------------------------------
// Routes, and the valid call each mutation starts from.

type QueryFamily = 'servers' | 'feed' | 'backups' | 'download' | 'none';

/** The parts of the HTTP surface: one file of `test/http/fuzz/` each, named after it. */
export type Surface = 'activity-feed' | 'api-keys' | 'account-auth' | 'servers-subusers' | 'backups';

interface RouteSpec {
  method: string;
  /** With {server}, {backup}, {user} and {key} placeholders. */
  path: string;
  query: QueryFamily;
  /** Which file sends the requests made from this route. */
  surface: Surface;
  body?: () => Record<string, unknown>;
  weight: number;
  /** No credentials needed (or none taken). */
  anonymous?: boolean;
}

const SERVER = '/api/client/servers/{server}';
const ROUTES: RouteSpec[] = [
  { method: 'GET', path: '/api/client', query: 'servers', surface: 'servers-subusers', weight: 5 },
  { method: 'GET', path: '/api/client/account', query: 'none', surface: 'account-auth', weight: 2 },
  { method: 'GET', path: '/api/client/activity', query: 'feed', surface: 'activity-feed', weight: 7 },
  { method: 'GET', path: '/api/client/account/activity', query: 'feed', surface: 'activity-feed', weight: 5 },
  { method: 'GET', path: '/api/client/account/api-keys', query: 'none', surface: 'api-keys', weight: 2 },
  {
    method: 'POST',
    path: '/api/client/account/api-keys',
    query: 'none',
    surface: 'api-keys',
    body: () => ({ description: 'fuzz', allowed_ips: ['203.0.113.0/24'] }),
    weight: 5,
  },
  {
    method: 'DELETE',
    path: '/api/client/account/api-keys/{key}',
    query: 'none',
    surface: 'api-keys',
    weight: 3,
  },
  { method: 'GET', path: SERVER, query: 'none', surface: 'servers-subusers', weight: 3 },
  { method: 'GET', path: `${SERVER}/activity`, query: 'feed', surface: 'activity-feed', weight: 6 },
  { method: 'GET', path: `${SERVER}/backups`, query: 'backups', surface: 'backups', weight: 5 },
  {
    method: 'POST',
    path: `${SERVER}/backups`,
    query: 'none',
    surface: 'backups',
    body: () => ({ name: 'fuzz', ignored: 'logs\n*.tmp', is_locked: false }),
    weight: 4,
  },
  { method: 'GET', path: `${SERVER}/backups/{backup}`, query: 'none', surface: 'backups', weight: 3 },
  {
    method: 'GET',
    path: `${SERVER}/backups/{backup}/download`,
    query: 'none',
    surface: 'backups',
    weight: 2,
  },
  { method: 'POST', path: `${SERVER}/backups/{backup}/lock`, query: 'none', surface: 'backups', weight: 2 },
  { method: 'DELETE', path: `${SERVER}/backups/{backup}`, query: 'none', surface: 'backups', weight: 3 },
  {
    method: 'POST',
    path: `${SERVER}/backups/{backup}/restore`,
    query: 'none',
    surface: 'backups',
    body: () => ({ truncate: false }),
    weight: 5,
  },
  { method: 'GET', path: `${SERVER}/users`, query: 'none', surface: 'servers-subusers', weight: 2 },
  {
    method: 'POST',
    path: `${SERVER}/users`,
    query: 'none',
    surface: 'servers-subusers',
    body: () => ({ email: fx.invitee.email, permissions: ['backup.read'] }),
    weight: 4,
  },
  { method: 'GET', path: `${SERVER}/users/{user}`, query: 'none', surface: 'servers-subusers', weight: 2 },
  {
    method: 'POST',
    path: `${SERVER}/users/{user}`,
    query: 'none',
    surface: 'servers-subusers',
    body: () => ({ permissions: ['activity.read', 'backup.read'] }),
    weight: 3,
  },
  { method: 'DELETE', path: `${SERVER}/users/{user}`, query: 'none', surface: 'servers-subusers', weight: 2 },
  // Each login costs a scrypt hash: few of them.
  {
    method: 'POST',
    path: '/auth/login',
    query: 'none',
    surface: 'account-auth',
    body: () => ({ user: fx.owner.username, password: fx.owner.password }),
    weight: 1,
    anonymous: true,
  },
  { method: 'POST', path: '/auth/logout', query: 'none', surface: 'account-auth', weight: 1 },
  {
    method: 'GET',
    path: '/api/openapi.json',
    query: 'none',
    surface: 'account-auth',
    weight: 0.3,
    anonymous: true,
  },
  {
    method: 'GET',
    path: '/download/backup',
    query: 'download',
    surface: 'backups',
    weight: 1.5,
    anonymous: true,
  },
  // Nothing lives here.
  { method: 'GET', path: '/api/client/servers', query: 'none', surface: 'servers-subusers', weight: 0.5 },
  { method: 'GET', path: `${SERVER}/files/list`, query: 'none', surface: 'servers-subusers', weight: 0.5 },
  { method: 'GET', path: '/api/application/users', query: 'none', surface: 'account-auth', weight: 0.5 },
  { method: 'GET', path: '/', query: 'none', surface: 'account-auth', weight: 0.3, anonymous: true },
];

// ---------------------------------------------------------------------------------------------
// Ingredients of the mutations. Strings that go into a URL are written as they go on the wire
// (percent-encodings included); `inject` encodes what is not ASCII, the raw transport too unless
// the raw mutation is about raw bytes.

// The tables below are data, kept compact: `prettier-ignore` keeps them several to a line.

// prettier-ignore
const NUMBERS = [
  '0', '1', '2', '-1', '-0', '+1', '01', '0x10', '0X1', '1e2', '1E1', '0b1', '0o7', ' 1', '1 ', '%201', '1%20',
  '%091', '1.0', '1.5', '.5', '1,2', '1_0', 'NaN', 'Infinity', '-Infinity', '2147483647', '2147483648',
  '4294967297', '9007199254740993', '99999999999999999999999', '1'.repeat(400), '١', '１', 'true', 'null', '',
  '%31', '1%00', '%2B1', '1e-1',
];
// prettier-ignore
const STRINGS = [
  '', ' ', 'a', 'auth', 'AUTH:LOGIN', 'api-key', '%', '%%', '_', '%25', '%5F', '\\', "'", '"', '%22',
  '%27%20OR%201%3D1--', '%00', 'a%00b', '%ff', '%fe%ff', '%c0%80', '%e0%a4%a', '%zz', '%0a', '%0d%0a',
  '%F0%9F%92%A5', 'é', '💥', 'a'.repeat(192), 'x'.repeat(5000), '127.0.0.1', '203.0.113', '::1', '2001:DB8',
  'system', 'SYSTEM', '00000000-0000-0000-0000-000000000000', '*', '.*', '[]', '{}', '%3Cscript%3E',
  'timestamp', '-timestamp', '+timestamp', 'timestamp,-timestamp', '--timestamp', 'id', 'owner', 'admin',
  'all', 'subuser', 'OWNER', '%2e%2e%2f', '../../etc/passwd',
];
// prettier-ignore
const QUERY_KEYS: Record<QueryFamily, string[]> = {
  servers: ['type', 'per_page', 'page', 'filter[name]', 'include'],
  feed: [
    'filter[event]', 'filter[ip]', 'filter[actor_id]', 'sort', 'per_page', 'page', 'filter%5Bevent%5D',
    'filter%5bip%5d',
  ],
  backups: ['per_page', 'page', 'sort'],
  download: ['token'],
  none: ['page', 'include'],
};
// prettier-ignore
const ODD_KEYS = [
  'filter[foo]', 'filter[]', 'filter', 'filter[event][x]', 'filter[[event]]', 'filter[event', 'filter]event[',
  'filter[ event]', 'filter[EVENT]', 'filter[event]x', 'filter[event]]', 'page[]', 'page[0]', 'per_page[]',
  'per_page[x]', '%70age', 'PAGE', 'per-page', '', '%00', '%ff', '__proto__', '__proto__[admin]',
  'constructor', 'constructor[prototype][admin]', 'hasOwnProperty', 'toString', 'a'.repeat(300), '💥',
  'token', 'type', 'sort',
];
// prettier-ignore
const WHOLE_QUERIES = [
  '&&&', '=', '==', '&=&', '?', '??page=1', '%', '%%%', 'page=1;per_page=2', ';', '&page', 'page=1&', 'page',
  'page=', `filter[event]=${'%00'.repeat(100)}`, `q=${'a'.repeat(8000)}`, 'page=1&page=2&page=3',
  'per_page=1&per_page=100', 'filter[event]=a&filter[event]=b', 'filter[event][]=a',
  'sort=timestamp&sort=-timestamp', 'a[b][c][d][e][f][g][h][i][j][k]=1', `${'a['.repeat(100)}=1`, '+', '%2B',
  'page=%', 'page=%2',
];
// prettier-ignore
const ODD_VALUES: unknown[] = [
  null, true, false, 0, -1, 1.5, 1e308, '', ' ', '\u0000', 'x'.repeat(600), 'é'.repeat(200), '💥', '\ud800',
  [], [null], [[]], {}, { a: 1 }, ['a'], '1', 'true', 'null', JSON.parse(deepArray(64)) as unknown,
];
/** Values that each field of a body is most likely to trip over. */
// prettier-ignore
const FIELD_VALUES: Record<string, unknown[]> = {
  description: ['x'.repeat(500), 'x'.repeat(501), '\u0000', '%00', 'é'.repeat(500), '💥'.repeat(300)],
  allowed_ips: [
    ['999.1.1.1'], ['1.1.1.1/33'], ['::1/129'], ['fe80::1%eth0'], ['1.1.1.1/-1'], [''], [' 1.1.1.1'],
    ['a'.repeat(1000)], ['0.0.0.0/0'], ['::ffff:1.2.3.4'], ['01.1.1.1'], ['1.1.1'], ['1.1.1.1/ 8'],
    ['1.1.1.1', '1.1.1.1'], Array.from({ length: 51 }, (_, i) => `10.0.0.${i}`), ['1.1.1.1\n2.2.2.2'], ['::'],
    ['[::1]'], ['1.1.1.1/08'], ['1.1.1.1/32/32'], [1], [null], '1.1.1.1',
  ],
  name: ['x'.repeat(191), 'x'.repeat(192), '\u0000', 'é'.repeat(191), '../../etc', '<b>'],
  ignored: ['!', '**', '/', '\\', '[', '\u0000', '\n'.repeat(1000), 'a\r\nb', '*'.repeat(5000), '!*\n*'],
  is_locked: ['true', 1, 0, 'false'],
  truncate: ['true', 1, 0, 'false', 'yes'],
  email: [
    'a@b', 'not-an-email', '', ' ', `${'x'.repeat(300)}@example.com`, 'ADMIN@EXAMPLE.COM', '%00@x.y',
    'é@example.com', '@', 'a@@b.c',
  ],
  permissions: [
    ['nope'], ['backup.*'], ['*'], [''], ['backup.read', 'backup.read'], ['backup.read', 1], [null],
    Array.from({ length: 1000 }, () => 'backup.read'), 'backup.read', ['BACKUP.READ'], ['backup.read '],
  ],
  user: ['', 'x'.repeat(192), '%', 'admin', '\u0000', ' OR 1=1'],
  password: ['', 'x'.repeat(4097), '\u0000', 'correct horse battery'],
};
// prettier-ignore
const RAW_BODIES: string[] = [
  '', ' ', '\n', 'null', 'true', '0', '-1', '"str"', '[]', '[{}]', '{', '}', '{"', '{"a":}', "{'a':1}",
  '{"a":1,}', '{a:1}', '\ufeff{}', '{}garbage', '{}{}', 'NaN', '1e999', '{"__proto__":{"admin":true}}',
  '{"a":{"__proto__":{"x":1}}}', '{"constructor":{"prototype":{"admin":true}}}', '{"a":"\\ud800"}',
  '{"a":"\\u0000"}', '\u0000', '['.repeat(10000), deepArray(5000), deepObject(2000),
  '{"truncate":true,"truncate":"x"}', '"\\ud83d"', 'a=1&b=2', '<xml/>', '{"name":"\\"}',
  // Over the 256 KiB body limit; under it but far over any field's limit.
  `{"description":"${'x'.repeat(300 * 1024)}"}`, `"${'x'.repeat(200 * 1024)}"`,
  `{"allowed_ips":[${Array.from({ length: 20000 }, () => '"1.1.1.1"').join(',')}]}`,
];
// prettier-ignore
const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16',
  'application/json; charset=latin1', 'application/json;charset=', 'APPLICATION/JSON',
  'Application/Json ; charset=UTF-8', 'application/vnd.pterodactyl.v1+json', 'application/problem+json',
  'application/json, text/plain', 'application/jsonx', 'application/json/x', 'application/', '/json', 'json',
  'text/plain', 'text/json', 'text/html', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
  'multipart/form-data', 'application/octet-stream', '*/*', ';', '', ' ', 'application/json;;;;',
  'application/json; q=0', 'a'.repeat(1000), 'application/json; charset="utf-8"', 'application/+json',
];
// prettier-ignore
const ACCEPTS = [
  '*/*', 'application/json', 'text/html', 'application/xml', 'application/json;q=0', '*/*;q=0', ';', '',
  'image/png', 'application/vnd.pterodactyl.v1+json', 'text/event-stream', 'a'.repeat(2000), ',,,', '*/;q=x',
];
// prettier-ignore
const HOSTS = [
  ' ', '[::1', '[::1]:80', 'a b', 'évil', 'x:99999', 'x:-1', ':80', '@', 'user@host', 'localhost:80/path',
  'host?x', 'host#x', '..', 'a'.repeat(300), '127.0.0.1:0', 'localhost, evil', '%00', '[fe80::1%25eth0]', 'xn--',
  '[', ']', 'localhost:', 'http://x',
];
// prettier-ignore
const MISC_HEADERS: [string, string][] = [
  ['x-forwarded-for', 'garbage, 999.1.1.1'], ['x-forwarded-for', ''], ['x-forwarded-host', 'évil'],
  ['x-forwarded-proto', 'gopher'], ['forwarded', 'for=unknown;proto=x'], ['x-http-method-override', 'DELETE'],
  ['content-encoding', 'gzip'], ['content-encoding', 'br'], ['accept-encoding', 'gzip;q=x'],
  ['accept-language', '*;q=2'], ['user-agent', 'a'.repeat(1000)], ['user-agent', ''],
  ['origin', 'http://evil.example'], ['origin', 'null'], ['origin', '::'], ['range', 'bytes=garbage'],
  ['if-none-match', '*'], ['if-modified-since', 'yesterday'], ['x-request-id', '../../etc'],
  ['cookie', 'aerie_session=%'], ['cookie', `aerie_session=${'a'.repeat(5000)}`], ['cookie', ';;;;='],
  ['connection', 'upgrade'],
];
const METHODS = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'SEARCH',
  'PROPFIND',
  'get',
];

/** What goes in place of an ID in a path: other objects' IDs, someone else's, and garbage. */
function segments(rng: Rng): string[] {
  // prettier-ignore
  return [
    rng.hex(8), rng.uuid(), `ptlc_${rng.hex(11)}`, fx.other.server.identifier, fx.other.server.id, fx.server.id,
    fx.server.identifier.toUpperCase(), fx.server.id.toUpperCase(), fx.server2.identifier, fx.backups.main,
    fx.backups.locked, fx.backups.pending, fx.other.backup, fx.subTarget.id, fx.other.subuser.id, fx.owner.id,
    fx.admin.id, fx.keys.victim, fx.keys.stranger, fx.keys.owner, '..', '.', '%2e%2e', '%2E', '%2F', 'a%2Fb',
    '..%2F..%2Fetc', '%00', '%', '%zz', '%e0%a4%a', '%ff', '%c0%af', 'a'.repeat(64), 'a'.repeat(65),
    'a'.repeat(201), 'a'.repeat(5000), '%F0%9F%92%A5', 'é', '%27%20OR%201=1--', '1', '-1', '0', 'null',
    'undefined', '__proto__', 'constructor', 'toString', '*', '%20', 'x%20y', '~', ';', 'a;b=c', '%3B', '%23',
    '%3F', '%5C', `${fx.server.identifier}%00`, `${fx.backups.main} `,
  ];
}

// ---------------------------------------------------------------------------------------------
// Requests.

interface Draft {
  route: string;
  method: string;
  /** Path segments as they go on the wire, without the slashes between them. */
  segments: string[];
  /** Pieces of the query string, joined with `separator`; or one whole raw query. */
  query: string[];
  separator: string;
  headers: Record<string, string>;
  body: Buffer | null;
  mutations: string[];
}

interface RawShape {
  method: string;
  target: Buffer;
  version: string;
  /** Header lines without the line ending, Host and Connection included. */
  lines: Buffer[];
  /** `auto`: a Content-Length for the body (none when there is none). */
  contentLength: 'auto' | 'none' | string[];
  body: Buffer;
  eol: string;
  /** Bytes written after the request (a pipelined request, garbage). */
  trailer: Buffer;
  /**
   * End our side of the connection after the request: only for a request the server cannot know
   * to be complete (a body shorter than announced). Node closes a connection the client has ended
   * without waiting for the answer to what it already read.
   */
  halfClose: boolean;
}

interface FuzzRequest {
  transport: 'inject' | 'raw';
  route: string;
  surface: Surface;
  method: string;
  /** The target as sent (for the raw transport, as far as it is text). */
  target: string;
  headers: Record<string, string>;
  body: Buffer | null;
  raw: Buffer | null;
  halfClose: boolean;
  mutations: string[];
}

function callerHeaders(rng: Rng): { headers: Record<string, string>; label: string | null } {
  const caller = rng.weighted([
    ['owner', 70],
    ['owner (cookie)', 10],
    ['admin', 8],
    ['subuser', 7],
    ['stranger', 5],
  ] as const);
  switch (caller) {
    case 'owner':
      return { headers: bearer(fx.tokens.owner), label: null };
    case 'owner (cookie)':
      return { headers: { cookie: fx.cookie }, label: 'caller: owner by cookie' };
    default:
      return { headers: bearer(fx.tokens[caller]), label: `caller: ${caller}` };
  }
}

function validQuery(rng: Rng, family: QueryFamily): string[] {
  if (rng.chance(0.4)) return [];
  switch (family) {
    case 'servers':
      return [rng.pick(['type=owner', 'type=admin', 'per_page=1', 'page=2', 'per_page=1&page=2'])];
    case 'feed':
      return [rng.pick(['per_page=5', 'page=2', 'sort=timestamp', 'filter[event]=auth', 'filter[ip]=203'])];
    case 'backups':
      return [rng.pick(['per_page=1', 'page=2', 'per_page=1&page=3'])];
    case 'download':
      return [`token=${fx.downloadToken}`];
    case 'none':
      return [];
  }
}

function base(rng: Rng, route: RouteSpec): Draft {
  const draft: Draft = {
    route: `${route.method} ${route.path}`,
    method: route.method,
    segments: route.path
      .split('/')
      .slice(1)
      .map((segment) => {
        switch (segment) {
          case '{server}':
            return rng.chance(0.8) ? fx.server.identifier : fx.server.id;
          case '{backup}':
            return rng.weighted([
              [fx.backups.main, 8],
              [fx.backups.locked, 1],
              [fx.backups.pending, 1],
            ] as const);
          case '{user}':
            return rng.chance(0.8) ? fx.subTarget.id : fx.subCaller.id;
          case '{key}':
            return fx.keys.victim;
          default:
            return segment;
        }
      }),
    query: validQuery(rng, route.query),
    separator: '&',
    headers: {},
    body: null,
    mutations: [],
  };
  if (route.path === '/') draft.segments = [''];
  if (!route.anonymous) {
    const { headers, label } = callerHeaders(rng);
    Object.assign(draft.headers, headers);
    if (label !== null) draft.mutations.push(label);
  }
  if (route.body !== undefined) {
    draft.headers['content-type'] = 'application/json';
    draft.body = Buffer.from(JSON.stringify(route.body()));
  }
  return draft;
}

function jsonBody(draft: Draft): Record<string, unknown> | null {
  if (draft.body === null) return null;
  try {
    const value: unknown = JSON.parse(draft.body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function setBody(draft: Draft, body: string | Buffer, label: string): void {
  draft.body = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  draft.headers['content-type'] ??= 'application/json';
  draft.mutations.push(label);
}

const short = (value: string, max = 40) =>
  value.length > max ? `${value.slice(0, max)}…(${value.length})` : value;

type Mutator = (rng: Rng, draft: Draft, route: RouteSpec) => void;

const MUTATORS: Record<string, { weight: number; apply: Mutator }> = {
  query: {
    weight: 6,
    apply(rng, draft, route) {
      const mode = rng.int(10);
      if (mode === 0) {
        const whole = rng.pick(WHOLE_QUERIES);
        draft.query = [whole];
        draft.mutations.push(`query: ${short(whole)}`);
        return;
      }
      if (mode === 1 && draft.query.length > 0) {
        draft.query.push(draft.query[0]!);
        draft.mutations.push('query: a parameter twice');
        return;
      }
      if (mode === 2) draft.separator = rng.pick([';', '&&', '&amp;']);
      const n = 1 + rng.int(3);
      for (let i = 0; i < n; i++) {
        const key = rng.chance(0.7) ? rng.pick(QUERY_KEYS[route.query]) : rng.pick(ODD_KEYS);
        const value = rng.chance(0.5) ? rng.pick(NUMBERS) : rng.pick(STRINGS);
        const piece = rng.weighted([
          [`${key}=${value}`, 8],
          [key, 1],
          [`${key}=`, 1],
          [`=${value}`, 1],
        ] as const);
        draft.query.push(piece);
        draft.mutations.push(`query: ${short(piece)}`);
      }
    },
  },
  body: {
    weight: 5,
    apply(rng, draft) {
      const object = jsonBody(draft);
      const mode = object === null ? 4 + rng.int(3) : rng.int(7);
      const fields = object === null ? [] : Object.keys(object);
      if (object !== null && fields.length > 0 && mode <= 3) {
        const field = rng.pick(fields);
        if (mode === 0) object[field] = rng.pick(ODD_VALUES);
        else if (mode === 1) delete object[field];
        else if (mode === 2)
          object[rng.pick(['extra', 'admin', 'root_admin', 'id', 'user_id', '', '💥'])] = 1;
        else object[field] = rng.pick(FIELD_VALUES[field] ?? ODD_VALUES);
        const label = mode === 1 ? `body: without ${field}` : `body: ${short(JSON.stringify(object), 60)}`;
        setBody(draft, JSON.stringify(object), label);
        return;
      }
      if (mode === 4 || mode === 6) {
        const raw = rng.pick(RAW_BODIES);
        setBody(draft, raw, `body: ${short(JSON.stringify(raw), 30)}`);
      } else if (mode === 5) {
        setBody(draft, rng.bytes(1 + rng.int(64)), 'body: random bytes');
      } else {
        const wrapped = rng.chance(0.5) ? [object ?? {}] : { data: object ?? {} };
        setBody(draft, JSON.stringify(wrapped), `body: ${short(JSON.stringify(wrapped), 60)}`);
      }
    },
  },
  'content type': {
    weight: 2,
    apply(rng, draft) {
      if (rng.chance(0.15)) {
        delete draft.headers['content-type'];
        draft.mutations.push('content-type: none');
      } else {
        const type = rng.pick(CONTENT_TYPES);
        draft.headers['content-type'] = type;
        draft.mutations.push(`content-type: ${short(type)}`);
      }
      if (draft.body === null && rng.chance(0.5)) draft.body = Buffer.from('{}');
    },
  },
  accept: {
    weight: 1,
    apply(rng, draft) {
      const accept = rng.pick(ACCEPTS);
      draft.headers.accept = accept;
      draft.mutations.push(`accept: ${short(accept)}`);
    },
  },
  credentials: {
    weight: 3,
    apply(rng, draft) {
      const token = fx.tokens.owner;
      const cookie = fx.cookie;
      const forms: [string, string][] = [
        ['authorization', `bearer ${token}`],
        ['authorization', `BEARER ${token}`],
        ['authorization', `Bearer  ${token}`],
        ['authorization', `Bearer ${token} `],
        ['authorization', `Bearer\t${token}`],
        ['authorization', `Bearer ${token} extra`],
        ['authorization', `Bearer ${token.slice(0, -1)}`],
        ['authorization', `Bearer ${token}x`],
        ['authorization', `Bearer ${token.slice(0, 16)}`],
        ['authorization', `Bearer ${token.slice(16)}`],
        ['authorization', `Bearer ${token.toUpperCase()}`],
        ['authorization', `Bearer ${fx.keys.owner}${'0'.repeat(32)}`],
        ['authorization', 'Bearer'],
        ['authorization', 'Bearer '],
        ['authorization', ''],
        ['authorization', ' '],
        ['authorization', 'Basic dXNlcjpwYXNz'],
        ['authorization', `Token ${token}`],
        ['authorization', token],
        ['authorization', 'Bearer ptlc_'],
        ['authorization', `Bearer ptlc_${'a'.repeat(43)}`],
        ['authorization', `Bearer ${'a'.repeat(10000)}`],
        ['authorization', `Bearer ${token},Bearer ${token}`],
        ['authorization', 'Bearer null'],
        ['authorization', 'Bearer 💥'],
        ['authorization', `Bearer ${encodeURIComponent('💥')}`],
        ['authorization', 'Digest username="x"'],
        ['cookie', `aerie_session=${rng.hex(64)}`],
        ['cookie', 'aerie_session='],
        ['cookie', 'aerie_session'],
        ['cookie', `aerie_session=x; ${cookie}`],
        ['cookie', `${cookie}; aerie_session=x`],
        ['cookie', `${cookie}x`],
        ['cookie', cookie.toUpperCase()],
        ['cookie', `${cookie}`],
        ['none', ''],
      ];
      const [name, value] = rng.pick(forms);
      delete draft.headers.authorization;
      delete draft.headers.cookie;
      if (name !== 'none') draft.headers[name] = value;
      if (name === 'cookie' && rng.chance(0.3)) {
        draft.headers.origin = rng.pick(['http://evil.example', 'null', 'http://localhost:80', '::']);
        draft.mutations.push(`origin: ${draft.headers.origin}`);
      }
      draft.mutations.push(name === 'none' ? 'no credentials' : `${name}: ${short(value, 30)}`);
    },
  },
  host: {
    weight: 1.5,
    apply(rng, draft) {
      const host = rng.pick(HOSTS);
      draft.headers.host = host;
      draft.mutations.push(`host: ${short(host)}`);
    },
  },
  'path segment': {
    weight: 4,
    apply(rng, draft) {
      const slots = draft.segments
        .map((segment, i) => ({ segment, i }))
        .filter(({ segment }) => !/^(api|client|servers|backups|users|account|api-keys)$/.test(segment));
      const pos = slots.length > 0 && rng.chance(0.8) ? rng.pick(slots).i : rng.int(draft.segments.length);
      const value = rng.pick(segments(rng));
      draft.segments[pos] = value;
      draft.mutations.push(`segment ${pos}: ${short(value)}`);
    },
  },
  'path shape': {
    weight: 2,
    apply(rng, draft) {
      const mode = rng.int(7);
      const pos = rng.int(draft.segments.length + 1);
      if (mode === 0) {
        draft.segments.push('');
        draft.mutations.push('path: trailing slash');
      } else if (mode === 1) {
        draft.segments.splice(pos, 0, '');
        draft.mutations.push('path: double slash');
      } else if (mode === 2) {
        const extra = rng.pick([
          'x',
          '..',
          '.',
          '%2e%2e',
          'restore',
          'download',
          'lock',
          '%00',
          'a'.repeat(300),
        ]);
        draft.segments.splice(pos, 0, extra);
        draft.mutations.push(`path: extra segment ${short(extra)}`);
      } else if (mode === 3 && draft.segments.length > 1) {
        draft.segments.splice(Math.min(pos, draft.segments.length - 1), 1);
        draft.mutations.push('path: a segment left out');
      } else if (mode === 4) {
        const i = Math.min(pos, draft.segments.length - 1);
        draft.segments[i] = draft.segments[i]!.toUpperCase();
        draft.mutations.push(`path: segment ${i} upper case`);
      } else if (mode === 5) {
        const i = Math.min(pos, draft.segments.length - 1);
        draft.segments[i] = `${draft.segments[i]!};${rng.pick(['x=1', 'jsessionid=1', ''])}`;
        draft.mutations.push(`path: matrix parameter on segment ${i}`);
      } else {
        draft.segments = rng.pick([
          ['api', 'client', ''],
          ['api', 'client', 'servers', ''],
          ['API', 'client'],
          ['api%2Fclient'],
        ]);
        draft.mutations.push(`path: /${draft.segments.join('/')}`);
      }
    },
  },
  method: {
    weight: 1.5,
    apply(rng, draft) {
      draft.method = rng.pick(METHODS);
      draft.mutations.push(`method: ${draft.method}`);
    },
  },
  header: {
    weight: 1.5,
    apply(rng, draft) {
      const [name, value] = rng.pick(MISC_HEADERS);
      draft.headers[name] =
        name === 'cookie' && draft.headers.cookie !== undefined ? `${draft.headers.cookie}; ${value}` : value;
      draft.mutations.push(`${name}: ${short(value)}`);
    },
  },
};
const MUTATOR_WEIGHTS = Object.entries(MUTATORS).map(([name, m]) => [name, m.weight] as const);

function targetOf(draft: Draft): string {
  const query = draft.query.join(draft.separator);
  return `/${draft.segments.join('/')}${query === '' ? '' : `?${query}`}`;
}

/** Percent-encodes, as UTF-8, whatever is not printable ASCII (and leaves `%` alone). */
function asciiTarget(target: string): string {
  return target.replace(/[^\x21-\x7e]/gu, (ch) => encodeURIComponent(ch));
}

// Raw-socket mutations: what `inject` cannot send.
const RAW_MUTATORS: Record<string, (rng: Rng, shape: RawShape) => string> = {
  'no Host': (_rng, shape) => {
    shape.lines = shape.lines.filter((l) => !/^host:/i.test(l.toString('latin1')));
    return 'raw: no Host';
  },
  'HTTP/1.0': (rng, shape) => {
    shape.version = 'HTTP/1.0';
    if (rng.chance(0.7)) shape.lines = shape.lines.filter((l) => !/^host:/i.test(l.toString('latin1')));
    return `raw: HTTP/1.0${shape.lines.some((l) => /^host:/i.test(l.toString('latin1'))) ? '' : ' without Host'}`;
  },
  'bad Host': (rng, shape) => {
    const host = rng.pick([...HOSTS, '', 'é', '\u0000', 'a\tb']);
    const bytes = Buffer.from(host, rng.chance(0.5) ? 'utf8' : 'latin1');
    const index = shape.lines.findIndex((l) => /^host:/i.test(l.toString('latin1')));
    const line = Buffer.concat([Buffer.from('Host: '), bytes]);
    if (index >= 0) shape.lines[index] = line;
    else shape.lines.push(line);
    if (rng.chance(0.3)) shape.lines.push(Buffer.from('Host: second.example'));
    return `raw: Host ${JSON.stringify(short(host))}`;
  },
  'HTTP version': (rng, shape) => {
    shape.version = rng.pick([
      'HTTP/1.2',
      'HTTP/2.0',
      'HTTP/0.9',
      'http/1.1',
      'HTTP/1',
      'HTTP/11',
      'HTTP/1.1 x',
      '',
    ]);
    return `raw: version ${JSON.stringify(shape.version)}`;
  },
  'bytes in target': (rng, shape) => {
    const bytes = rng.pick([
      [0x00],
      [0xff],
      [0xc3, 0xa9],
      [0x7f],
      [0x09],
      [0x01],
      [0xf0, 0x9f, 0x92, 0xa5],
      [0x20],
      [0x23],
      [0x0d],
    ]);
    const pos = 1 + rng.int(shape.target.length);
    shape.target = Buffer.concat([
      shape.target.subarray(0, pos),
      Buffer.from(bytes),
      shape.target.subarray(pos),
    ]);
    return `raw: bytes ${Buffer.from(bytes).toString('hex')} in the target`;
  },
  'dot segments': (rng, shape) => {
    const text = shape.target.toString('latin1');
    const slashes = [...text.matchAll(/\//g)].map((m) => m.index);
    const pos = rng.pick(slashes);
    const insert = rng.pick(['/..', '/.', '/', '\\', '/%2e%2e', '/%2E', '/../..', '/x/..']);
    shape.target = Buffer.from(text.slice(0, pos) + insert + text.slice(pos), 'latin1');
    return `raw: ${insert} in the path`;
  },
  'oversize header': (rng, shape) => {
    shape.lines.push(Buffer.from(`X-Fuzz: ${'a'.repeat(16 * 1024 + rng.int(8 * 1024))}`));
    return 'raw: a header over 16 KiB';
  },
  'oversize target': (rng, shape) => {
    shape.target = Buffer.concat([
      shape.target,
      Buffer.from(`${shape.target.includes('?') ? '&' : '?'}q=${'a'.repeat(17 * 1024 + rng.int(4096))}`),
    ]);
    return 'raw: a target over 16 KiB';
  },
  'many headers': (rng, shape) => {
    const n = rng.pick([100, 1999, 2500]);
    for (let i = 0; i < n; i++) shape.lines.push(Buffer.from(`x-h${i}: 1`));
    return `raw: ${n} extra headers`;
  },
  'bad Content-Length': (rng, shape) => {
    if (shape.body.length === 0) shape.body = Buffer.from('{}');
    const n = shape.body.length;
    const values = rng.pick([
      ['abc'],
      ['-1'],
      ['1.5'],
      [` ${n}`],
      ['0x2'],
      [`+${n}`],
      [''],
      ['99999999999999999999'],
      [`${n}, ${n + 1}`],
      [String(n + 10)],
      ['0'],
      [String(n), String(n + 1)],
      [String(n), String(n)],
      [String(n - 1)],
    ]);
    shape.contentLength = values;
    // Announcing more than is sent: the server waits for the rest until we end the connection.
    shape.halfClose = values.length === 1 && Number(values[0]) > n;
    return `raw: Content-Length ${JSON.stringify(values)} for ${n} bytes`;
  },
  'Transfer-Encoding': (rng, shape) => {
    if (shape.body.length === 0) shape.body = Buffer.from('{}');
    const body = shape.body;
    const chunked = Buffer.concat([
      Buffer.from(`${body.length.toString(16)}\r\n`),
      body,
      Buffer.from('\r\n0\r\n\r\n'),
    ]);
    const mode = rng.int(7);
    shape.contentLength = mode === 1 ? [String(body.length)] : 'none';
    shape.lines.push(
      Buffer.from(`Transfer-Encoding: ${mode === 5 ? 'gzip' : mode === 6 ? 'chunked, identity' : 'chunked'}`),
    );
    if (mode === 0 || mode === 1 || mode === 5 || mode === 6) shape.body = chunked;
    else if (mode === 2)
      shape.body = Buffer.concat([Buffer.from('zz\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]);
    else if (mode === 3) {
      shape.body = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body]);
      shape.halfClose = true;
    } else
      shape.body = Buffer.concat([
        Buffer.from(`${body.length.toString(16)};${'x'.repeat(100)}\r\n`),
        body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
    return `raw: Transfer-Encoding (${['chunked', 'chunked and Content-Length', 'bad chunk size', 'no last chunk', 'chunk extension', 'gzip', 'chunked, identity'][mode]})`;
  },
  'malformed header line': (rng, shape) => {
    const line = rng.pick([
      'X-Folded: a\r\n b',
      'X-No-Colon',
      'X Bad: 1',
      'X-Nul: a\u0000b',
      ': empty-name',
      'X-CR: a\rb',
      'X-Ünicode: 1',
      'X-Ok:\u00ff',
    ]);
    shape.lines.splice(rng.int(shape.lines.length + 1), 0, Buffer.from(line, 'latin1'));
    return `raw: header line ${JSON.stringify(line)}`;
  },
  'LF line endings': (_rng, shape) => {
    shape.eol = '\n';
    return 'raw: bare LF line endings';
  },
  Expect: (rng, shape) => {
    const value = rng.pick(['100-continue', 'weird', '']);
    shape.lines.push(Buffer.from(`Expect: ${value}`));
    return `raw: Expect ${JSON.stringify(value)}`;
  },
  'odd method': (rng, shape) => {
    shape.method = rng.pick(['get', 'FOO', 'BREW', 'G ET', '', 'CONNECT', 'M-SEARCH', 'PRI']);
    return `raw: method ${JSON.stringify(shape.method)}`;
  },
  'odd target form': (rng, shape) => {
    const form = rng.int(3);
    if (form === 0) shape.target = Buffer.concat([Buffer.from('http://evil.example'), shape.target]);
    else if (form === 1) shape.target = Buffer.from('*');
    else shape.target = Buffer.from(shape.target.toString('latin1').replace(/^\//, ''), 'latin1');
    return `raw: target ${['absolute-form', '*', 'without leading slash'][form]}`;
  },
  'bytes after the request': (rng, shape) => {
    shape.trailer = rng.pick([
      Buffer.from('GARBAGE\r\n\r\n'),
      Buffer.from('GET / HTTP/1.1\r\n\r\n'),
      rng.bytes(32),
    ]);
    return 'raw: bytes after the request';
  },
  'keep-alive': (_rng, shape) => {
    shape.lines = shape.lines.filter((l) => !/^connection:/i.test(l.toString('latin1')));
    return 'raw: connection kept alive';
  },
  upgrade: (_rng, shape) => {
    shape.lines = shape.lines.filter((l) => !/^connection:/i.test(l.toString('latin1')));
    shape.lines.push(Buffer.from('Connection: Upgrade'), Buffer.from('Upgrade: websocket'));
    return 'raw: Upgrade: websocket';
  },
};
const RAW_NAMES = Object.keys(RAW_MUTATORS);

function serialize(shape: RawShape): Buffer {
  const eol = Buffer.from(shape.eol);
  const lines = [...shape.lines];
  if (shape.contentLength === 'auto') {
    if (shape.body.length > 0) lines.push(Buffer.from(`Content-Length: ${shape.body.length}`));
  } else if (shape.contentLength !== 'none') {
    for (const value of shape.contentLength) lines.push(Buffer.from(`Content-Length: ${value}`));
  }
  const head = [
    Buffer.concat([
      Buffer.from(`${shape.method} `),
      shape.target,
      Buffer.from(shape.version === '' ? '' : ` ${shape.version}`),
    ]),
    ...lines,
  ];
  return Buffer.concat([...head.flatMap((line) => [line, eol]), eol, shape.body, shape.trailer]);
}

function generate(rng: Rng): FuzzRequest {
  const route = rng.weighted(ROUTES.map((r) => [r, r.weight] as const));
  const draft = base(rng, route);
  const raw = rng.chance(RAW_SHARE);
  const count = raw && rng.chance(0.6) ? rng.int(2) : 1 + rng.int(3);
  for (let i = 0; i < count; i++) MUTATORS[rng.weighted(MUTATOR_WEIGHTS)]!.apply(rng, draft, route);
  const target = targetOf(draft);
  if (!raw) {
    return {
      transport: 'inject',
      route: draft.route,
      surface: route.surface,
      method: draft.method,
      target,
      headers: draft.headers,
      body: draft.body,
      raw: null,
      halfClose: false,
      mutations: draft.mutations,
    };
  }

  const headers: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    ...draft.headers,
    connection: 'close',
  };
  const shape: RawShape = {
    method: draft.method.toUpperCase(),
    target: Buffer.from(asciiTarget(target), 'latin1'),
    version: 'HTTP/1.1',
    // Header values as a client would write them: UTF-8.
    lines: Object.entries(headers).map(([name, value]) => Buffer.from(`${name}: ${value}`, 'utf8')),
    contentLength: 'auto',
    body: draft.body ?? Buffer.alloc(0),
    eol: '\r\n',
    trailer: Buffer.alloc(0),
    halfClose: false,
  };
  const mutations = [...draft.mutations];
  const tweaks = rng.chance(0.85) ? 1 + (rng.chance(0.2) ? 1 : 0) : 0;
  for (let i = 0; i < tweaks; i++) mutations.push(RAW_MUTATORS[rng.pick(RAW_NAMES)]!(rng, shape));
  return {
    transport: 'raw',
    route: draft.route,
    surface: route.surface,
    method: shape.method,
    target: shape.target.toString('latin1'),
    headers,
    body: shape.body,
    raw: serialize(shape),
    halfClose: shape.halfClose,
    mutations,
  };
}

// ---------------------------------------------------------------------------------------------
// Sending, and what must hold of the answer.

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}
type Outcome = { answer: Answer } | { refused: string } | { unanswered: string };

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function sendInject(request: FuzzRequest): Promise<Outcome> {
  const options: InjectOptions = {
    method: request.method,
    url: request.target,
    headers: request.headers,
    ...(request.body === null ? {} : { payload: request.body }),
  };
  let res;
  try {
    res = await withTimeout(app.http.inject(options), TIMEOUT_MS);
  } catch (error) {
    // light-my-request refused to build the request (an invalid header value, say): not sent.
    return { refused: error instanceof Error ? error.message : String(error) };
  }
  if (res === 'timeout') return { unanswered: `no answer within ${TIMEOUT_MS} ms` };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) headers[name] = String(value);
  return { answer: { status: res.statusCode, headers, body: res.body } };
}

/**
 * Parses the first final (non-1xx) response in `data`: null until it is complete. `closed`: the
 * peer has closed, so a body without a length ends here.
 */
function parseResponse(data: Buffer, method: string, closed: boolean): Answer | null {
  let rest = data;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const head = rest.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(head[0] ?? '')?.[1] ?? NaN);
    if (Number.isNaN(status)) return { status: -1, headers: {}, body: rest.toString('latin1').slice(0, 200) };
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let body = rest.subarray(end + 4);
    if (status >= 100 && status < 200) {
      rest = body;
      continue;
    }
    if (method === 'HEAD' || status === 204 || status === 304) return { status, headers, body: '' };
    if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const chunks: Buffer[] = [];
      for (;;) {
        const line = body.indexOf('\r\n');
        if (line < 0)
          return closed ? { status, headers, body: Buffer.concat(chunks).toString('utf8') } : null;
        const size = parseInt(body.subarray(0, line).toString('latin1'), 16);
        if (size === 0) return { status, headers, body: Buffer.concat(chunks).toString('utf8') };
        if (body.length < line + 2 + size + 2)
          return closed ? { status, headers, body: Buffer.concat(chunks).toString('utf8') } : null;
        chunks.push(body.subarray(line + 2, line + 2 + size));
        body = body.subarray(line + 2 + size + 2);
      }
    }
    const length = headers['content-length'];
    if (length !== undefined) {
      const n = Number(length);
      if (body.length < n) return closed ? { status, headers, body: body.toString('utf8') } : null;
      return { status, headers, body: body.subarray(0, n).toString('utf8') };
    }
    return closed ? { status, headers, body: body.toString('utf8') } : null;
  }
}

function sendRaw(request: FuzzRequest): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => {
      const partial = parseResponse(Buffer.concat(chunks), request.method, true);
      finish(partial ? { answer: partial } : { unanswered: `no answer within ${TIMEOUT_MS} ms` });
    }, TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const answer = parseResponse(Buffer.concat(chunks), request.method, false);
      if (answer !== null) finish({ answer });
    });
    socket.on('close', () => {
      const answer = parseResponse(Buffer.concat(chunks), request.method, true);
      const got = Buffer.concat(chunks).toString('latin1');
      finish(
        answer
          ? { answer }
          : {
              unanswered: `connection closed without an answer${got ? `: ${JSON.stringify(got.slice(0, 100))}` : ''}`,
            },
      );
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      const answer = parseResponse(Buffer.concat(chunks), request.method, true);
      finish(
        answer
          ? { answer }
          : { unanswered: `connection error without an answer: ${error.code ?? error.message}` },
      );
    });
    // A body shorter than announced ends where our side of the connection does.
    const bytes = request.raw ?? Buffer.alloc(0);
    if (request.halfClose) socket.end(bytes);
    else socket.write(bytes);
  });
}

/** What is wrong with an answer, or null. */
function problemWith(method: string, answer: Answer): string | null {
  const { status, headers, body } = answer;
  if (status === -1) return 'not an HTTP response';
  if (status >= 500) return `${status} (server error)`;
  if (status < 400 || method === 'HEAD') return null;
  const early = headers['x-request-id'] === undefined ? ' (answered before routing: no x-request-id)' : '';
  if (!/^application\/json/i.test(headers['content-type'] ?? '')) return `error without a JSON body${early}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `error body is not valid JSON${early}`;
  }
  const errors = (parsed as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return `error not in the envelope${early}`;
  for (const error of errors as unknown[]) {
    const e = error as Record<string, unknown> | null;
    if (typeof e !== 'object' || e === null) return 'envelope: an error that is not an object';
    if (typeof e.code !== 'string' || typeof e.detail !== 'string')
      return 'envelope: code or detail not a string';
    if (e.status !== String(status)) return `envelope: status ${JSON.stringify(e.status)} on a ${status}`;
  }
  return null;
}

export interface Failure {
  problem: string;
  request: FuzzRequest;
  status: number | string;
  body: string;
}

function describeFailure(failure: Failure, index: number): string {
  const { request } = failure;
  const headers = Object.entries(request.headers)
    .map(
      ([name, value]) =>
        `${name}: ${short(name === 'authorization' || name === 'cookie' ? value.replace(/(ptlc_\w{6})\w+/, '$1…').replace(/(aerie_session=\w{6})\w+/, '$1…') : value, 50)}`,
    )
    .join(' | ');
  const lines = [
    `#${index + 1} ${failure.problem}`,
    `   ${request.transport} ${request.method} ${short(request.target, 160)}   (route ${request.route})`,
    `   mutations: ${request.mutations.join('; ') || 'none'}`,
    `   headers: ${headers}`,
  ];
  if (request.body !== null && request.body.length > 0)
    lines.push(`   body: ${short(JSON.stringify(request.body.toString('utf8')), 120)}`);
  if (request.raw !== null)
    lines.push(`   raw: ${short(JSON.stringify(request.raw.toString('latin1')), 300)}`);
  lines.push(`   → ${failure.status}: ${short(failure.body.replace(/\s+/g, ' '), 200)}`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// A run of one surface.

export interface FuzzRun {
  sent: number;
  byStatus: Record<string, number>;
  failures: Failure[];
  /** The failures by kind and the first of them, for the message of a failed assertion. */
  report: string;
}

/**
 * Walks the seeded stream of COUNT requests and sends those made from the routes of `surface`;
 * prints the counts and writes them to .tmp/fuzz-summary-<surface>.json.
 */
export async function runFuzz(surface: Surface): Promise<FuzzRun> {
  const summaryPath = summaryFile(surface);
  console.log(
    `fuzz: seed ${SEED}, the ${surface} requests of ${COUNT} (rerun with AERIE_FUZZ_SEED=${SEED}; size with AERIE_FUZZ_COUNT)`,
  );
  const rng = new Rng(SEED);
  const started = Date.now();
  const byStatus: Record<string, number> = {};
  const byTransport: Record<string, Record<string, number>> = { inject: {}, raw: {} };
  const byRoute: Record<string, Record<string, number>> = {};
  const failures: Failure[] = [];
  let unanswered = 0;
  let sent = 0;

  for (let i = 0; i < COUNT && unanswered < MAX_UNANSWERED; i++) {
    const request = generate(rng);
    if (request.surface !== surface) continue;
    const outcome = request.transport === 'inject' ? await sendInject(request) : await sendRaw(request);
    sent += 1;
    let key: string;
    if ('answer' in outcome) {
      key = String(outcome.answer.status);
      const problem = problemWith(request.method.toUpperCase(), outcome.answer);
      if (problem !== null)
        failures.push({ problem, request, status: outcome.answer.status, body: outcome.answer.body });
    } else if ('refused' in outcome) {
      key = 'not sent (refused by inject)';
    } else {
      key = 'no answer';
      unanswered += 1;
      failures.push({ problem: outcome.unanswered, request, status: 'none', body: '' });
    }
    byStatus[key] = (byStatus[key] ?? 0) + 1;
    byTransport[request.transport]![key] = (byTransport[request.transport]![key] ?? 0) + 1;
    const route = (byRoute[request.route] ??= {});
    route[key] = (route[key] ?? 0) + 1;
    const status = 'answer' in outcome ? outcome.answer.status : 0;
    const safe = ['GET', 'HEAD', 'OPTIONS'].includes(request.method.toUpperCase());
    if ((!safe && status >= 200 && status < 300) || sent % 200 === 0) await repair();
  }

  const sorted = Object.fromEntries(Object.entries(byStatus).sort(([a], [b]) => a.localeCompare(b)));
  const categories: Record<string, number> = {};
  for (const f of failures) categories[f.problem] = (categories[f.problem] ?? 0) + 1;
  const summary = {
    surface,
    seed: SEED,
    requested: COUNT,
    sent,
    durationMs: Date.now() - started,
    byStatus: sorted,
    byTransport,
    byRoute,
    failures: failures.length,
    failureCategories: categories,
    firstFailures: failures.slice(0, 20).map((f, i) => describeFailure(f, i)),
    allFailures: failures.slice(0, 500).map((f) => ({
      problem: f.problem,
      status: f.status,
      request: `${f.request.transport} ${f.request.method} ${short(f.request.target, 100)}`,
      mutations: f.request.mutations.join('; '),
    })),
  };
  fs.mkdirSync(path.dirname(summaryPath), { recursive: true });
  fs.writeFileSync(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
  const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(
    [
      `fuzz: ${sent} ${surface} requests (${total(byTransport.inject!)} through inject, ${total(byTransport.raw!)} over a socket) in ${summary.durationMs} ms, seed ${SEED}`,
      `  responses by status: ${JSON.stringify(sorted)}`,
      `  inject: ${JSON.stringify(byTransport.inject)}`,
      `  socket: ${JSON.stringify(byTransport.raw)}`,
      `  ${failures.length} failures${failures.length ? `: ${JSON.stringify(categories)}` : ''}`,
      `  summary in ${path.relative(process.cwd(), summaryPath)}`,
    ].join('\n'),
  );

  const report = [
    `${failures.length} of ${sent} requests failed (seed ${SEED}); by kind:`,
    ...Object.entries(categories)
      .sort(([, a], [, b]) => b - a)
      .map(([problem, n]) => `  ${n} × ${problem}`),
    '',
    ...failures.slice(0, 20).map((f, i) => describeFailure(f, i)),
  ].join('\n');
  return { sent, byStatus, failures, report };
}

/**
 * The fuzz test of one surface, as each file of this folder runs it: a fresh app with the
 * fixtures, the requests of `surface` among the seeded stream, no failure, and the fixtures still
 * whole at the end, with most requests past the door (`what` names the requests in the title).
 */
export function fuzzSurface(surface: Surface, what: string): void {
  beforeAll(startFuzzApp);
  afterAll(async () => app?.close());

  it(`answers the ${what} of ${COUNT} malformed ones (seed ${SEED}) without a 5xx, a hang or an error outside the envelope`, async () => {
    const { sent, byStatus, failures, report } = await runFuzz(surface);
    expect(failures.length, report).toBe(0);

    // The run stayed deep: the fixtures are whole at the end, and most requests got past the door.
    await repair();
    const deep = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${fx.server.identifier}/backups/${fx.backups.main}`,
      headers: bearer(fx.tokens.owner),
    });
    expect(deep.statusCode, deep.body).toBe(200);
    if (sent >= 500) {
      const ok = Object.entries(byStatus)
        .filter(([status]) => status.startsWith('2'))
        .reduce((n, [, c]) => n + c, 0);
      expect(ok / sent, `only ${ok} of ${sent} requests succeeded: the fixtures broke`).toBeGreaterThan(0.1);
      expect((byStatus['401'] ?? 0) / sent, 'too many 401s: the credentials broke').toBeLessThan(0.3);
    }
  }, 180_000);
}
