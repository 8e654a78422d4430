import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyRepository } from '../../src/api-keys/api-key.repository.ts';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { feed } from '../support/activity.ts';
import type { KeyList, KeyResource } from '../support/api-key-bodies.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import { ManualClock } from '../support/manual-clock.ts';

const LIMIT_REACHED = 'You have reached the account limit for number of API keys.';
const NOT_FOUND = 'The requested resource could not be found on the server.';
const UNAUTHENTICATED = 'You are not authenticated to access this route.';

const clock = new ManualClock('2026-06-01T12:00:00.000Z');
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ clock: clock.clock });
});

afterAll(async () => {
  await app.close();
});

function post(token: string, payload: unknown) {
  return app.http.inject({
    method: 'POST',
    url: '/api/client/account/api-keys',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });
}

function list(token: string) {
  return app.http.inject({ method: 'GET', url: '/api/client/account/api-keys', headers: bearer(token) });
}

function remove(token: string, identifier: string) {
  return app.http.inject({
    method: 'DELETE',
    url: `/api/client/account/api-keys/${identifier}`,
    headers: bearer(token),
  });
}

async function keyCount(userId: string): Promise<number> {
  const row = await app.db.kysely
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('GET /api/client/account/api-keys', () => {
  it("lists only the caller's keys, with no meta and never a secret", async () => {
    clock.set('2026-06-01T12:00:00.000Z');
    const user = await createUser(app);
    const first = await createApiKey(app, user, { description: 'first', allowedIps: ['10.0.0.0/8', '::1'] });
    clock.set('2026-06-01T12:30:00.000Z');
    const second = await createApiKey(app, user, { description: 'second' });
    const someoneElse = await createApiKey(app, await createUser(app), { description: 'not yours' });

    clock.set('2026-06-01T13:00:00.000Z');
    const res = await list(second.token);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'list',
      data: [
        {
          object: 'api_key',
          attributes: {
            identifier: first.identifier,
            description: 'first',
            allowed_ips: ['10.0.0.0/8', '::1'],
            last_used_at: null,
            created_at: '2026-06-01T12:00:00+00:00',
          },
        },
        {
          object: 'api_key',
          attributes: {
            identifier: second.identifier,
            description: 'second',
            allowed_ips: [],
            last_used_at: '2026-06-01T13:00:00+00:00',
            created_at: '2026-06-01T12:30:00+00:00',
          },
        },
      ],
    });
    for (const token of [first.token, second.token, someoneElse.token]) {
      expect(res.body).not.toContain(token.slice(16));
    }
    expect(res.body).not.toContain(someoneElse.identifier);
  });
});

describe('POST /api/client/account/api-keys', () => {
  it('creates a key, shows its secret once, and the identifier + secret is a working bearer token', async () => {
    clock.set('2026-06-02T09:15:30.500Z');
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const res = await post(token, { description: 'deploy bot', allowed_ips: ['127.0.0.1', '10.0.0.0/8'] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<KeyResource & { meta: { secret_token: string } }>();
    const identifierPattern: unknown = expect.stringMatching(/^ptlc_[A-Za-z0-9]{11}$/);
    const secretPattern: unknown = expect.stringMatching(/^[A-Za-z0-9]{32}$/);
    expect(body).toEqual({
      object: 'api_key',
      attributes: {
        identifier: identifierPattern,
        description: 'deploy bot',
        allowed_ips: ['127.0.0.1', '10.0.0.0/8'],
        last_used_at: null,
        created_at: '2026-06-02T09:15:30+00:00',
      },
      meta: { secret_token: secretPattern },
    });
    const { identifier } = body.attributes;
    const secret = body.meta.secret_token;

    const viaNewKey = await list(identifier + secret);
    expect(viaNewKey.statusCode).toBe(200);
    expect(viaNewKey.body).not.toContain(secret);
    expectError(
      await list(identifier + secret.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'))),
      401,
      'NotAuthenticatedException',
      UNAUTHENTICATED,
    );

    const row = await app.db.kysely
      .selectFrom('api_keys')
      .selectAll()
      .where('identifier', '=', identifier)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(row.user_id).toBe(user.id);
    expect(JSON.stringify(row)).not.toContain(secret);

    const entry = (await feed(app, token, 'filter[event]=api-key.create')).data.find(
      (d) => d.attributes.properties.identifier === identifier,
    );
    expect(entry?.attributes).toMatchObject({
      event: 'user:api-key.create',
      description: `Created API key ${identifier}`,
    });
    expect(entry?.attributes.batch).toBe(res.headers['x-request-id']);
    expect(entry?.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: user.id } });
  });

  it('takes a description of up to 500 characters', async () => {
    const { token } = await createApiKey(app, await createUser(app));
    expect((await post(token, { description: 'd'.repeat(500) })).statusCode).toBe(200);
    expectValidation(await post(token, { description: 'd'.repeat(501) }), { description: 'max' });
    expectValidation(await post(token, { description: 42 }), { description: 'string' });
  });

  it('refuses a description with a NUL or another control character (one line of text) and makes no key', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    expectValidation(await post(token, { description: 'a\u0000b' }), {
      description: 'no_control_characters',
    });
    expectValidation(await post(token, { description: 'tab\tand newline\n' }), {
      description: 'no_control_characters',
    });
    expect(await keyCount(user.id)).toBe(1);
    expect((await post(token, { description: 'clé 漢字 🔑' })).statusCode).toBe(200);
  });

  it.each([
    [['10.0.0.0/33'], 'allowed_ips.0'],
    [['not-an-ip'], 'allowed_ips.0'],
    [['1.2.3'], 'allowed_ips.0'],
    [['::1/129'], 'allowed_ips.0'],
    [['300.1.1.1'], 'allowed_ips.0'],
    [['10.0.0.1/'], 'allowed_ips.0'],
    [['10.0.0.1/-1'], 'allowed_ips.0'],
    [['10.0.0.1/8/8'], 'allowed_ips.0'],
    [[''], 'allowed_ips.0'],
    [['127.0.0.1', '2001:db8::/32', 'fe80::1/200'], 'allowed_ips.2'],
  ])('refuses allowed_ips %j with 422 on %s', async (ips, field) => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    expectValidation(await post(token, { allowed_ips: ips }), { [field]: 'ip' });
    expect(await keyCount(user.id)).toBe(1);
  });

  it('names every failing entry, and takes valid addresses and ranges of both families', async () => {
    const { token } = await createApiKey(app, await createUser(app));
    expectValidation(await post(token, { allowed_ips: ['1.2.3', '127.0.0.1', 7, '::1/129'] }), {
      'allowed_ips.0': 'ip',
      'allowed_ips.2': 'ip',
      'allowed_ips.3': 'ip',
    });
    const ok = await post(token, {
      allowed_ips: ['10.0.0.0/32', '0.0.0.0/0', '::1/128', '2001:db8::/32', '::ffff:10.0.0.0/104'],
    });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('takes at most 50 allowed IPs, and only as an array', async () => {
    const { token } = await createApiKey(app, await createUser(app));
    const ips = (n: number) =>
      Array.from({ length: n }, (_, i) => `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    expect((await post(token, { allowed_ips: ips(50) })).statusCode).toBe(200);
    expectValidation(await post(token, { allowed_ips: ips(51) }), { allowed_ips: 'max' });
    for (const value of ['10.0.0.1', null, { 0: '10.0.0.1' }, 5]) {
      expectValidation(await post(token, { allowed_ips: value }), { allowed_ips: 'array' });
    }
  });

  it('refuses the 26th key with 400 DisplayException', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    for (let i = 1; i < 25; i++) await createApiKey(app, user);
    expect(await keyCount(user.id)).toBe(25);

    expectError(await post(token, { description: 'one too many' }), 400, 'DisplayException', LIMIT_REACHED);
    expect(await keyCount(user.id)).toBe(25);

    const victim = (await list(token)).json<KeyList>().data[1]?.attributes.identifier ?? '';
    expect((await remove(token, victim)).statusCode).toBe(204);
    expect((await post(token, { description: 'fits again' })).statusCode).toBe(200);
    expect(await keyCount(user.id)).toBe(25);
  });

  it('holds the limit under concurrent creation', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    for (let i = 1; i < 20; i++) await createApiKey(app, user);
    // SQLite runs each request's queries back to back; a pause after the count lets the ten
    // requests interleave between check and insert, as they would on a server database.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- applied below to the right `this`
    const countForUser = ApiKeyRepository.prototype.countForUser;
    const slowCount = vi.spyOn(ApiKeyRepository.prototype, 'countForUser').mockImplementation(async function (
      this: ApiKeyRepository,
      ...args
    ) {
      const n = await countForUser.apply(this, args);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return n;
    });
    let counted = 0;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => post(token, { description: `race ${i}` })),
    ).finally(() => {
      counted = slowCount.mock.calls.length;
      slowCount.mockRestore();
    });
    expect(counted).toBe(10);
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 400, 400, 400, 400, 400]);
    for (const refused of results.filter((r) => r.statusCode === 400)) {
      expectError(refused, 400, 'DisplayException', LIMIT_REACHED);
    }
    expect(await keyCount(user.id)).toBe(25);
    expect((await list(token)).json<KeyList>().data).toHaveLength(25);
  });
});

describe('DELETE /api/client/account/api-keys/{identifier}', () => {
  it('deletes the key with 204, records user:api-key.delete, and the key stops working', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const doomed = await createApiKey(app, user);
    expect((await list(doomed.token)).statusCode).toBe(200);

    const res = await remove(token, doomed.identifier);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectError(await list(doomed.token), 401, 'NotAuthenticatedException', UNAUTHENTICATED);
    expect(
      await app.db.kysely
        .selectFrom('api_keys')
        .select('id')
        .where('identifier', '=', doomed.identifier)
        .execute(),
    ).toEqual([]);
    expect((await list(token)).json<KeyList>().data.map((k) => k.attributes.identifier)).not.toContain(
      doomed.identifier,
    );

    const entry = (await feed(app, token, 'filter[event]=api-key.delete')).data[0];
    expect(entry?.attributes).toMatchObject({
      event: 'user:api-key.delete',
      description: `Deleted API key ${doomed.identifier}`,
      properties: { identifier: doomed.identifier },
      batch: res.headers['x-request-id'],
    });

    expectError(await remove(token, doomed.identifier), 404, 'NotFoundHttpException', NOT_FOUND);
  });

  it('lets a key delete itself', async () => {
    const { token, identifier } = await createApiKey(app, await createUser(app));
    expect((await remove(token, identifier)).statusCode).toBe(204);
    expectError(await list(token), 401, 'NotAuthenticatedException', UNAUTHENTICATED);
  });

  it("answers 404 for another user's key and leaves it in place", async () => {
    const { token } = await createApiKey(app, await createUser(app));
    const owner = await createUser(app);
    const theirs = await createApiKey(app, owner);
    expectError(await remove(token, theirs.identifier), 404, 'NotFoundHttpException', NOT_FOUND);
    expect(await keyCount(owner.id)).toBe(1);
    expect((await list(theirs.token)).statusCode).toBe(200);
  });

  it('matches the identifier exactly: another letter case or a trailing space is a 404 that deletes nothing', async () => {
    const user = await createUser(app);
    const { token, identifier } = await createApiKey(app, user);
    // ptlc_ and 11 letters or digits: swap the case of every letter after the prefix.
    const swapped =
      identifier.slice(0, 5) +
      [...identifier.slice(5)]
        .map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()))
        .join('');
    for (const near of [identifier.toUpperCase(), swapped, `${identifier}%20`, `${identifier}%09`]) {
      if (near === identifier) continue;
      expectError(await remove(token, near), 404, 'NotFoundHttpException', NOT_FOUND);
    }
    expect(await keyCount(user.id)).toBe(1);
    expect((await list(token)).statusCode).toBe(200);
  });

  it('answers 404 for an unknown identifier', async () => {
    const { token } = await createApiKey(app, await createUser(app));
    for (const identifier of ['ptlc_AAAAAAAAAAA', 'nothing', 'ptlc_%25', 'ptlc_%00AAAAAAAAAA']) {
      expectError(await remove(token, identifier), 404, 'NotFoundHttpException', NOT_FOUND);
    }
  });
});
