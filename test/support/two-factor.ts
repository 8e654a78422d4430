import { afterAll, beforeAll, expect } from 'vitest';
import { base32Decode, hotp, totpStep } from '../../src/auth/totp.ts';
import { expectError } from './expect-error.ts';
import type { ManualClock } from './manual-clock.ts';
import { bearer, startTestApp, type TestApp } from './harness.ts';

/** The password the harness's users have. */
export const PASSWORD = 'correct horse battery';
export const UNAUTHENTICATED = 'You are not authenticated to access this route.';

/**
 * One app for the test file, on `clock`: started before its tests (handed to `started`) and
 * closed after them.
 */
export function appForFile(clock: ManualClock, started: (app: TestApp) => void): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await startTestApp({ clock: clock.clock });
    started(app);
  });
  afterAll(async () => app?.close());
}

/** The login throttle's 429, with a Retry-After. */
export function expectThrottled(res: Parameters<typeof expectError>[0]): void {
  expectError(res, 429, 'TooManyRequestsHttpException', 'Too many requests, please slow down.');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

/** The code an authenticator app holding `secret` (base32) shows at `time`, `offset` steps on. */
export function codeAt(secret: string, time: Date, offset = 0): string {
  const key = base32Decode(secret);
  if (key === null) throw new Error(`not base32: ${secret}`);
  return hotp(key, totpStep(time) + offset);
}

export interface SetupBody {
  data: { image_url_data: string; secret: string; qr_code: string };
}

/** GET /api/client/account/two-factor, asserting a 200; the secret it gives. */
export async function requestSecret(app: TestApp, headers: Record<string, string>): Promise<string> {
  const res = await app.http.inject({ method: 'GET', url: '/api/client/account/two-factor', headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<SetupBody>().data.secret;
}

/**
 * Turns two-factor authentication on for the key's user with a code of `time`, as a person with
 * an authenticator app does; returns the secret and the recovery tokens.
 */
export async function enableTwoFactor(
  app: TestApp,
  token: string,
  password: string,
  time: Date,
): Promise<{ secret: string; tokens: string[] }> {
  const secret = await requestSecret(app, bearer(token));
  const res = await app.http.inject({
    method: 'POST',
    url: '/api/client/account/two-factor',
    headers: bearer(token),
    payload: { code: codeAt(secret, time), password },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { secret, tokens: res.json<{ attributes: { tokens: string[] } }>().attributes.tokens };
}

/** What a refused request must leave as it was: the user's row, sessions, tokens, checkpoints, log. */
export async function accountState(app: TestApp, userId: string) {
  const db = app.db.kysely;
  return {
    user: await db
      .selectFrom('users')
      .select(['email', 'password_hash', 'updated_at', 'totp_secret', 'totp_enabled_at', 'totp_last_step'])
      .where('id', '=', userId)
      .executeTakeFirstOrThrow(),
    sessions: (
      await db.selectFrom('sessions').select('id').where('user_id', '=', userId).orderBy('id').execute()
    ).map((r) => r.id),
    recoveryTokens: await db
      .selectFrom('recovery_tokens')
      .select(['id', 'token_hash'])
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute(),
    checkpoints: await db
      .selectFrom('login_checkpoints')
      .select('id')
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute(),
    apiKeys: await db
      .selectFrom('api_keys')
      .select('identifier')
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute(),
    events: (
      await db
        .selectFrom('activity_logs')
        .innerJoin('activity_log_subjects', 'activity_log_subjects.activity_log_id', 'activity_logs.id')
        .select('activity_logs.event')
        .where('activity_log_subjects.subject_id', '=', userId)
        .orderBy('activity_logs.id')
        .execute()
    ).map((r) => r.event),
  };
}

/** The events recorded while handling the request with this id, in order. */
export async function eventsOfBatch(app: TestApp, requestId: unknown): Promise<string[]> {
  const rows = await app.db.kysely
    .selectFrom('activity_logs')
    .select('event')
    .where('batch', '=', String(requestId))
    .orderBy('id')
    .execute();
  return rows.map((r) => r.event);
}
