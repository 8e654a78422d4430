import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, serverAvailable } from '../support/dialects.ts';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';

/** An address of its own for each test, so counters never meet across tests or test files. */
const someAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

async function get(app: TestApp, headers: Record<string, string>, remoteAddress: string) {
  return app.http.inject({ method: 'GET', url: '/api/client/account/api-keys', headers, remoteAddress });
}

describe('the API rate limit (in memory)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { AERIE_RATE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(async () => app.close());

  it('counts per user, says so on every response, and refuses past the limit with Retry-After', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const address = someAddress();
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(app, bearer(token), address);
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      remaining.push(String(res.headers['x-ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const refused = await get(app, bearer(token), someAddress());
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(refused.json()).toEqual({
      errors: [{ code: 'TooManyRequestsHttpException', status: '429', detail: expect.any(String) as string }],
    });

    const other = await createUser(app);
    const otherKey = await createApiKey(app, other);
    expect((await get(app, bearer(otherKey.token), address)).statusCode).toBe(200);
  });

  it('counts failed authentication per address and then refuses the address before checking credentials', async () => {
    const address = someAddress();
    for (let i = 0; i < 3; i++) {
      const res = await get(app, bearer(`ptlc_${'x'.repeat(43)}`), address);
      expect(res.statusCode).toBe(401);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
    }
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    expect((await get(app, bearer(token), address)).statusCode).toBe(429);
    expect((await get(app, bearer(token), someAddress())).statusCode).toBe(200);
  });
});

describe('the API rate limit off', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { AERIE_RATE_LIMIT_PER_MINUTE: '0' } });
  });
  afterAll(async () => app.close());

  it('never refuses and sends no limit headers', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    for (let i = 0; i < 300; i++) expect((await get(app, bearer(token), '10.0.0.1')).statusCode).toBe(200);
    expect((await get(app, bearer(token), '10.0.0.1')).headers['x-ratelimit-limit']).toBeUndefined();
  });
});

describe.runIf(await serverAvailable(REDIS_URL))('the API rate limit shared through Redis', () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    first = await startTestApp({ env: { AERIE_RATE_LIMIT_PER_MINUTE: '4', REDIS_URL } });
    // A second process: its own memory, the same database file and the same Redis.
    second = await startTestApp({
      env: { AERIE_RATE_LIMIT_PER_MINUTE: '4', REDIS_URL },
      databaseUrl: first.config.database.url,
    });
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  it('adds up requests made to different processes', async () => {
    const user = await createUser(first);
    const { token } = await createApiKey(first, user);
    const address = someAddress();
    const statuses = [];
    for (const app of [first, second, first, second, first, second]) {
      statuses.push((await get(app, bearer(token), address)).statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });
});
