/**
 * TOTP two-factor authentication: setting it up and turning it off
 * (/api/client/account/two-factor), and logging in with it (POST /auth/login, then
 * POST /auth/login/checkpoint), as the reference panel answers them.
 */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { feed, find } from '../support/activity.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { sessionCookieOf } from '../support/session-cookie.ts';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import {
  accountState,
  appForFile,
  codeAt,
  enableTwoFactor,
  eventsOfBatch,
  expectThrottled,
  PASSWORD,
  requestSecret,
  UNAUTHENTICATED,
  type SetupBody,
} from '../support/two-factor.ts';

const ALREADY_ENABLED = 'Two-factor authentication is already enabled on this account.';
const PASSWORD_NOT_VALID = 'The password provided was not valid.';
const TOKEN_NOT_VALID = 'The provided two-factor authentication token was not valid.';
const CODE_INVALID = 'The two-factor authentication token was invalid.';
const CODE_USED = 'This two-factor authentication code was already used; wait for the next one.';
const RECOVERY_INVALID = 'The recovery token provided is not valid.';
const EXPIRED = 'The authentication token provided has expired, please refresh the page and try again.';

const clock = new ManualClock('2026-08-01T12:00:00.000Z');
let app: TestApp;
appForFile(clock, (started) => (app = started));

/** Moves the clock to the start of a fresh 30-second step, some minutes on. */
function nextMinutes(minutes = 10): Date {
  const now = clock.clock().getTime() + minutes * 60_000;
  clock.set(new Date(now - (now % 30_000)).toISOString());
  return clock.clock();
}

const setup = (headers: Record<string, string>) =>
  app.http.inject({ method: 'GET', url: '/api/client/account/two-factor', headers });
const enable = (headers: Record<string, string>, payload: unknown) =>
  app.http.inject({
    method: 'POST',
    url: '/api/client/account/two-factor',
    headers,
    payload: payload as object,
  });
const disable = (headers: Record<string, string>, payload: unknown) =>
  app.http.inject({
    method: 'POST',
    url: '/api/client/account/two-factor/disable',
    headers,
    payload: payload as object,
  });
const login = (user: string, password = PASSWORD, remoteAddress = '127.0.0.1') =>
  app.http.inject({ method: 'POST', url: '/auth/login', payload: { user, password }, remoteAddress });
const checkpoint = (payload: unknown, remoteAddress = '127.0.0.1') =>
  app.http.inject({
    method: 'POST',
    url: '/auth/login/checkpoint',
    payload: payload as object,
    remoteAddress,
  });
const account = (headers: Record<string, string>) =>
  app.http.inject({ method: 'GET', url: '/api/client/account', headers });

/** A user with 2FA on (a code of the current time turned it on), their key, secret and recovery tokens. */
async function twoFactorUser() {
  const user = await createUser(app);
  const { token } = await createApiKey(app, user);
  const { secret, tokens } = await enableTwoFactor(app, token, PASSWORD, clock.clock());
  return { user, token, secret, tokens };
}

/** The first step of a login with 2FA: its confirmation token. */
async function confirmationToken(username: string): Promise<string> {
  const res = await login(username);
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json<{ data: { complete: boolean; confirmation_token: string } }>();
  expect(body.data.complete).toBe(false);
  return body.data.confirmation_token;
}

const useTotp = async (headers: Record<string, string>) =>
  (await account(headers)).json<{ attributes: { use_totp: boolean } }>().attributes.use_totp;

describe('GET /api/client/account/two-factor', () => {
  it('gives a new base32 secret of 20 bytes, its otpauth URI and an SVG QR code, and stores it encrypted', async () => {
    const user = await createUser(app, { email: 'ada+2fa@example.com' });
    const { token } = await createApiKey(app, user);
    const res = await setup(bearer(token));
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json<SetupBody>();
    expect(Object.keys(data).sort()).toEqual(['image_url_data', 'qr_code', 'secret']);
    expect(data.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(data.image_url_data).toBe(
      `otpauth://totp/Aerie:${encodeURIComponent('ada+2fa@example.com')}?secret=${data.secret}&issuer=Aerie`,
    );
    expect(data.qr_code).toMatch(/^data:image\/svg\+xml;base64,[A-Za-z0-9+/]+=*$/);
    const svg = Buffer.from(data.qr_code.split(',')[1]!, 'base64').toString('utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('<path');

    const stored = (await accountState(app, user.id)).user;
    expect(stored.totp_secret).toMatch(/^v1:/);
    expect(stored.totp_secret).not.toContain(data.secret);
    expect(stored.totp_enabled_at).toBeNull();
    expect(await useTotp(bearer(token))).toBe(false);

    // A request during the set-up hands out the same secret (see two-factor-pending.test.ts).
    const again = (await setup(bearer(token))).json<SetupBody>().data.secret;
    expect(again).toBe(data.secret);
  });

  it('is a 400 once 2FA is on, and changes nothing', async () => {
    const { user, token } = await twoFactorUser();
    const before = await accountState(app, user.id);
    expectError(await setup(bearer(token)), 400, 'BadRequestHttpException', ALREADY_ENABLED);
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it('answers 401 without credentials', async () => {
    expectError(await setup({}), 401, 'NotAuthenticatedException', UNAUTHENTICATED);
  });
});

describe('POST /api/client/account/two-factor', () => {
  it('turns 2FA on with a code and the password: 10 recovery tokens, shown once, stored as hashes', async () => {
    const now = nextMinutes();
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const secret = await requestSecret(app, bearer(token));
    const res = await enable(bearer(token), { code: codeAt(secret, now), password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ object: string; attributes: { tokens: string[] } }>();
    expect(Object.keys(body)).toEqual(['object', 'attributes']);
    expect(body.object).toBe('recovery_tokens');
    const tokens = body.attributes.tokens;
    expect(tokens).toHaveLength(10);
    expect(new Set(tokens).size).toBe(10);
    for (const t of tokens) expect(t).toMatch(/^[A-Za-z0-9]{10}$/);

    const state = await accountState(app, user.id);
    expect(state.recoveryTokens).toHaveLength(10);
    const stored = JSON.stringify(state.recoveryTokens);
    for (const t of tokens) expect(stored).not.toContain(t);
    expect(state.user.totp_enabled_at).toBe(now.toISOString());
    expect(await useTotp(bearer(token))).toBe(true);

    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['user:two-factor.create']);
    const entry = find((await feed(app, token)).data, 'user:two-factor.create');
    expect(entry.attributes.description).toBe('Enabled two-factor authentication');
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
  });

  it('takes the code of the step before or after, not two away', async () => {
    const now = nextMinutes();
    for (const offset of [-1, 1]) {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      const secret = await requestSecret(app, bearer(token));
      const res = await enable(bearer(token), { code: codeAt(secret, now, offset), password: PASSWORD });
      expect(res.statusCode, `offset ${offset}: ${res.body}`).toBe(200);
    }
    for (const offset of [-2, 2]) {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      const secret = await requestSecret(app, bearer(token));
      const before = await accountState(app, user.id);
      const res = await enable(bearer(token), { code: codeAt(secret, now, offset), password: PASSWORD });
      expectError(res, 400, 'TwoFactorAuthenticationTokenInvalid', TOKEN_NOT_VALID);
      expect(await accountState(app, user.id)).toEqual(before);
    }
  });

  it('refuses a wrong code, a wrong password, a code of an older secret, and bad bodies, changing nothing', async () => {
    nextMinutes();
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const older = await requestSecret(app, bearer(token));
    // The older secret expires unconfirmed; the next request makes another.
    const now = nextMinutes(16);
    const secret = await requestSecret(app, bearer(token));
    expect(secret).not.toBe(older);
    const before = await accountState(app, user.id);
    const right = codeAt(secret, now);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');

    expectError(
      await enable(bearer(token), { code: wrong, password: PASSWORD }),
      400,
      'TwoFactorAuthenticationTokenInvalid',
      TOKEN_NOT_VALID,
    );
    expectError(
      await enable(bearer(token), { code: codeAt(older, now), password: PASSWORD }),
      400,
      'TwoFactorAuthenticationTokenInvalid',
      TOKEN_NOT_VALID,
    );
    expectError(
      await enable(bearer(token), { code: right, password: 'not the password' }),
      400,
      'BadRequestHttpException',
      PASSWORD_NOT_VALID,
    );
    expectValidation(await enable(bearer(token), { code: right.slice(1), password: PASSWORD }), {
      code: 'min',
    });
    expectValidation(await enable(bearer(token), { code: `${right}0`, password: PASSWORD }), { code: 'max' });
    expectValidation(await enable(bearer(token), { code: Number(right), password: PASSWORD }), {
      code: 'string',
    });
    expectValidation(await enable(bearer(token), { password: PASSWORD }), { code: 'required' });
    expectValidation(await enable(bearer(token), { code: right }), { password: 'required' });
    expectValidation(await enable(bearer(token), {}), { code: 'required', password: 'required' });
    expect(await accountState(app, user.id)).toEqual(before);

    // The right code still works after all that.
    expect((await enable(bearer(token), { code: right, password: PASSWORD })).statusCode).toBe(200);
  });

  it('is a 400 without a pending secret, and once 2FA is on', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const before = await accountState(app, user.id);
    const res = await enable(bearer(token), { code: '123456', password: PASSWORD });
    expectError(
      res,
      400,
      'BadRequestHttpException',
      'Two-factor authentication has not been set up on this account: request a secret first.',
    );
    expect(await accountState(app, user.id)).toEqual(before);

    const on = await twoFactorUser();
    const state = await accountState(app, on.user.id);
    const again = await enable(bearer(on.token), {
      code: codeAt(on.secret, clock.clock(), 1),
      password: PASSWORD,
    });
    expectError(again, 400, 'BadRequestHttpException', ALREADY_ENABLED);
    expect(await accountState(app, on.user.id)).toEqual(state);
  });
});

describe('POST /api/client/account/two-factor/disable', () => {
  it('turns 2FA off with the password (204): logins take a password alone again', async () => {
    const { user, token, tokens } = await twoFactorUser();
    const res = await disable(bearer(token), { password: PASSWORD });
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expect(await useTotp(bearer(token))).toBe(false);
    const state = await accountState(app, user.id);
    expect(state.recoveryTokens).toEqual([]);
    expect(state.user).toMatchObject({ totp_secret: null, totp_enabled_at: null, totp_last_step: null });
    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['user:two-factor.delete']);
    expect(find((await feed(app, token)).data, 'user:two-factor.delete').attributes.description).toBe(
      'Disabled two-factor authentication',
    );

    const plain = await login(user.username);
    expect(plain.statusCode).toBe(200);
    expect(plain.json<{ data: { complete: boolean } }>().data.complete).toBe(true);
    expect(sessionCookieOf(plain)).toMatch(/^aerie_session=[A-Za-z0-9]{48}$/);
    // The recovery tokens went with it.
    expect(tokens).toHaveLength(10);
  });

  it('refuses a wrong or missing password, changing nothing', async () => {
    const { user, token } = await twoFactorUser();
    const before = await accountState(app, user.id);
    expectError(
      await disable(bearer(token), { password: 'nope nope' }),
      400,
      'BadRequestHttpException',
      PASSWORD_NOT_VALID,
    );
    expectValidation(await disable(bearer(token), {}), { password: 'required' });
    expect(await accountState(app, user.id)).toEqual(before);
    expect(await useTotp(bearer(token))).toBe(true);
  });

  it('ends the logins waiting for their second factor', async () => {
    const { user, token, secret } = await twoFactorUser();
    const confirmation = await confirmationToken(user.username);
    expect((await disable(bearer(token), { password: PASSWORD })).statusCode).toBe(204);
    const res = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: codeAt(secret, clock.clock(), 1),
    });
    expectError(res, 400, 'DisplayException', EXPIRED);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('without 2FA on, is a 204 that records nothing', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const res = await disable(bearer(token), { password: PASSWORD });
    expect(res.statusCode).toBe(204);
    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual([]);
  });
});

describe('logging in with 2FA', () => {
  it('asks for the second factor: complete false, a confirmation token, no cookie, auth:checkpoint', async () => {
    const { user, token } = await twoFactorUser();
    const res = await login(user.email);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ data: Record<string, unknown> }>();
    expect(Object.keys(body)).toEqual(['data']);
    expect(Object.keys(body.data).sort()).toEqual(['complete', 'confirmation_token']);
    expect(body.data.complete).toBe(false);
    expect(body.data.confirmation_token).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['auth:checkpoint']);
    const entry = find((await feed(app, token)).data, 'auth:checkpoint');
    expect(entry.attributes.description).toBe('Two-factor authentication requested');
    expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
    // The token is stored only as a hash.
    const stored = await app.db.kysely
      .selectFrom('login_checkpoints')
      .select('id')
      .where('user_id', '=', user.id)
      .execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]?.id).not.toBe(body.data.confirmation_token);
  });

  it('a wrong password is refused as always, with no confirmation token', async () => {
    const { user } = await twoFactorUser();
    const res = await login(user.username, 'wrong one');
    expectError(res, 400, 'DisplayException', 'No account matching those credentials could be found.');
  });

  it('completes with a code: exactly the answer and cookie of a login without 2FA', async () => {
    const { user, token, secret } = await twoFactorUser();
    const time = nextMinutes();
    const confirmation = await confirmationToken(user.username);
    const res = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: codeAt(secret, time),
    });
    expect(res.statusCode, res.body).toBe(200);

    // A login of an account without 2FA, for the shape of the answer and the cookie.
    const plainUser = await createUser(app);
    const plain = await login(plainUser.username);
    // Both users are named alike (first name = username, email = username@example.com).
    const strip = (r: typeof res, u: { id: string; username: string }) =>
      JSON.stringify(r.json()).replaceAll(u.id, '<uuid>').replaceAll(u.username, '<username>');
    expect(strip(res, user)).toBe(strip(plain, plainUser));
    expect(res.json()).toEqual({
      data: {
        complete: true,
        intended: '/',
        user: {
          uuid: user.id,
          username: user.username,
          email: user.email,
          first_name: user.firstName,
          last_name: user.lastName,
          language: 'en',
          root_admin: false,
        },
      },
    });
    const cookieParts = (r: typeof res) =>
      String(r.headers['set-cookie'])
        .split('; ')
        .map((part) => part.replace(/^aerie_session=[A-Za-z0-9]{48}$/, 'aerie_session=<token>'));
    expect(cookieParts(res)).toEqual(cookieParts(plain));
    expect(res.headers['content-type']).toBe(plain.headers['content-type']);

    const cookie = sessionCookieOf(res);
    expect(await useTotp({ cookie })).toBe(true);
    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['auth:token', 'auth:login']);
    const entry = find((await feed(app, token)).data, 'auth:token');
    expect(entry.attributes.description).toBe('Solved the two-factor challenge');

    // Single use: the same confirmation token, even with a fresh code, completes nothing more.
    const again = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: codeAt(secret, time, 1),
    });
    expectError(again, 400, 'DisplayException', EXPIRED);
    expect(again.headers['set-cookie']).toBeUndefined();
  });

  it('takes the code as a number too (Pterodactyl validates it as numeric)', async () => {
    const { user, secret } = await twoFactorUser();
    const time = nextMinutes();
    const confirmation = await confirmationToken(user.username);
    const res = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: Number(codeAt(secret, time)),
    });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('refuses a wrong code with 400 and no cookie, records auth:fail, and the confirmation token still works', async () => {
    const { user, token, secret } = await twoFactorUser();
    const time = nextMinutes();
    const confirmation = await confirmationToken(user.username);
    const right = codeAt(secret, time);
    const before = await accountState(app, user.id);
    for (const code of [
      String((Number(right) + 1) % 1_000_000).padStart(6, '0'),
      codeAt(secret, time, 2),
      '12345',
      'abcdef',
    ]) {
      const res = await checkpoint({ confirmation_token: confirmation, authentication_code: code });
      expectError(res, 400, 'DisplayException', CODE_INVALID);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['auth:fail']);
    }
    const after = await accountState(app, user.id);
    expect({ ...after, events: after.events.filter((e) => e !== 'auth:fail') }).toEqual(before);
    const entry = find((await feed(app, token)).data, 'auth:fail');
    expect(entry.attributes.description).toBe(`Failed two-factor authentication as ${user.username}`);
    expect(entry.relationships.actor).toEqual({ object: 'null_resource', attributes: null });

    const ok = await checkpoint({ confirmation_token: confirmation, authentication_code: right });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('never takes a code twice, nor a code older than one taken', async () => {
    const { user, secret } = await twoFactorUser();
    const time = nextMinutes();
    const code = codeAt(secret, time);
    const first = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      authentication_code: code,
    });
    expect(first.statusCode, first.body).toBe(200);

    const confirmation = await confirmationToken(user.username);
    const before = await accountState(app, user.id);
    for (const reused of [code, codeAt(secret, time, -1)]) {
      const res = await checkpoint({ confirmation_token: confirmation, authentication_code: reused });
      expectError(res, 400, 'DisplayException', CODE_USED);
    }
    const after = await accountState(app, user.id);
    expect({ ...after, events: after.events.filter((e) => e !== 'auth:fail') }).toEqual(before);
    // The next step's code is new.
    clock.advance(30_000);
    const next = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: codeAt(secret, clock.clock()),
    });
    expect(next.statusCode, next.body).toBe(200);
  });

  it('does not take the code that turned 2FA on', async () => {
    const time = nextMinutes();
    const { user, secret } = await twoFactorUser();
    const res = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      authentication_code: codeAt(secret, time),
    });
    expectError(res, 400, 'DisplayException', CODE_USED);
  });

  it('completes with a recovery token, which works once', async () => {
    const { user, token, tokens } = await twoFactorUser();
    const recovery = tokens[3]!;
    const res = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      recovery_token: recovery,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(sessionCookieOf(res)).toMatch(/^aerie_session=[A-Za-z0-9]{48}$/);
    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual([
      'auth:recovery-token',
      'auth:login',
    ]);
    expect(find((await feed(app, token)).data, 'auth:recovery-token').attributes.description).toBe(
      'Used a two-factor recovery token',
    );
    expect((await accountState(app, user.id)).recoveryTokens).toHaveLength(9);

    const confirmation = await confirmationToken(user.username);
    const before = await accountState(app, user.id);
    const second = await checkpoint({ confirmation_token: confirmation, recovery_token: recovery });
    expectError(second, 400, 'DisplayException', RECOVERY_INVALID);
    expect(second.headers['set-cookie']).toBeUndefined();
    const wrong = await checkpoint({ confirmation_token: confirmation, recovery_token: 'AAAAAAAAAA' });
    expectError(wrong, 400, 'DisplayException', RECOVERY_INVALID);
    const after = await accountState(app, user.id);
    expect({ ...after, events: after.events.filter((e) => e !== 'auth:fail') }).toEqual(before);

    // Another one of the ten still works, with the same confirmation token.
    const other = await checkpoint({ confirmation_token: confirmation, recovery_token: tokens[7] });
    expect(other.statusCode, other.body).toBe(200);
    expect((await accountState(app, user.id)).recoveryTokens).toHaveLength(8);
  });

  it('expires a confirmation token after 5 minutes', async () => {
    const { user, secret } = await twoFactorUser();
    const start = nextMinutes();
    const late = await confirmationToken(user.username);
    const inTime = await confirmationToken(user.username);

    clock.set(new Date(start.getTime() + 4 * 60_000 + 59_000).toISOString());
    const ok = await checkpoint({
      confirmation_token: inTime,
      authentication_code: codeAt(secret, clock.clock()),
    });
    expect(ok.statusCode, ok.body).toBe(200);

    clock.set(new Date(start.getTime() + 5 * 60_000).toISOString());
    const before = await accountState(app, user.id);
    const res = await checkpoint({
      confirmation_token: late,
      authentication_code: codeAt(secret, clock.clock(), 1),
    });
    expectError(res, 400, 'DisplayException', EXPIRED);
    expect(res.headers['set-cookie']).toBeUndefined();
    const after = await accountState(app, user.id);
    expect({ ...after, events: after.events.filter((e) => e !== 'auth:fail') }).toEqual(before);
  });

  it('refuses an unknown confirmation token the same way', async () => {
    const res = await checkpoint({ confirmation_token: 'x'.repeat(64), authentication_code: '123456' });
    expectError(res, 400, 'DisplayException', EXPIRED);
    expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['auth:fail']);
  });

  it('answers 422 for a missing confirmation token, or neither a code nor a recovery token', async () => {
    expectValidation(await checkpoint({ authentication_code: '123456' }), { confirmation_token: 'required' });
    expectValidation(await checkpoint({ confirmation_token: 'abc' }), {
      authentication_code: 'required',
      recovery_token: 'required',
    });
    expectValidation(
      await checkpoint({ confirmation_token: 'abc', authentication_code: null, recovery_token: '' }),
      {
        authentication_code: 'required',
        recovery_token: 'required',
      },
    );
    expectValidation(await checkpoint({ confirmation_token: 'abc', authentication_code: { x: 1 } }), {
      authentication_code: 'numeric',
    });
  });

  it('a password change ends the logins waiting for their second factor', async () => {
    const { user, token, secret } = await twoFactorUser();
    const confirmation = await confirmationToken(user.username);
    const change = await app.http.inject({
      method: 'PUT',
      url: '/api/client/account/password',
      headers: bearer(token),
      payload: {
        current_password: PASSWORD,
        password: 'brand new secret',
        password_confirmation: 'brand new secret',
      },
    });
    expect(change.statusCode).toBe(204);
    const res = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: codeAt(secret, clock.clock(), 1),
    });
    expectError(res, 400, 'DisplayException', EXPIRED);
  });

  it('completes once when one confirmation token is sent twice at the same moment', async () => {
    const { user, secret } = await twoFactorUser();
    const time = nextMinutes();
    const confirmation = await confirmationToken(user.username);
    const code = codeAt(secret, time);
    const answers = await Promise.all(
      [1, 2, 3].map(() => checkpoint({ confirmation_token: confirmation, authentication_code: code })),
    );
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 400, 400]);
    expect((await accountState(app, user.id)).sessions).toHaveLength(1);
  });

  it('takes one code or recovery token once when two logins race with it', async () => {
    const { user, secret, tokens } = await twoFactorUser();
    const time = nextMinutes();
    const confirmations = [await confirmationToken(user.username), await confirmationToken(user.username)];
    const byCode = await Promise.all(
      confirmations.map((c) =>
        checkpoint({ confirmation_token: c, authentication_code: codeAt(secret, time) }),
      ),
    );
    expect(byCode.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    const left = confirmations[byCode.findIndex((r) => r.statusCode === 400)]!;
    const fresh = await confirmationToken(user.username);
    const byRecovery = await Promise.all(
      [left, fresh].map((c) => checkpoint({ confirmation_token: c, recovery_token: tokens[0] })),
    );
    expect(byRecovery.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    expect((await accountState(app, user.id)).recoveryTokens).toHaveLength(9);
    expect((await accountState(app, user.id)).sessions).toHaveLength(2);
  });

  it('leaves API keys working for a user with 2FA, as the reference panel does', async () => {
    const { token } = await twoFactorUser();
    const res = await account(bearer(token));
    expect(res.statusCode).toBe(200);
    expect(res.json<{ attributes: { use_totp: boolean } }>().attributes.use_totp).toBe(true);
    const created = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: bearer(token),
      payload: { description: 'still works' },
    });
    expect(created.statusCode, created.body).toBe(200);
  });

  it('refuses cookie-authenticated 2FA changes from another site', async () => {
    const { user, secret } = await twoFactorUser();
    const res = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      authentication_code: codeAt(secret, clock.clock(), 1),
    });
    const cookie = sessionCookieOf(res);
    const before = await accountState(app, user.id);
    const foreign = { cookie, origin: 'https://evil.example', host: 'aerie.test' };
    expectError(
      await disable(foreign, { password: PASSWORD }),
      403,
      'AccessDeniedHttpException',
      'This request comes from another site.',
    );
    expect(await accountState(app, user.id)).toEqual(before);
  });

  it('runs the whole login over a real socket, as a browser would', async () => {
    const { user, secret } = await twoFactorUser();
    const time = nextMinutes();
    await app.http.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.http.server.address() as AddressInfo).port}`;
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const first = await post('/auth/login', { user: user.username, password: PASSWORD });
    expect(first.status).toBe(200);
    expect(first.headers.get('set-cookie')).toBeNull();
    const { data } = (await first.json()) as { data: { confirmation_token: string } };
    const second = await post('/auth/login/checkpoint', {
      confirmation_token: data.confirmation_token,
      authentication_code: codeAt(secret, time),
    });
    expect(second.status).toBe(200);
    const cookie = (second.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(cookie).toMatch(/^aerie_session=[A-Za-z0-9]{48}$/);
    const me = await fetch(`${base}/api/client/account`, { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(
      ((await me.json()) as { attributes: { uuid: string; use_totp: boolean } }).attributes,
    ).toMatchObject({
      uuid: user.id,
      use_totp: true,
    });
  });
});

describe('failed checkpoints count against the login throttle', () => {
  it('refuses a 4th wrong code in 15 minutes with 429 and Retry-After, even the right one', async () => {
    const strict = await startTestApp({
      clock: clock.clock,
      env: { AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '3' },
    });
    try {
      const user = await createUser(strict);
      const { token } = await createApiKey(strict, user);
      const time = nextMinutes();
      const { secret } = await enableTwoFactor(strict, token, PASSWORD, time);
      clock.advance(30_000);
      const attacker = '10.20.30.40';
      const first = await strict.http.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { user: user.username, password: PASSWORD },
        remoteAddress: attacker,
      });
      const confirmation = first.json<{ data: { confirmation_token: string } }>().data.confirmation_token;
      const attempt = (code: string) =>
        strict.http.inject({
          method: 'POST',
          url: '/auth/login/checkpoint',
          payload: { confirmation_token: confirmation, authentication_code: code },
          remoteAddress: attacker,
        });
      const right = Number(codeAt(secret, clock.clock()));
      for (const wrong of [1, 2, 3].map((n) => String((right + n) % 1_000_000).padStart(6, '0'))) {
        expectError(await attempt(wrong), 400, 'DisplayException', CODE_INVALID);
      }
      const refused = await attempt(codeAt(secret, clock.clock()));
      expectThrottled(refused);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(900);
      expect(refused.headers['set-cookie']).toBeUndefined();
      // Unknown tokens are counted too, from the same address.
      const unknown = await strict.http.inject({
        method: 'POST',
        url: '/auth/login/checkpoint',
        payload: { confirmation_token: 'y'.repeat(64), authentication_code: '123456' },
        remoteAddress: attacker,
      });
      expect(unknown.statusCode).toBe(429);
    } finally {
      await strict.close();
    }
  });
});
