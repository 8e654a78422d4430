/**
 * GET /api/client/account/two-factor is a GET (Pterodactyl's clients call it so), and a browser
 * lets a cross-site page make one with the owner's cookie: it must not spoil a set-up under way.
 * The pending secret is handed out again for its lifetime, and replaced only after it.
 */
import { describe, expect, it } from 'vitest';
import { PENDING_SECRET_MINUTES } from '../../src/auth/two-factor.service.ts';
import { expectError } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { sessionCookieOf } from '../support/session-cookie.ts';
import { bearer, createApiKey, createUser, type TestApp } from '../support/harness.ts';
import { appForFile, codeAt, PASSWORD, requestSecret } from '../support/two-factor.ts';

const clock = new ManualClock('2026-08-01T12:00:00.000Z');
let app: TestApp;
appForFile(clock, (started) => (app = started));

const NOT_SET_UP = 'Two-factor authentication has not been set up on this account: request a secret first.';

/** Moves the clock `minutes` on, to the start of a 30-second step. */
function later(minutes: number): Date {
  const now = clock.clock().getTime() + minutes * 60_000;
  clock.set(new Date(now - (now % 30_000)).toISOString());
  return clock.clock();
}

const enable = (headers: Record<string, string>, code: string) =>
  app.http.inject({
    method: 'POST',
    url: '/api/client/account/two-factor',
    headers,
    payload: { code, password: PASSWORD },
  });

async function userWithKey() {
  const user = await createUser(app);
  const { token } = await createApiKey(app, user);
  return { user, headers: bearer(token) };
}

describe('the pending two-factor secret', () => {
  it('is the same on a second GET, even a cross-site one, and a code of the first still confirms', async () => {
    later(1);
    const { user, headers } = await userWithKey();
    const first = await requestSecret(app, headers);
    const firstCode = codeAt(first, clock.clock());

    // The second request is what a cross-site page makes the owner's browser send.
    const login = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: user.username, password: PASSWORD },
    });
    expect(login.statusCode, login.body).toBe(200);
    const crossSite = {
      cookie: sessionCookieOf(login),
      origin: 'https://evil.example',
      'sec-fetch-site': 'cross-site',
    };
    expect(await requestSecret(app, crossSite)).toBe(first);
    expect(await requestSecret(app, headers)).toBe(first);

    const res = await enable(headers, firstCode);
    expect(res.statusCode, res.body).toBe(200);
  });

  it(`is handed out for ${PENDING_SECRET_MINUTES} minutes, then replaced; a code of the expired one no longer confirms`, async () => {
    later(1);
    const { headers } = await userWithKey();
    const first = await requestSecret(app, headers);

    later(PENDING_SECRET_MINUTES - 1);
    expect(await requestSecret(app, headers)).toBe(first);

    const now = later(1);
    const second = await requestSecret(app, headers);
    expect(second).not.toBe(first);
    expect(await requestSecret(app, headers)).toBe(second);
    expectError(
      await enable(headers, codeAt(first, now)),
      400,
      'TwoFactorAuthenticationTokenInvalid',
      'The provided two-factor authentication token was not valid.',
    );
    const res = await enable(headers, codeAt(second, now));
    expect(res.statusCode, res.body).toBe(200);
  });

  it('cannot be confirmed once expired, until a new one is asked for', async () => {
    later(1);
    const { headers } = await userWithKey();
    const first = await requestSecret(app, headers);
    const now = later(PENDING_SECRET_MINUTES);
    expectError(await enable(headers, codeAt(first, now)), 400, 'BadRequestHttpException', NOT_SET_UP);
  });

  it('is one secret for requests that arrive together', async () => {
    later(1);
    const { headers } = await userWithKey();
    const secrets = await Promise.all(Array.from({ length: 6 }, () => requestSecret(app, headers)));
    expect(new Set(secrets).size).toBe(1);
    const res = await enable(headers, codeAt(secrets[0]!, clock.clock()));
    expect(res.statusCode, res.body).toBe(200);
  });

  it('is dropped by disabling two-factor authentication, and the next GET makes a new one', async () => {
    later(1);
    const { headers } = await userWithKey();
    const first = await requestSecret(app, headers);
    const drop = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/two-factor/disable',
      headers,
      payload: { password: PASSWORD },
    });
    expect(drop.statusCode, drop.body).toBe(204);
    expect(await requestSecret(app, headers)).not.toBe(first);
  });
});
