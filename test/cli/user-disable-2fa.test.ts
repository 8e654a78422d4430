/**
 * `aerie user disable-2fa <user>`: the way back in for a user who has lost both their
 * authenticator and their recovery tokens, run by whoever runs Aerie.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAerie } from '../support/aerie-process.ts';
import { createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { enableTwoFactor } from '../support/two-factor.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

const login = (user: string, password: string) =>
  app.http.inject({ method: 'POST', url: '/auth/login', payload: { user, password } });

describe('aerie user disable-2fa', () => {
  it('turns two-factor off, drops the recovery tokens, records it with no actor, and says so', async () => {
    const user = await createUser(app, { email: 'lost-phone@example.com' });
    const { token } = await createApiKey(app, user);
    await enableTwoFactor(app, token, user.password, new Date());
    expect((await login(user.username, user.password)).json()).toMatchObject({ data: { complete: false } });

    const aerie = spawnAerie(app, ['user', 'disable-2fa', 'lost-phone@example.com']);
    expect(await aerie.exited, aerie.output()).toBe(0);
    expect(aerie.output()).toContain(`two-factor authentication is now off for ${user.username}`);

    // The password alone logs in again, and nothing of the old second factor is left.
    expect((await login(user.username, user.password)).json()).toMatchObject({ data: { complete: true } });
    const row = await app.db.kysely
      .selectFrom('users')
      .select(['totp_secret', 'totp_enabled_at'])
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ totp_secret: null, totp_enabled_at: null });
    const tokens = await app.db.kysely
      .selectFrom('recovery_tokens')
      .select('id')
      .where('user_id', '=', user.id)
      .execute();
    expect(tokens).toEqual([]);
    const entries = await app.db.kysely
      .selectFrom('activity_logs')
      .select(['event', 'actor_id'])
      .where('event', '=', 'user:two-factor.delete')
      .execute();
    expect(entries).toEqual([{ event: 'user:two-factor.delete', actor_id: null }]);

    // A second run finds nothing to do, changes nothing and says that.
    const again = spawnAerie(app, ['user', 'disable-2fa', user.username, '--json']);
    expect(await again.exited, again.output()).toBe(0);
    expect(JSON.parse(again.output())).toEqual({
      uuid: user.id,
      username: user.username,
      two_factor_disabled: false,
    });
  });

  it('refuses a user that does not exist, with a message and a non-zero exit', async () => {
    const aerie = spawnAerie(app, ['user', 'disable-2fa', 'nobody@example.com']);
    expect(await aerie.exited).not.toBe(0);
    expect(aerie.output()).toContain('No user "nobody@example.com"');
  });
});
