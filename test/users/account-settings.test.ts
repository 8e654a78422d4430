/**
 * The account endpoints: changing the email and the password (PUT /api/client/account/email and
 * /password), as the reference panel answers them, over the harness's app and a real socket.
 */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { bootstrapAdministrator } from '../../src/cli/bootstrap.ts';
import { feed, find } from '../support/activity.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { sessionCookieOf } from '../support/session-cookie.ts';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import {
  accountState,
  appForFile,
  eventsOfBatch,
  expectThrottled,
  PASSWORD,
  UNAUTHENTICATED,
} from '../support/two-factor.ts';

const INVALID_PASSWORD = 'The password provided was invalid for this account.';

const clock = new ManualClock('2026-07-01T09:00:00.000Z');
let app: TestApp;
appForFile(clock, (started) => (app = started));

function login(user: string, password: string) {
  return app.http.inject({ method: 'POST', url: '/auth/login', payload: { user, password } });
}

async function sessionOf(user: string, password = PASSWORD): Promise<string> {
  const res = await login(user, password);
  expect(res.statusCode, res.body).toBe(200);
  return sessionCookieOf(res);
}

function put(path: 'email' | 'password', payload: unknown, headers: Record<string, string>) {
  return app.http.inject({
    method: 'PUT',
    url: `/api/client/account/${path}`,
    payload: payload as object,
    headers,
  });
}

function account(headers: Record<string, string>) {
  return app.http.inject({ method: 'GET', url: '/api/client/account', headers });
}

describe('PUT /api/client/account/email', () => {
  it('changes the email (204), stored in lower case, and records user:account.email-changed {old, new}', async () => {
    clock.set('2026-07-01T09:10:00.000Z');
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const res = await put('email', { email: 'New.Address@Example.COM', password: PASSWORD }, bearer(token));
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');

    const attributes = (await account(bearer(token))).json<{ attributes: { email: string } }>().attributes;
    expect(attributes.email).toBe('new.address@example.com');
    expect((await login('new.address@example.com', PASSWORD)).statusCode).toBe(200);
    expectError(
      await login(user.email, PASSWORD),
      400,
      'DisplayException',
      'No account matching those credentials could be found.',
    );

    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['user:account.email-changed']);
    const entry = find((await feed(app, token)).data, 'user:account.email-changed');
    expect(entry.attributes).toMatchObject({
      properties: { old: user.email, new: 'new.address@example.com' },
      description: `Changed email from ${user.email} to new.address@example.com`,
      has_additional_metadata: false,
      ip: '127.0.0.1',
      is_api: true,
      timestamp: '2026-07-01T09:10:00+00:00',
    });
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
  });

  it('works with the session cookie from the same site', async () => {
    const user = await createUser(app);
    const cookie = await sessionOf(user.username);
    const res = await put(
      'email',
      { email: `moved-${user.username}@example.org`, password: PASSWORD },
      {
        cookie,
        origin: 'http://aerie.test',
        host: 'aerie.test',
      },
    );
    expect(res.statusCode, res.body).toBe(204);
    expect((await account({ cookie })).json<{ attributes: { email: string } }>().attributes.email).toBe(
      `moved-${user.username}@example.org`,
    );
  });

  it('refuses a wrong password with 400 InvalidPasswordProvidedException, even for a taken email, and changes nothing', async () => {
    const user = await createUser(app);
    const other = await createUser(app);
    const { token } = await createApiKey(app, user);
    const before = await accountState(app, user.id);
    for (const email of ['fresh@example.com', other.email]) {
      const res = await put('email', { email, password: 'not the password' }, bearer(token));
      expectError(res, 400, 'InvalidPasswordProvidedException', INVALID_PASSWORD);
      expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual([]);
    }
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it('answers 422 per field for an invalid email or a missing field, and changes nothing', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const before = await accountState(app, user.id);
    const cases: [unknown, Record<string, string>][] = [
      [{ email: 'not-an-email', password: PASSWORD }, { email: 'email' }],
      [{ email: 'two@@example.com', password: PASSWORD }, { email: 'email' }],
      [{ email: 'spaces in@example.com', password: PASSWORD }, { email: 'email' }],
      [{ email: '', password: PASSWORD }, { email: 'email' }],
      [
        { email: `a@${'d'.repeat(60)}.${'o'.repeat(60)}.${'m'.repeat(60)}.example.com`, password: PASSWORD },
        { email: 'max' },
      ],
      [{ email: 42, password: PASSWORD }, { email: 'string' }],
      [{ password: PASSWORD }, { email: 'required' }],
      [{ email: 'fine@example.com' }, { password: 'required' }],
      [{ email: 'fine@example.com', password: '' }, { password: 'min' }],
      [{}, { email: 'required', password: 'required' }],
    ];
    for (const [payload, fields] of cases) {
      expectValidation(await put('email', payload, bearer(token)), fields);
    }
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it("answers 422 unique for another account's email, in any case, and changes nothing", async () => {
    const user = await createUser(app);
    const other = await createUser(app);
    const { token } = await createApiKey(app, user);
    const before = await accountState(app, user.id);
    for (const email of [other.email, other.email.toUpperCase()]) {
      const res = await put('email', { email, password: PASSWORD }, bearer(token));
      expectValidation(res, { email: 'unique' });
      expect(res.json<{ errors: { meta: { message: string } }[] }>().errors[0]?.meta.message).toBe(
        'The email has already been taken.',
      );
    }
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it('takes its own email again as a 204 that records nothing', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const before = await accountState(app, user.id);
    const res = await put('email', { email: user.email.toUpperCase(), password: PASSWORD }, bearer(token));
    expect(res.statusCode, res.body).toBe(204);
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it('gives an address to one of two accounts asking for it at once; the other gets 422', async () => {
    const [alice, bob] = await Promise.all([createUser(app), createUser(app)]);
    const [a, b] = await Promise.all([createApiKey(app, alice), createApiKey(app, bob)]);
    const email = `contested-${alice.username}@example.com`;
    const answers = await Promise.all(
      [a, b].map(({ token }) => put('email', { email, password: PASSWORD }, bearer(token))),
    );
    expect(answers.map((r) => r.statusCode).sort()).toEqual([204, 422]);
    const owners = await app.db.kysely.selectFrom('users').select('id').where('email', '=', email).execute();
    expect(owners).toHaveLength(1);
  });

  it('refuses a cookie-authenticated change from another site with 403, and changes nothing', async () => {
    const user = await createUser(app);
    const cookie = await sessionOf(user.username);
    const before = await accountState(app, user.id);
    for (const origin of ['https://evil.example', 'null', 'http://aerie.test.evil.example']) {
      const res = await put(
        'email',
        { email: 'stolen@evil.example', password: PASSWORD },
        {
          cookie,
          origin,
          host: 'aerie.test',
        },
      );
      expectError(res, 403, 'AccessDeniedHttpException', 'This request comes from another site.');
      const password = await put(
        'password',
        { current_password: PASSWORD, password: 'stolen password', password_confirmation: 'stolen password' },
        { cookie, origin, host: 'aerie.test' },
      );
      expectError(password, 403, 'AccessDeniedHttpException', 'This request comes from another site.');
    }
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it('answers 401 without credentials', async () => {
    const res = await put('email', { email: 'x@example.com', password: PASSWORD }, {});
    expectError(res, 401, 'NotAuthenticatedException', UNAUTHENTICATED);
  });
});

describe('PUT /api/client/account/password', () => {
  const change = (password: string, current = PASSWORD) => ({
    current_password: current,
    password,
    password_confirmation: password,
  });

  it('changes the password (204), ends the other sessions, keeps this one and the API keys', async () => {
    clock.set('2026-07-01T10:00:00.000Z');
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const [current, other, third] = [
      await sessionOf(user.username),
      await sessionOf(user.email),
      await sessionOf(user.username),
    ];
    const res = await put('password', change('a brand new password'), { cookie: current });
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');

    expect((await account({ cookie: current })).statusCode).toBe(200);
    for (const cookie of [other, third]) {
      expectError(await account({ cookie }), 401, 'NotAuthenticatedException', UNAUTHENTICATED);
    }
    expect((await account(bearer(token))).statusCode).toBe(200);
    expect((await accountState(app, user.id)).sessions).toHaveLength(1);

    expect((await login(user.username, PASSWORD)).statusCode).toBe(400);
    expect((await login(user.username, 'a brand new password')).statusCode).toBe(200);

    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['user:account.password-changed']);
    const entry = find((await feed(app, token)).data, 'user:account.password-changed');
    expect(entry.attributes).toMatchObject({
      description: 'Changed password',
      properties: {},
      is_api: false,
      timestamp: '2026-07-01T10:00:00+00:00',
    });
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
  });

  it('with an API key, ends every session of the account', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const cookies = [await sessionOf(user.username), await sessionOf(user.username)];
    const res = await put('password', change('another new password'), bearer(token));
    expect(res.statusCode, res.body).toBe(204);
    for (const cookie of cookies) expect((await account({ cookie })).statusCode).toBe(401);
    expect((await account(bearer(token))).statusCode).toBe(200);
    expect((await accountState(app, user.id)).sessions).toEqual([]);
  });

  it('leaves other accounts’ sessions alone', async () => {
    const [alice, bob] = [await createUser(app), await createUser(app)];
    const bobSession = await sessionOf(bob.username);
    const { token } = await createApiKey(app, alice);
    expect((await put('password', change('alice changed it'), bearer(token))).statusCode).toBe(204);
    expect((await account({ cookie: bobSession })).statusCode).toBe(200);
  });

  it('refuses a wrong current password with 400 InvalidPasswordProvidedException, and changes nothing', async () => {
    const user = await createUser(app);
    const cookie = await sessionOf(user.username);
    const other = await sessionOf(user.username);
    const before = await accountState(app, user.id);
    for (const payload of [
      change('whatever new one', 'wrong password'),
      change('whatever new one', PASSWORD.toUpperCase()),
    ]) {
      const res = await put('password', payload, { cookie });
      expectError(res, 400, 'InvalidPasswordProvidedException', INVALID_PASSWORD);
    }
    expect(await accountState(app, user.id)).toEqual(before);
    expect((await account({ cookie: other })).statusCode).toBe(200);
    expect((await login(user.username, PASSWORD)).statusCode).toBe(200);
  });

  it('answers 422 for a short, unconfirmed or missing password, and changes nothing', async () => {
    const user = await createUser(app);
    const cookie = await sessionOf(user.username);
    const before = await accountState(app, user.id);
    const cases: [unknown, Record<string, string>][] = [
      [change('short'), { password: 'min' }],
      [change('1234567'), { password: 'min' }],
      [
        { current_password: PASSWORD, password: 'long enough one', password_confirmation: 'long enough two' },
        { password: 'confirmed' },
      ],
      [{ current_password: PASSWORD, password: 'long enough one' }, { password: 'confirmed' }],
      [
        { password: 'long enough one', password_confirmation: 'long enough one' },
        { current_password: 'required' },
      ],
      [{ current_password: PASSWORD }, { password: 'required' }],
      [
        { current_password: PASSWORD, password: 12345678, password_confirmation: 12345678 },
        { password: 'string', password_confirmation: 'string' },
      ],
      [
        { current_password: PASSWORD, password: 'x'.repeat(4097), password_confirmation: 'x'.repeat(4097) },
        { password: 'max', password_confirmation: 'max' },
      ],
    ];
    for (const [payload, fields] of cases) {
      expectValidation(await put('password', payload, { cookie }), fields);
    }
    expect(await accountState(app, user.id)).toEqual(before);
    expect((await login(user.username, PASSWORD)).statusCode).toBe(200);
  });

  it('takes a password of exactly 8 characters', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    expect((await put('password', change('12345678'), bearer(token))).statusCode).toBe(204);
    expect((await login(user.username, '12345678')).statusCode).toBe(200);
  });

  it('works for the administrator Aerie generates on first start, with its printed password and key', async () => {
    const fresh = await startTestApp();
    try {
      let printed = '';
      await bootstrapAdministrator(fresh.services, {
        dataDir: fresh.dataDir,
        panelUrl: 'http://localhost:8080/',
        out: { isTTY: true, write: (text: string) => (printed += text) },
      });
      const password = /password: (\S+)/.exec(printed)?.[1] ?? '';
      const token = /API key: +(ptlc_\S+)/.exec(printed)?.[1] ?? '';
      expect(password).not.toBe('');
      await fresh.http.listen({ host: '127.0.0.1', port: 0 });
      const base = `http://127.0.0.1:${(fresh.http.server.address() as AddressInfo).port}`;
      const res = await fetch(`${base}/api/client/account/password`, {
        method: 'PUT',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify(change('my own admin password', password)),
      });
      expect(res.status).toBe(204);
      const loginWith = (pw: string) =>
        fetch(`${base}/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ user: 'admin', password: pw }),
        });
      expect((await loginWith(password)).status).toBe(400);
      const ok = await loginWith('my own admin password');
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { data: { user: { root_admin: boolean } } }).data.user.root_admin).toBe(
        true,
      );
    } finally {
      await fresh.close();
    }
  });
});

describe('password confirmations count against the login throttle', () => {
  it('refuses a 4th wrong password in 15 minutes with 429, even the right one, and changes nothing', async () => {
    const strict = await startTestApp({ env: { AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '3' } });
    try {
      const user = await createUser(strict);
      const { token } = await createApiKey(strict, user);
      const before = await accountState(strict, user.id);
      const attempt = (password: string) =>
        strict.http.inject({
          method: 'PUT',
          url: '/api/client/account/email',
          headers: bearer(token),
          payload: { email: 'new@example.com', password },
          remoteAddress: '10.9.8.7',
        });
      for (let i = 0; i < 3; i++) {
        expectError(await attempt(`guess ${i}`), 400, 'InvalidPasswordProvidedException', INVALID_PASSWORD);
      }
      const refused = await attempt(PASSWORD);
      expectThrottled(refused);
      expect(await accountState(strict, user.id)).toEqual(before);
    } finally {
      await strict.close();
    }
  });
});
