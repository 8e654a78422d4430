import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { feed, find, type FeedBody } from '../support/activity.ts';
import type { KeyList } from '../support/api-key-bodies.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { sessionCookieOf } from '../support/session-cookie.ts';

const UNAUTHENTICATED = 'You are not authenticated to access this route.';
const BAD_CREDENTIALS = 'No account matching those credentials could be found.';
const ipBlocked = (ip: string) =>
  `This IP address (${ip}) does not have permission to access the API using these credentials.`;

const clock = new ManualClock('2026-01-01T00:00:00.000Z');
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ clock: clock.clock });
});

afterAll(async () => {
  await app.close();
});

function get(headers: Record<string, string>, remoteAddress?: string) {
  return app.http.inject({
    method: 'GET',
    url: '/api/client/account/api-keys',
    headers,
    ...(remoteAddress ? { remoteAddress } : {}),
  });
}

function login(target: TestApp, user: string, password: string, remoteAddress = '127.0.0.1') {
  return target.http.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { user, password },
    remoteAddress,
  });
}

describe('bearer API keys', () => {
  it('answers 401 NotAuthenticatedException to every missing or wrong credential', async () => {
    const user = await createUser(app);
    const { token, identifier } = await createApiKey(app, user);
    const secret = token.slice(16);
    const gone = await createApiKey(app, user);
    const del = await app.http.inject({
      method: 'DELETE',
      url: `/api/client/account/api-keys/${gone.identifier}`,
      headers: bearer(token),
    });
    expect(del.statusCode).toBe(204);

    const cases: Record<string, Record<string, string>> = {
      'no header': {},
      'basic scheme': { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      'token scheme': { authorization: `Token ${token}` },
      'scheme without token': { authorization: 'Bearer' },
      'empty authorization': { authorization: '' },
      'token too short': bearer(token.slice(0, 47)),
      'token too long': bearer(`${token}x`),
      'token with a symbol': bearer(`${token.slice(0, 47)}-`),
      'two tokens': { authorization: `Bearer ${token} ${token}` },
      'unknown identifier': bearer(`ptlc_AAAAAAAAAAA${secret}`),
      'right identifier, wrong secret': bearer(`${identifier}${'B'.repeat(32)}`),
      'secret alone': bearer(secret),
      'deleted key': bearer(gone.token),
      'garbage session cookie': { cookie: 'aerie_session=garbage' },
      'unknown session cookie': { cookie: `aerie_session=${'a'.repeat(48)}` },
    };
    for (const [name, headers] of Object.entries(cases)) {
      const res = await get(headers);
      expect(res.statusCode, name).toBe(401);
      expectError(res, 401, 'NotAuthenticatedException', UNAUTHENTICATED);
    }
    expect((await get(bearer(token))).statusCode).toBe(200);
  });

  it('takes the scheme name in any case', async () => {
    const { token } = await createApiKey(app, await createUser(app));
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const res = await get({ authorization: `${scheme} ${token}` });
      expect(res.statusCode, scheme).toBe(200);
    }
  });

  it('refuses a key used outside its allowed_ips with 403 and records auth:ip-blocked', async () => {
    const user = await createUser(app);
    const open = await createApiKey(app, user);
    const fenced = await createApiKey(app, user, { allowedIps: ['10.0.0.0/8'] });

    const res = await get(bearer(fenced.token));
    expectError(res, 403, 'AccessDeniedHttpException', ipBlocked('127.0.0.1'));
    expect((await get(bearer(fenced.token), '10.1.2.3')).statusCode).toBe(200);

    const entry = find((await feed(app, open.token, 'filter[event]=ip-blocked')).data, 'auth:ip-blocked');
    expect(entry.attributes.properties).toEqual({ identifier: fenced.identifier });
    expect(entry.attributes.ip).toBe('127.0.0.1');
    expect(entry.attributes.batch).toBe(res.headers['x-request-id']);
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
  });

  it.each([
    { allowed: ['127.0.0.1'], ok: '127.0.0.1', refused: '127.0.0.2' },
    { allowed: ['127.0.0.0/8'], ok: '127.200.3.4', refused: '128.0.0.1' },
    { allowed: ['::1'], ok: '::1', refused: '127.0.0.1' },
    { allowed: ['2001:db8::/32'], ok: '2001:db8:ffff::1', refused: '2001:db9::1' },
    { allowed: ['10.0.0.0/8'], ok: '::ffff:10.1.2.3', refused: '::ffff:11.1.2.3' },
    { allowed: ['192.168.1.10', 'fd00::/8'], ok: 'fd12:3456::1', refused: '192.168.1.11' },
  ])('allowed_ips $allowed admits $ok and refuses $refused', async ({ allowed, ok, refused }) => {
    const { token } = await createApiKey(app, await createUser(app), { allowedIps: allowed });
    expect((await get(bearer(token), ok)).statusCode).toBe(200);
    const res = await get(bearer(token), refused);
    expectError(res, 403, 'AccessDeniedHttpException', ipBlocked(refused.replace('::ffff:', '')));
  });

  it('sets last_used_at on first use and rewrites it at most once a minute', async () => {
    clock.set('2026-02-01T10:00:00.000Z');
    const { token, identifier } = await createApiKey(app, await createUser(app));
    const lastUsed = async () =>
      (
        await app.db.kysely
          .selectFrom('api_keys')
          .select('last_used_at')
          .where('identifier', '=', identifier)
          .executeTakeFirstOrThrow()
      ).last_used_at;
    expect(await lastUsed()).toBeNull();

    clock.set('2026-02-01T10:00:05.000Z');
    const first = await get(bearer(token));
    expect(await lastUsed()).toBe('2026-02-01T10:00:05.000Z');
    const listed = first.json<KeyList>().data[0]?.attributes;
    expect(listed).toMatchObject({
      last_used_at: '2026-02-01T10:00:05+00:00',
      created_at: '2026-02-01T10:00:00+00:00',
    });

    clock.set('2026-02-01T10:00:45.000Z');
    await get(bearer(token));
    expect(await lastUsed()).toBe('2026-02-01T10:00:05.000Z');

    clock.set('2026-02-01T10:01:06.000Z');
    await get(bearer(token));
    expect(await lastUsed()).toBe('2026-02-01T10:01:06.000Z');
  });
});

describe('session login', () => {
  it('logs in by username with 200, the user, and an HttpOnly session cookie', async () => {
    clock.set('2026-03-01T08:00:00.000Z');
    const user = await createUser(app, { firstName: 'Ada' });
    const res = await login(app, user.username, user.password);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ data: { complete: boolean; intended: string; user: Record<string, unknown> } }>();
    expect(body.data.complete).toBe(true);
    expect(body.data.intended).toBe('/');
    expect(body.data.user).toMatchObject({
      uuid: user.id,
      username: user.username,
      email: user.email,
      first_name: 'Ada',
      last_name: '',
      root_admin: false,
    });
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/^aerie_session=[A-Za-z0-9]{48}; /);
    expect(setCookie.split('; ')).toEqual(
      expect.arrayContaining(['HttpOnly', 'Path=/', 'SameSite=Lax', 'Max-Age=43200']),
    );

    const cookie = sessionCookieOf(res);
    const items = (
      await app.http.inject({ method: 'GET', url: '/api/client/activity', headers: { cookie } })
    ).json<FeedBody>().data;
    const entry = find(items, 'auth:login');
    expect(entry.attributes).toMatchObject({ ip: '127.0.0.1', is_api: false, description: 'Logged in' });
    expect(entry.attributes.batch).toBe(res.headers['x-request-id']);
    expect(entry.attributes.timestamp).toBe('2026-03-01T08:00:00+00:00');
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
  });

  it('logs in by email, in any case', async () => {
    const user = await createUser(app);
    const res = await login(app, user.email.toUpperCase(), user.password);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ data: { user: { uuid: string } } }>().data.user.uuid).toBe(user.id);
    const keys = await get({ cookie: `theme=dark; ${sessionCookieOf(res)}; other=1` });
    expect(keys.statusCode).toBe(200);
  });

  it('ends a session after its lifetime', async () => {
    clock.set('2026-04-01T00:00:00.000Z');
    const user = await createUser(app);
    const cookie = sessionCookieOf(await login(app, user.username, user.password));
    clock.set('2026-04-01T11:59:59.000Z');
    expect((await get({ cookie })).statusCode).toBe(200);
    clock.set('2026-04-01T12:00:01.000Z');
    expectError(await get({ cookie }), 401, 'NotAuthenticatedException', UNAUTHENTICATED);
  });

  it('refuses a wrong password with 400 DisplayException and records auth:fail without the password', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const res = await login(app, user.username, 'wrong password 123');
    expectError(res, 400, 'DisplayException', BAD_CREDENTIALS);
    expect(res.headers['set-cookie']).toBeUndefined();

    const rows = await app.db.kysely
      .selectFrom('activity_logs')
      .selectAll()
      .where('event', '=', 'auth:fail')
      .where('batch', '=', String(res.headers['x-request-id']))
      .execute();
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.actor_id).toBeNull();
    expect(JSON.parse(row.properties)).toEqual({ username: user.username });
    expect(JSON.stringify(row)).not.toContain('wrong password 123');
    // Nowhere in the database files either (the attempted name is, which shows the scan works).
    // The one part of the suite about the SQLite file itself: a server's files are out of reach.
    if (app.db.kind === 'sqlite') {
      const files = ['aerie.db', 'aerie.db-wal']
        .map((f) => path.join(app.dataDir, f))
        .filter((f) => fs.existsSync(f));
      const bytes = Buffer.concat(files.map((f) => fs.readFileSync(f)));
      expect(bytes.includes(`"username":"${user.username}"`)).toBe(true);
      expect(bytes.includes('wrong password 123')).toBe(false);
    }
    const subjects = await app.db.kysely
      .selectFrom('activity_log_subjects')
      .select(['subject_type', 'subject_id'])
      .where('activity_log_id', '=', row.id)
      .execute();
    expect(subjects).toEqual([{ subject_type: 'user', subject_id: user.id }]);

    const entry = find((await feed(app, token)).data, 'auth:fail');
    expect(entry.relationships.actor).toEqual({ object: 'null_resource', attributes: null });
    expect(entry.attributes.ip).toBeNull();
    expect(entry.attributes.description).toBe(`Failed to log in as ${user.username}`);
  });

  it('refuses an unknown user the same way and still records auth:fail', async () => {
    const res = await login(app, 'ghost-user', 'whatever password');
    expectError(res, 400, 'DisplayException', BAD_CREDENTIALS);
    const rows = await app.db.kysely
      .selectFrom('activity_logs')
      .selectAll()
      .where('batch', '=', String(res.headers['x-request-id']))
      .execute();
    expect(rows.map((r) => [r.event, r.actor_id, JSON.parse(r.properties) as unknown])).toEqual([
      ['auth:fail', null, { username: 'ghost-user' }],
    ]);
    expect(JSON.stringify(rows)).not.toContain('whatever password');
  });

  it('answers 422 for missing or empty fields, one error per field', async () => {
    const empty = await app.http.inject({ method: 'POST', url: '/auth/login', payload: {} });
    expectValidation(empty, { user: 'required', password: 'required' });
    const noPassword = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: 'someone' },
    });
    expectValidation(noPassword, { password: 'required' });
    const blank = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: '', password: '' },
    });
    expectValidation(blank, { user: 'min', password: 'min' });
    const typed = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: 5, password: ['x'] },
    });
    expectValidation(typed, { user: 'string', password: 'string' });
  });

  it('logs out with 204: the cookie stops working and auth:logout is recorded', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const cookie = sessionCookieOf(await login(app, user.username, user.password));
    const res = await app.http.inject({ method: 'POST', url: '/auth/logout', headers: { cookie } });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(String(res.headers['set-cookie'])).toMatch(/^aerie_session=; .*Max-Age=0/);
    expectError(await get({ cookie }), 401, 'NotAuthenticatedException', UNAUTHENTICATED);

    const entry = find((await feed(app, token)).data, 'auth:logout');
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
    expect(entry.attributes.batch).toBe(res.headers['x-request-id']);

    const anonymous = await app.http.inject({ method: 'POST', url: '/auth/logout' });
    expectError(anonymous, 401, 'NotAuthenticatedException', UNAUTHENTICATED);
  });

  it('refuses a cookie-authenticated POST from another site with 403', async () => {
    const user = await createUser(app);
    const cookie = sessionCookieOf(await login(app, user.username, user.password));
    const keyCount = async () =>
      Number(
        (
          await app.db.kysely
            .selectFrom('api_keys')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('user_id', '=', user.id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const post = (headers: Record<string, string>, url = '/api/client/account/api-keys') =>
      app.http.inject({ method: 'POST', url, headers, payload: { description: 'x' } });

    for (const origin of ['https://evil.example', 'null', 'http://aerie.test.evil.example']) {
      const res = await post({ cookie, origin, host: 'aerie.test' });
      expectError(res, 403, 'AccessDeniedHttpException', 'This request comes from another site.');
    }
    const logout = await post({ cookie, origin: 'https://evil.example' }, '/auth/logout');
    expect(logout.statusCode).toBe(403);
    expect(await keyCount()).toBe(0);

    expect((await post({ cookie, origin: 'http://aerie.test', host: 'aerie.test' })).statusCode).toBe(200);
    expect((await post({ cookie })).statusCode).toBe(200);
    expect((await get({ cookie, origin: 'https://evil.example' })).statusCode).toBe(200);
    const { token } = await createApiKey(app, user);
    expect((await post({ ...bearer(token), origin: 'https://evil.example' })).statusCode).toBe(200);
    expect(await keyCount()).toBe(4);
  });

  it('refuses, without an Origin, a cookie POST that the browser says comes from another site', async () => {
    const user = await createUser(app);
    const cookie = sessionCookieOf(await login(app, user.username, user.password));
    const post = (site: string) =>
      app.http.inject({
        method: 'POST',
        url: '/api/client/account/api-keys',
        headers: { cookie, 'sec-fetch-site': site },
        payload: { description: site },
      });
    for (const site of ['cross-site', 'same-site']) {
      expectError(
        await post(site),
        403,
        'AccessDeniedHttpException',
        'This request comes from another site.',
      );
    }
    expect((await post('same-origin')).statusCode).toBe(200);
    expect((await post('none')).statusCode).toBe(200);
  });

  it('refuses a login or a login checkpoint posted from another site, and sets no cookie', async () => {
    const user = await createUser(app);
    const cases: [string, Record<string, string>][] = [
      ['/auth/login', { origin: 'https://evil.example', host: 'aerie.test' }],
      ['/auth/login', { 'sec-fetch-site': 'cross-site' }],
      ['/auth/login/checkpoint', { origin: 'https://evil.example', host: 'aerie.test' }],
    ];
    for (const [url, headers] of cases) {
      const res = await app.http.inject({
        method: 'POST',
        url,
        headers,
        payload: {
          user: user.username,
          password: user.password,
          confirmation_token: 'x',
          authentication_code: '1',
        },
      });
      expectError(res, 403, 'AccessDeniedHttpException', 'This request comes from another site.');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const same = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      headers: { origin: 'http://aerie.test', host: 'aerie.test' },
      payload: { user: user.username, password: user.password },
    });
    expect(same.statusCode, same.body).toBe(200);
  });
});

describe('expired sessions', () => {
  it('are deleted from the database when someone logs in', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const app = await startTestApp({ clock: () => now, env: { AERIE_SESSION_TTL_SECONDS: '60' } });
    try {
      const user = await createUser(app);
      const login = () =>
        app.http.inject({
          method: 'POST',
          url: '/auth/login',
          payload: { user: user.username, password: user.password },
        });
      expect((await login()).statusCode).toBe(200);
      now = new Date(now.getTime() + 61_000);
      expect((await login()).statusCode).toBe(200);
      const rows = await app.db.kysely.selectFrom('sessions').select('expires_at').execute();
      expect(rows).toEqual([{ expires_at: new Date(now.getTime() + 60_000).toISOString() }]);
    } finally {
      await app.close();
    }
  });
});
