/**
 * A TOTP code that is right but was already used (replay protection) is refused with its own
 * sentence, and only then: a wrong code gets the wrong-code answer whatever was used before.
 * The status and code are those of a wrong code; only the detail differs. Also: an empty
 * required text field is said to be required.
 */
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { bearer, createApiKey, createUser, type TestApp } from '../support/harness.ts';
import {
  accountState,
  appForFile,
  codeAt,
  enableTwoFactor,
  eventsOfBatch,
  PASSWORD,
  requestSecret,
} from '../support/two-factor.ts';

const CODE_INVALID = 'The two-factor authentication token was invalid.';
const CODE_USED = 'This two-factor authentication code was already used; wait for the next one.';
const RECOVERY_INVALID = 'The recovery token provided is not valid.';

const clock = new ManualClock('2026-09-01T12:00:00.000Z');
let app: TestApp;
appForFile(clock, (started) => (app = started));

/** Moves the clock to the start of a fresh 30-second step, some minutes on. */
function nextMinutes(minutes = 10): Date {
  const now = clock.clock().getTime() + minutes * 60_000;
  clock.set(new Date(now - (now % 30_000)).toISOString());
  return clock.clock();
}

const checkpoint = (payload: object) =>
  app.http.inject({ method: 'POST', url: '/auth/login/checkpoint', payload });

async function confirmationToken(username: string): Promise<string> {
  const res = await app.http.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { user: username, password: PASSWORD },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: { confirmation_token: string } }>().data.confirmation_token;
}

async function twoFactorUser(time: Date) {
  const user = await createUser(app);
  const { token } = await createApiKey(app, user);
  const { secret, tokens } = await enableTwoFactor(app, token, PASSWORD, time);
  return { user, token, secret, tokens };
}

/** A login completed with `code`, asserting it worked. */
async function logInWith(username: string, code: string): Promise<void> {
  const res = await checkpoint({
    confirmation_token: await confirmationToken(username),
    authentication_code: code,
  });
  expect(res.statusCode, res.body).toBe(200);
}

describe('a two-factor code used before', () => {
  it('is refused as already used at the login checkpoint: 400 DisplayException, auth:fail, no cookie', async () => {
    const time = nextMinutes();
    const { user, secret } = await twoFactorUser(time);
    clock.advance(30_000);
    const code = codeAt(secret, clock.clock());
    await logInWith(user.username, code);

    const confirmation = await confirmationToken(user.username);
    const before = await accountState(app, user.id);
    // The same code, as text and as a number, and the step before it (older than one taken).
    for (const reused of [code, Number(code), codeAt(secret, clock.clock(), -1)]) {
      const res = await checkpoint({ confirmation_token: confirmation, authentication_code: reused });
      expectError(res, 400, 'DisplayException', CODE_USED);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(await eventsOfBatch(app, res.headers['x-request-id'])).toEqual(['auth:fail']);
    }
    const after = await accountState(app, user.id);
    expect({ ...after, events: after.events.filter((e) => e !== 'auth:fail') }).toEqual(before);

    // The confirmation token still works with the next step's code.
    clock.advance(30_000);
    const next = await checkpoint({
      confirmation_token: confirmation,
      authentication_code: codeAt(secret, clock.clock()),
    });
    expect(next.statusCode, next.body).toBe(200);
  });

  it('says so of the code that turned 2FA on', async () => {
    const time = nextMinutes();
    const { user, secret } = await twoFactorUser(time);
    const res = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      authentication_code: codeAt(secret, time),
    });
    expectError(res, 400, 'DisplayException', CODE_USED);
  });

  it('is never said of a wrong code, even right after a code was used', async () => {
    const time = nextMinutes();
    const { user, secret } = await twoFactorUser(time);
    clock.advance(30_000);
    const used = codeAt(secret, clock.clock());
    await logInWith(user.username, used);

    const confirmation = await confirmationToken(user.username);
    for (const wrong of [
      String((Number(used) + 1) % 1_000_000).padStart(6, '0'),
      // Codes of steps already passed, but out of the window: not right now, so not "used".
      codeAt(secret, clock.clock(), -2),
      codeAt(secret, clock.clock(), -3),
      '12345',
      'abcdef',
    ]) {
      if (wrong === used) continue;
      const res = await checkpoint({ confirmation_token: confirmation, authentication_code: wrong });
      expectError(res, 400, 'DisplayException', CODE_INVALID);
    }
    // Another account's code of this very step is wrong for this one.
    const other = await twoFactorUser(clock.clock());
    const theirs = codeAt(other.secret, clock.clock());
    if (theirs !== used) {
      const res = await checkpoint({ confirmation_token: confirmation, authentication_code: theirs });
      expectError(res, 400, 'DisplayException', CODE_INVALID);
    }
  });

  it('is what the login that loses a race for one code is told', async () => {
    const time = nextMinutes();
    const { user, secret } = await twoFactorUser(time);
    clock.advance(30_000);
    const code = codeAt(secret, clock.clock());
    const confirmations = [await confirmationToken(user.username), await confirmationToken(user.username)];
    const answers = await Promise.all(
      confirmations.map((c) => checkpoint({ confirmation_token: c, authentication_code: code })),
    );
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    const lost = answers.find((r) => r.statusCode === 400)!;
    expectError(lost, 400, 'DisplayException', CODE_USED);
    expect((await accountState(app, user.id)).sessions).toHaveLength(1);
  });

  it('leaves a used recovery token refused as before', async () => {
    const time = nextMinutes();
    const { user, tokens } = await twoFactorUser(time);
    const first = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      recovery_token: tokens[0],
    });
    expect(first.statusCode, first.body).toBe(200);
    const again = await checkpoint({
      confirmation_token: await confirmationToken(user.username),
      recovery_token: tokens[0],
    });
    expectError(again, 400, 'DisplayException', RECOVERY_INVALID);
  });
});

describe('an empty required text field', () => {
  /** The 422's one error: its field, rule and message. */
  const fieldErrors = (res: Awaited<ReturnType<typeof checkpoint>>) => {
    expect(res.statusCode, res.body).toBe(422);
    return res
      .json<{ errors: { meta: { source_field: string; rule: string; message: string } }[] }>()
      .errors.map((e) => e.meta);
  };

  it('is said to be required (rule min), on turning 2FA on and off and on logging in', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const now = nextMinutes();
    const secret = await requestSecret(app, bearer(token));
    const enable = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/two-factor',
      headers: bearer(token),
      payload: { code: codeAt(secret, now), password: '' },
    });
    expect(fieldErrors(enable)).toEqual([
      { source_field: 'password', rule: 'min', message: 'The password field is required.' },
    ]);
    // A longer least length is still said as one.
    const short = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/two-factor',
      headers: bearer(token),
      payload: { code: '12345', password: PASSWORD },
    });
    expect(fieldErrors(short)).toEqual([
      { source_field: 'code', rule: 'min', message: 'The code field must be exactly 6 characters.' },
    ]);

    await enableTwoFactor(app, token, PASSWORD, now);
    const disable = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/two-factor/disable',
      headers: bearer(token),
      payload: { password: '' },
    });
    expect(fieldErrors(disable)).toEqual([
      { source_field: 'password', rule: 'min', message: 'The password field is required.' },
    ]);

    const login = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: user.username, password: '' },
    });
    expect(fieldErrors(login)).toEqual([
      { source_field: 'password', rule: 'min', message: 'The password field is required.' },
    ]);
  });
});
