import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  contextFor,
  createApiKey,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import {
  ASCENDING,
  at,
  clearActivity,
  DESCENDING,
  entriesFor,
  feed,
  getFeed,
  insertActivity,
  seqOf,
  tieEntries,
  userSubject,
  type FeedBody,
} from '../support/activity.ts';
import type { KeyResource } from '../support/api-key-bodies.ts';
import { expectValidation } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const clock = new ManualClock('2026-05-06T07:08:09.999Z');
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ clock: clock.clock });
});

afterAll(async () => {
  await app.close();
});

/** A new user and a key, with an empty activity log. */
async function reader(options: { admin?: boolean } = {}) {
  const user = await createUser(app, options);
  const { token, identifier } = await createApiKey(app, user);
  await clearActivity(app);
  return { user, token, identifier };
}

const range = (from: number, to: number) =>
  Array.from({ length: Math.abs(to - from) + 1 }, (_, i) => (from <= to ? from + i : from - i));

describe('list envelope and pagination', () => {
  it('lists the newest 25 by default, in the list envelope, on both paths', async () => {
    const { user, token } = await reader();
    await insertActivity(app, entriesFor(user, 30));
    const body = await feed(app, token);
    expect(body.object).toBe('list');
    expect(body.meta.pagination).toMatchObject({
      total: 30,
      count: 25,
      per_page: 25,
      current_page: 1,
      total_pages: 2,
    });
    expect(seqOf(body)).toEqual(range(29, 5));
    expect(Object.keys(body.data[0]?.attributes ?? {}).sort()).toEqual(
      [
        'batch',
        'description',
        'event',
        'has_additional_metadata',
        'ip',
        'is_api',
        'properties',
        'timestamp',
      ].sort(),
    );
    const account = await getFeed(app, token, '', '/api/client/account/activity');
    expect(account.statusCode).toBe(200);
    expect(account.json<FeedBody>().data).toEqual(body.data);
  });

  it('gives an empty feed total 0 and total_pages 1', async () => {
    const { token } = await reader();
    const body = await feed(app, token);
    expect(body.data).toEqual([]);
    expect(body.meta.pagination).toMatchObject({
      total: 0,
      count: 0,
      per_page: 25,
      current_page: 1,
      total_pages: 1,
    });
  });

  it.each([
    { entries: 5, perPage: 5, page: 1, count: 5, pages: 1, seq: range(4, 0) },
    { entries: 5, perPage: 5, page: 2, count: 0, pages: 1, seq: [] },
    { entries: 6, perPage: 5, page: 1, count: 5, pages: 2, seq: range(5, 1) },
    { entries: 6, perPage: 5, page: 2, count: 1, pages: 2, seq: [0] },
    { entries: 13, perPage: 5, page: 3, count: 3, pages: 3, seq: [2, 1, 0] },
    { entries: 13, perPage: 5, page: 4, count: 0, pages: 3, seq: [] },
    { entries: 13, perPage: 5, page: 1000, count: 0, pages: 3, seq: [] },
    { entries: 3, perPage: 1, page: 2, count: 1, pages: 3, seq: [1] },
    { entries: 101, perPage: 100, page: 2, count: 1, pages: 2, seq: [0] },
    { entries: 101, perPage: 100, page: 1, count: 100, pages: 2, seq: range(100, 1) },
  ])('$entries entries, per_page=$perPage, page=$page → $count items of $pages pages', async (c) => {
    const { user, token } = await reader();
    await insertActivity(app, entriesFor(user, c.entries));
    const body = await feed(app, token, `per_page=${c.perPage}&page=${c.page}`);
    expect(body.meta.pagination).toMatchObject({
      total: c.entries,
      count: c.count,
      per_page: c.perPage,
      current_page: c.page,
      total_pages: c.pages,
    });
    expect(seqOf(body)).toEqual(c.seq);
  });
});

describe('query validation', () => {
  it.each([
    ['per_page=0', 'per_page', 'min'],
    ['per_page=101', 'per_page', 'max'],
    ['per_page=-1', 'per_page', 'min'],
    ['per_page=abc', 'per_page', 'integer'],
    ['per_page=1.5', 'per_page', 'integer'],
    ['per_page=', 'per_page', 'integer'],
    ['per_page=1&per_page=2', 'per_page', 'integer'],
    ['page=0', 'page', 'min'],
    ['page=-3', 'page', 'min'],
    ['page=abc', 'page', 'integer'],
    ['page=', 'page', 'integer'],
    ['sort=foo', 'sort', 'in'],
    ['sort=', 'sort', 'in'],
    ['sort=TIMESTAMP', 'sort', 'in'],
    ['filter[actor_id]=not-a-uuid', 'filter[actor_id]', 'uuid'],
    ['filter[actor_id]=', 'filter[actor_id]', 'uuid'],
    ['filter[unknown]=x', 'filter[unknown]', 'allowed'],
    ['filter[Event]=x', 'filter[Event]', 'allowed'],
  ])('%s → 422 on %s (%s)', async (query, field, rule) => {
    const { token } = await reader();
    expectValidation(await getFeed(app, token, query), { [field]: rule });
  });

  it('reports one error object per failing field', async () => {
    const { token } = await reader();
    const res = await getFeed(app, token, 'per_page=0&page=abc&sort=foo&filter[actor_id]=x&filter[nope]=1');
    expectValidation(res, {
      per_page: 'min',
      page: 'integer',
      sort: 'in',
      'filter[actor_id]': 'uuid',
      'filter[nope]': 'allowed',
    });
  });

  it('accepts the bounds of every range', async () => {
    const { token } = await reader();
    for (const query of [
      'per_page=1',
      'per_page=100',
      'page=1',
      'sort=timestamp',
      'sort=-timestamp',
      'filter[actor_id]=system',
    ]) {
      expect((await getFeed(app, token, query)).statusCode, query).toBe(200);
    }
  });
});

describe('order', () => {
  it('sorts by timestamp, ties by insertion order, in one direction', async () => {
    const { user, token } = await reader();
    await insertActivity(app, tieEntries(user));
    expect(seqOf(await feed(app, token, 'sort=timestamp'))).toEqual(ASCENDING);
    expect(seqOf(await feed(app, token, 'sort=-timestamp'))).toEqual(DESCENDING);
    expect(seqOf(await feed(app, token))).toEqual(DESCENDING);
    for (const filter of [`filter[actor_id]=${user.id}`, 'filter[event]=auth', 'filter[ip]=127']) {
      expect(seqOf(await feed(app, token, `sort=timestamp&${filter}`)), filter).toEqual(ASCENDING);
      expect(seqOf(await feed(app, token, `sort=-timestamp&${filter}`)), filter).toEqual(DESCENDING);
    }
    const pages = [];
    for (const page of [1, 2, 3]) {
      pages.push(...seqOf(await feed(app, token, `per_page=2&page=${page}&sort=timestamp`)));
    }
    expect(pages).toEqual(ASCENDING);
  });

  it('still breaks ties by insertion order when the database cannot lean on the feed index', async () => {
    // Other engines and plans do not hand rows back in index order: the order must be asked for.
    const bare = await startTestApp();
    try {
      const drop = bare.db.kysely.schema.dropIndex('activity_log_subjects_feed_filter_index');
      await (bare.db.kind === 'mysql' ? drop.on('activity_log_subjects') : drop).execute();
      const user = await createUser(bare);
      const { token } = await createApiKey(bare, user);
      await clearActivity(bare);
      await insertActivity(bare, tieEntries(user));
      expect(seqOf(await feed(bare, token, 'sort=timestamp'))).toEqual(ASCENDING);
      expect(seqOf(await feed(bare, token, 'sort=-timestamp'))).toEqual(DESCENDING);
    } finally {
      await bare.close();
    }
  });
});

describe('filters', () => {
  async function seeded() {
    const r = await reader();
    const other = await createUser(app);
    const about = [userSubject(r.user)];
    const mine = { actorId: r.user.id };
    await insertActivity(app, [
      at(0, 'auth:login', about, { event: 'auth:login', ip: '10.0.0.1', ...mine }),
      at(1, 'user:api-key.create', about, { event: 'user:api-key.create', ip: '10.0.0.2', ...mine }),
      at(2, 'user:api-key.delete', about, { event: 'user:api-key.delete', ip: '192.168.10.1', ...mine }),
      at(3, 'x:a_b', about, { event: 'x:a_b', ip: 'abcd::1', ...mine }),
      at(4, 'x:50%off', about, { event: 'x:50%off', ip: '10.0.0.3', ...mine }),
      at(5, 'x:bang!', about, { event: 'x:bang!', ip: '172.16.0.1', actorId: other.id }),
      at(6, 'auth:logout', about, { event: 'auth:logout', ip: '10.9.9.9', actorId: null }),
    ]);
    return { ...r, other };
  }

  it('matches filter[event] as a case-insensitive substring with % and _ taken literally', async () => {
    const { token } = await seeded();
    const events = async (value: string) =>
      seqOf(await feed(app, token, `filter[event]=${encodeURIComponent(value)}`));
    expect(await events('API-KEY')).toEqual(['user:api-key.delete', 'user:api-key.create']);
    expect(await events('Auth:')).toEqual(['auth:logout', 'auth:login']);
    expect(await events('%')).toEqual(['x:50%off']);
    expect(await events('_')).toEqual(['x:a_b']);
    expect(await events('h_l')).toEqual([]);
    expect(await events('a%e')).toEqual([]);
    expect(await events('!')).toEqual(['x:bang!']);
    expect(await events('nothing-like-this')).toEqual([]);
    // Accents count, in any case: é is not e.
    expect(await events('api-kéy')).toEqual([]);
    expect(await events('API-KÉY')).toEqual([]);
    expect(await events('àuth')).toEqual([]);
    expect((await feed(app, token, 'filter[event]=')).meta.pagination.total).toBe(7);
  });

  it('takes accents as written: cafè and cafe do not match café, on every engine', async () => {
    const { user, token } = await reader();
    const about = [userSubject(user)];
    await insertActivity(app, [
      at(0, 'x:café', about, { event: 'x:café', actorId: user.id }),
      at(1, 'x:cafe', about, { event: 'x:cafe', actorId: user.id }),
    ]);
    const events = async (value: string) =>
      seqOf(await feed(app, token, `filter[event]=${encodeURIComponent(value)}`));
    expect(await events('cafè')).toEqual([]);
    expect(await events('café')).toEqual(['x:café']);
    expect(await events('CAFÉ')).toEqual(['x:café']);
    expect(await events('CAFE')).toEqual(['x:cafe']);
  });

  it('matches filter[ip] as a substring, any case', async () => {
    const { token } = await seeded();
    const ips = async (value: string) => seqOf(await feed(app, token, `filter[ip]=${value}`));
    expect(await ips('10.0')).toEqual(['x:50%off', 'user:api-key.create', 'auth:login']);
    expect(await ips('ABCD')).toEqual(['x:a_b']);
    expect(await ips('_')).toEqual([]);
  });

  it('refuses control characters in filter[event] and filter[ip] (a NUL used to match everything)', async () => {
    const { token } = await seeded();
    for (const field of ['filter[event]', 'filter[ip]']) {
      for (const value of ['%00', 'auth%00', '%001', '%01', '%09', '%0A', '%1F', '%7F', '%C2%85']) {
        const res = await getFeed(app, token, `${field}=${value}`);
        expectValidation(res, { [field]: 'no_control_characters' });
        expect(res.body, `${field}=${value}`).toContain(
          `The ${field} filter must not contain control characters.`,
        );
      }
    }
    expect(seqOf(await feed(app, token, 'filter[event]=auth%3A%20'))).toEqual([]);
  });

  it('restricts to one actor, or to the system, and combines filters', async () => {
    const { user, other, token } = await seeded();
    const seq = async (query: string) => seqOf(await feed(app, token, query));
    expect(await seq(`filter[actor_id]=${other.id}`)).toEqual(['x:bang!']);
    expect(await seq(`filter[actor_id]=${other.id.toUpperCase()}`)).toEqual(['x:bang!']);
    expect(await seq('filter[actor_id]=system')).toEqual(['auth:logout']);
    expect(await seq(`filter[actor_id]=${user.id}`)).toHaveLength(5);
    expect(await seq(`filter[actor_id]=${randomUUID()}`)).toEqual([]);
    const mine = `filter[actor_id]=${user.id}&filter[event]=api-key`;
    expect(await seq(`${mine}&filter[ip]=10.0.0.1`)).toEqual([]);
    const both = await feed(app, token, `${mine}&filter%5Bip%5D=10.0`);
    expect(seqOf(both)).toEqual(['user:api-key.create']);
    expect(both.meta.pagination.total).toBe(1);
  });
});

describe('who sees what', () => {
  async function privacyFixture(admin: boolean) {
    const r = await reader({ admin });
    const other = await createUser(app);
    const about = [userSubject(r.user)];
    await insertActivity(app, [
      at(1, 'own', about, { ip: '1.1.1.1', actorId: r.user.id, properties: { ip: '1.1.1.1' } }),
      at(2, 'fail', about, { event: 'auth:fail', ip: '2.2.2.2', actorId: null }),
    ]);
    await app.services.activity.record(contextFor(other, '3.3.3.3'), {
      event: 'server:subuser.create',
      actor: { user: other, apiKeyId: null, sessionId: null },
      properties: { n: 'by-other', email: r.user.email, ip: '3.3.3.3' },
      subjects: [userSubject(r.user), userSubject(other)],
    });
    return { ...r, other };
  }

  it('shows a user the IP only of entries they acted in; filter[ip] cannot probe the others', async () => {
    const { token } = await privacyFixture(false);
    const body = await feed(app, token);
    const byN = new Map(body.data.map((d) => [String(d.attributes.properties.n), d.attributes]));
    expect(byN.get('own')).toMatchObject({ ip: '1.1.1.1', properties: { ip: '1.1.1.1' } });
    expect(byN.get('fail')?.ip).toBeNull();
    expect(byN.get('by-other')).toMatchObject({ ip: null, properties: { ip: null } });
    expect(JSON.stringify(body)).not.toMatch(/2\.2\.2\.2|3\.3\.3\.3/);
    for (const probe of ['2.2', '3.3.3.3', '3', '2']) {
      expect((await feed(app, token, `filter[ip]=${probe}`)).meta.pagination.total, probe).toBe(0);
    }
    expect(seqOf(await feed(app, token, 'filter[ip]=1.1'))).toEqual(['own']);
    expect(seqOf(await feed(app, token, 'filter[ip]=.'))).toEqual(['own']);
  });

  it('shows the actor the IP of entries about someone else they caused', async () => {
    const { other } = await privacyFixture(false);
    const { token } = await createApiKey(app, other);
    const body = await feed(app, token, 'filter[event]=subuser');
    const ips = body.data.map((d) => [d.attributes.ip, d.attributes.properties.ip]);
    expect(ips).toEqual([['3.3.3.3', '3.3.3.3']]);
  });

  it('shows an administrator every IP in their own feed, and filter[ip] matches them', async () => {
    const { token } = await privacyFixture(true);
    const body = await feed(app, token);
    const ips = body.data.map((d) => [d.attributes.properties.n, d.attributes.ip]);
    expect(ips).toEqual([
      ['by-other', '3.3.3.3'],
      ['fail', '2.2.2.2'],
      ['own', '1.1.1.1'],
    ]);
    expect(body.data[0]?.attributes.properties.ip).toBe('3.3.3.3');
    expect(seqOf(await feed(app, token, 'filter[ip]=2.2'))).toEqual(['fail']);
  });

  it('lists only entries whose subjects include the caller', async () => {
    const { user, token } = await reader({ admin: true });
    const other = await createUser(app);
    const [byMe, byThem] = [{ actorId: user.id }, { actorId: other.id }];
    await insertActivity(app, [
      at(1, 'theirs', [userSubject(other)], byThem),
      at(2, 'server-with-my-id', [{ type: 'server', id: user.id }], byMe),
      at(3, 'my-act-not-about-me', [{ type: 'server', id: randomUUID() }], byMe),
      at(4, 'shared', [userSubject(other), userSubject(user)], byThem),
      at(5, 'mine', [userSubject(user)], byMe),
    ]);
    expect(seqOf(await feed(app, token))).toEqual(['mine', 'shared']);
    expect(seqOf(await feed(app, token, `filter[actor_id]=${other.id}`))).toEqual(['shared']);
  });
});

describe('entries as written by requests', () => {
  it('describes each entry, names its actor, stamps the time and the request batch', async () => {
    const { user, token } = await reader();
    clock.set('2026-05-06T07:08:09.999Z');
    const created = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: bearer(token),
      payload: { description: 'ci' },
    });
    clock.set('2026-05-06T07:09:00.000Z');
    const identifier = created.json<KeyResource>().attributes.identifier;
    const deleted = await app.http.inject({
      method: 'DELETE',
      url: `/api/client/account/api-keys/${identifier}`,
      headers: bearer(token),
    });
    expect(deleted.statusCode).toBe(204);

    const body = await feed(app, token);
    expect(body.data.map((d) => d.attributes.event)).toEqual(['user:api-key.delete', 'user:api-key.create']);
    const [del, create] = body.data;
    expect(create?.attributes).toEqual({
      batch: created.headers['x-request-id'],
      event: 'user:api-key.create',
      is_api: true,
      ip: '127.0.0.1',
      description: `Created API key ${identifier}`,
      properties: { identifier },
      has_additional_metadata: false,
      timestamp: '2026-05-06T07:08:09+00:00',
    });
    expect(del?.attributes).toMatchObject({
      batch: deleted.headers['x-request-id'],
      description: `Deleted API key ${identifier}`,
      timestamp: '2026-05-06T07:09:00+00:00',
    });
    expect(create?.attributes.batch).toMatch(UUID);
    expect(create?.attributes.batch).not.toBe(del?.attributes.batch);
    expect(create?.relationships.actor).toEqual({
      object: 'user',
      attributes: {
        uuid: user.id,
        username: user.username,
        email: user.email,
        first_name: user.firstName,
        last_name: user.lastName,
      },
    });
    for (const item of body.data)
      expect(item.attributes.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
  });

  it('shares one batch between the entries of one request, and shows system entries with a null_resource actor', async () => {
    const { user, token } = await reader();
    const context = { ...contextFor(user), ip: null };
    const subjects = [userSubject(user)];
    await app.services.activity.record(context, {
      event: 'server:backup.restore',
      properties: { name: 'nightly', truncate: true },
      subjects,
    });
    await app.services.activity.record(context, {
      event: 'server:backup.restore-complete',
      properties: { name: 'nightly', files: 3 },
      subjects,
    });
    const body = await feed(app, token);
    expect(body.data.map((d) => d.attributes.batch)).toEqual([context.batch, context.batch]);
    expect(body.data.map((d) => d.attributes.description)).toEqual([
      'Finished restoring backup nightly (3 files)',
      'Started restoring backup nightly (files deleted first)',
    ]);
    for (const item of body.data) {
      expect(item.relationships.actor).toEqual({ object: 'null_resource', attributes: null });
      expect(item.attributes.ip).toBeNull();
    }
  });
});
