import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { expectError } from '../support/expect-error.ts';
import { REDIS_URL, serverAvailable } from '../support/dialects.ts';
import { createUser, startTestApp, type TestApp } from '../support/harness.ts';

/**
 * Addresses of their own for each test, so counters never meet across tests, test files or
 * (with Redis, whose counters outlive a run) earlier runs.
 */
const someAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
const someIpv6Network = () => `2001:db8:${randomInt(65536).toString(16)}:${randomInt(65536).toString(16)}`;

function login(app: TestApp, user: string, password: string, remoteAddress: string) {
  return app.http.inject({ method: 'POST', url: '/auth/login', payload: { user, password }, remoteAddress });
}

/** A 429 in the envelope whose Retry-After is whole seconds within `maxSeconds`. */
function expectThrottled(res: LightMyRequestResponse, maxSeconds: number): number {
  expectError(res, 429, 'TooManyRequestsHttpException', 'Too many requests, please slow down.');
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(maxSeconds);
  return retryAfter;
}

async function failuresRecordedAgainst(app: TestApp, userId: string): Promise<string[]> {
  const rows = await app.db.kysely
    .selectFrom('activity_log_subjects')
    .innerJoin('activity_logs', 'activity_logs.id', 'activity_log_subjects.activity_log_id')
    .select('activity_logs.event')
    .where('subject_id', '=', userId)
    .where('activity_logs.event', '=', 'auth:fail')
    .execute();
  return rows.map((row) => row.event);
}

const QUARTER_HOUR = 900;
const HOUR = 3600;

describe('login throttle (3 failures per address per 15 minutes, 8 per account per hour)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: { AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '3', AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR: '8' },
    });
  });
  afterAll(async () => app.close());

  it('refuses an attacker after 3 failures from one address, while the owner logs in from their own', async () => {
    const owner = await createUser(app);
    const attacker = someAddress();
    for (let i = 0; i < 3; i++) {
      expect((await login(app, owner.username, `guess ${i}`, attacker)).statusCode).toBe(400);
    }
    for (let i = 0; i < 20; i++)
      expectThrottled(await login(app, owner.email, `guess ${i}`, attacker), QUARTER_HOUR);
    // Refused before the password is checked: even the right one.
    expectThrottled(await login(app, owner.username, owner.password, attacker), QUARTER_HOUR);
    // Only the attempts that were checked are recorded.
    expect(await failuresRecordedAgainst(app, owner.id)).toEqual(['auth:fail', 'auth:fail', 'auth:fail']);

    // The owner, from an address that has never logged in before, is not locked out.
    expect((await login(app, owner.username, owner.password, someAddress())).statusCode).toBe(200);
  });

  it('counts an address across accounts, and an IPv6 /64 as one address', async () => {
    const [alice, bob, carol, dave] = await Promise.all([1, 2, 3, 4].map(() => createUser(app)));
    const network = someIpv6Network();
    // One failure against each of three accounts, each from another address in one /64.
    for (const [user, host] of [
      [alice, ':1'],
      [bob, ':2'],
      [carol, 'abcd:ef01:2345:6789'],
    ] as const) {
      expect((await login(app, user!.username, 'nope', `${network}:${host}`)).statusCode).toBe(400);
    }
    // A fourth account, from yet another address in that /64: refused.
    expectThrottled(
      await login(app, dave!.username, dave!.password, `${network}:ffff:ffff:ffff:ffff`),
      QUARTER_HOUR,
    );
    // Every one of them gets in from elsewhere.
    for (const user of [alice, bob, carol, dave]) {
      expect((await login(app, user!.username, user!.password, someAddress())).statusCode).toBe(200);
    }

    const address = someAddress();
    for (const user of [alice, bob, carol]) {
      expect((await login(app, user!.username, 'nope', address)).statusCode).toBe(400);
    }
    // The same address written as IPv4-mapped IPv6 is the same address.
    expectThrottled(await login(app, dave!.username, dave!.password, `::ffff:${address}`), QUARTER_HOUR);
  });

  it('stops guesses spread over many addresses at the account ceiling, but not the owner from a known address', async () => {
    const owner = await createUser(app);
    const home = someAddress();
    expect((await login(app, owner.username, owner.password, home)).statusCode).toBe(200);

    // Eight failures from four addresses: under each address's limit, at the account's ceiling.
    const spread = [1, 2, 3, 4].map(() => someAddress());
    for (let i = 0; i < 8; i++) {
      expect((await login(app, owner.username, `guess ${i}`, spread[i % 4]!)).statusCode).toBe(400);
    }
    // From any new address, even with the right password: refused until the hour ends.
    const retryAfter = expectThrottled(await login(app, owner.username, owner.password, someAddress()), HOUR);
    expect(retryAfter).toBeGreaterThan(QUARTER_HOUR);
    expect(await failuresRecordedAgainst(app, owner.id)).toHaveLength(8);

    // The owner's address, where they logged in before, still gets in, and may still mistype.
    expect((await login(app, owner.username, 'typo', home)).statusCode).toBe(400);
    expect((await login(app, owner.username, owner.password, home)).statusCode).toBe(200);

    // The owner's login clears nothing for anyone else: a new address is still refused.
    expectThrottled(await login(app, owner.username, owner.password, someAddress()), HOUR);
  });

  it('holds under concurrent attempts: at most 3 passwords per address, 8 per account', async () => {
    const erin = await createUser(app);
    const address = someAddress();
    const fromOne = await Promise.all(
      Array.from({ length: 10 }, (_, i) => login(app, erin.username, `guess ${i}`, address)),
    );
    expect(fromOne.map((r) => r.statusCode).sort()).toEqual([
      400, 400, 400, 429, 429, 429, 429, 429, 429, 429,
    ]);

    const fromMany = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        login(app, erin.username, `guess ${i}`, `10.78.${randomInt(256)}.${i + 1}`),
      ),
    );
    const statuses = fromMany.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 400)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
    expect(await failuresRecordedAgainst(app, erin.id)).toHaveLength(8);
  });

  it('does not charge an address for attempts refused with 429', async () => {
    const frank = await createUser(app);
    const grace = await createUser(app);
    for (let i = 0; i < 8; i++) await login(app, frank.username, 'nope', `10.79.${randomInt(256)}.${i + 1}`);
    const address = someAddress();
    for (let i = 0; i < 3; i++)
      expectThrottled(await login(app, frank.username, frank.password, address), HOUR);
    for (let i = 0; i < 2; i++)
      expect((await login(app, grace.username, 'nope', address)).statusCode).toBe(400);
    expect((await login(app, grace.username, grace.password, address)).statusCode).toBe(200);
  });

  it('does not count successful logins', async () => {
    const dave = await createUser(app);
    const address = someAddress();
    for (let i = 0; i < 12; i++)
      expect((await login(app, dave.username, dave.password, address)).statusCode).toBe(200);
  });
});

describe('login throttle off (AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES=0)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: { AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '0', AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR: '1' },
    });
  });
  afterAll(async () => app.close());

  it('never refuses, whatever the account ceiling says', async () => {
    const user = await createUser(app);
    for (let i = 0; i < 15; i++) {
      expect((await login(app, user.username, 'nope', i % 2 ? '10.0.0.1' : '10.0.0.2')).statusCode).toBe(400);
    }
    expect((await login(app, user.username, user.password, '10.0.0.3')).statusCode).toBe(200);
  });
});

describe.runIf(await serverAvailable(REDIS_URL))('login throttle shared through Redis', () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    const env = {
      AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '3',
      AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR: '8',
      REDIS_URL,
    };
    first = await startTestApp({ env });
    // A second process: its own memory, the same database file and the same Redis.
    second = await startTestApp({ env, databaseUrl: first.config.database.url });
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  it('adds up an address over processes without locking the owner out', async () => {
    const owner = await createUser(first);
    const attacker = someAddress();
    const statuses = [];
    for (const app of [first, second, first, second, first]) {
      statuses.push((await login(app, owner.username, 'nope', attacker)).statusCode);
    }
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
    expect((await login(second, owner.username, owner.password, someAddress())).statusCode).toBe(200);
  });

  it('adds up the account ceiling over processes, and honours a known address recorded by the other', async () => {
    const owner = await createUser(first);
    const home = someAddress();
    expect((await login(first, owner.username, owner.password, home)).statusCode).toBe(200);
    for (let i = 0; i < 8; i++) {
      const app = i % 2 ? first : second;
      expect((await login(app, owner.username, 'nope', someAddress())).statusCode).toBe(400);
    }
    expectThrottled(await login(first, owner.username, owner.password, someAddress()), HOUR);
    expectThrottled(await login(second, owner.username, owner.password, someAddress()), HOUR);
    expect((await login(second, owner.username, owner.password, home)).statusCode).toBe(200);
  });
});
