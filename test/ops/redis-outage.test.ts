/**
 * Redis is an accelerator, not a dependency a request waits on: a real `aerie serve` on a Redis
 * of the test's own, which is then stopped, hung (SIGSTOP) and brought back. Meanwhile every
 * login (right password or wrong), every client API call and every probe answers within 2 s and
 * none with a 500; the limits still hold, counted in the process; readiness stays 200 and says
 * `degraded`, the metrics say Redis is down, and the log says so once each way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_UNREACHABLE } from '../../src/ops/health.service.ts';
import { spawnAerie, type AerieProcess } from '../support/aerie-process.ts';
import { createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../support/private-redis.ts';
import { freePort, until } from '../support/wait.ts';

/** What the bar allows any request while Redis is away. */
const WITHIN_MS = 2000;

describe.runIf(redisServerInstalled)('aerie serve while Redis is away', () => {
  let setup: TestApp;
  let redis: PrivateRedis;
  let serve: AerieProcess;
  let base: string;
  /** One account for each phase, so that no phase meets the counts of another. */
  const accounts: { user: Awaited<ReturnType<typeof createUser>>; token: string }[] = [];

  beforeAll(async () => {
    setup = await startTestApp();
    for (let i = 0; i < 3; i++) {
      const user = await createUser(setup);
      accounts.push({ user, token: (await createApiKey(setup, user)).token });
    }
    redis = await startPrivateRedis();
    const port = await freePort();
    serve = spawnAerie(setup, ['serve', '--host', '127.0.0.1', '--port', String(port)], {
      REDIS_URL: redis.url,
      TRUST_PROXY: '127.0.0.1',
      AERIE_METRICS: 'on',
      AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '3',
      AERIE_RATE_LIMIT_PER_MINUTE: '5',
    });
    base = `http://127.0.0.1:${port}`;
    await until(() => fetch(`${base}/health/live`).then((r) => r.ok), {
      timeoutMs: 60_000,
      what: 'aerie serve to listen',
      context: () => serve.output(),
    });
  });

  afterAll(async () => {
    if (serve !== undefined && serve.child.exitCode === null) {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    redis?.resume();
    await redis?.stop();
    await setup?.close();
  });

  /** A request from `address` (through the trusted proxy): its status, body and time taken. */
  async function call(
    method: string,
    path: string,
    options: { address?: string; body?: unknown; token?: string } = {},
  ) {
    const began = performance.now();
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        'x-forwarded-for': options.address ?? '192.0.2.1',
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    const ms = performance.now() - began;
    expect(ms, `${method} ${path} took ${Math.round(ms)} ms`).toBeLessThan(WITHIN_MS);
    expect(res.status, `${method} ${path}: ${text}`).not.toBe(500);
    return { status: res.status, text, ms };
  }

  const login = (username: string, password: string, address: string) =>
    call('POST', '/auth/login', { address, body: { user: username, password } });

  async function readiness() {
    const res = await call('GET', '/health/ready');
    return {
      status: res.status,
      body: JSON.parse(res.text) as { status: string; checks: Record<string, string> },
    };
  }

  async function metric(name: string): Promise<number> {
    const { text } = await call('GET', '/metrics');
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return Number(line?.split(' ')[1]);
  }

  const logged = (message: string) => serve.output().split(message).length - 1;

  /** Everything a client does, with the limits counted in this process from zero. */
  async function serveEverything(phase: number) {
    const { user, token } = accounts[phase]!;
    // Right password: in. Wrong: the usual 400, three times from one address, then 429 even
    // for the right one (the throttle holds, in memory).
    expect((await login(user.username, user.password, `198.51.100.${phase}`)).status).toBe(200);
    const guesser = `203.0.113.${phase}`;
    for (let i = 0; i < 3; i++) expect((await login(user.username, `wrong ${i}`, guesser)).status).toBe(400);
    expect((await login(user.username, 'wrong again', guesser)).status).toBe(429);
    expect((await login(user.username, user.password, guesser)).status).toBe(429);
    // The client API: five calls a minute for this user, then 429.
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call('GET', '/api/client', { token })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect((await call('GET', '/api/client', { token: `ptlc_${'x'.repeat(43)}` })).status).toBe(401);
  }

  it(
    'serves everything within 2 s and never a 500, counting limits in memory, and recovers',
    { timeout: 120_000 },
    async () => {
      // Redis answers: ready, and Redis says ok.
      expect(await readiness()).toEqual({
        status: 200,
        body: { status: 'ok', checks: { database: 'ok', migrations: 'ok', storage: 'ok', redis: 'ok' } },
      });
      expect((await call('GET', '/api/client', { token: accounts[0]!.token })).status).toBe(200);
      expect(await metric('aerie_redis_up')).toBe(1);

      // Stopped: connections refused.
      await redis.stop();
      const stopped = await readiness();
      expect(stopped).toEqual({
        status: 200,
        body: {
          status: 'degraded',
          checks: { database: 'ok', migrations: 'ok', storage: 'ok', redis: REDIS_UNREACHABLE },
        },
      });
      await serveEverything(1);
      expect(await metric('aerie_redis_up')).toBe(0);
      expect(await metric('aerie_redis_fallbacks_total')).toBeGreaterThan(10);
      expect(logged('Redis does not answer')).toBe(1);

      // Back: the readiness probe finds it, and counting goes back to Redis.
      await redis.start();
      await until(async () => (await readiness()).body.checks.redis === 'ok', {
        timeoutMs: 10_000,
        what: 'readiness to find Redis again',
      });
      expect((await readiness()).body.status).toBe('ok');
      const { user } = accounts[0]!;
      expect((await login(user.username, user.password, '198.51.100.50')).status).toBe(200);
      expect(await metric('aerie_redis_up')).toBe(1);
      expect(logged('Redis answers again')).toBe(1);

      // Hung: connected, but answering nothing.
      redis.pause();
      try {
        expect((await readiness()).body).toMatchObject({
          status: 'degraded',
          checks: { redis: REDIS_UNREACHABLE },
        });
        await serveEverything(2);
        expect(logged('Redis does not answer')).toBe(2);
      } finally {
        redis.resume();
      }
      await until(async () => (await readiness()).body.checks.redis === 'ok', {
        timeoutMs: 10_000,
        what: 'readiness to find Redis again',
      });
      // The line is written before readiness answers, but the child's output may reach this
      // process after the answer does.
      await until(() => logged('Redis answers again') >= 2, {
        timeoutMs: 5_000,
        what: 'the log line saying Redis answers again',
      });
      expect(logged('Redis answers again')).toBe(2);
    },
  );
});
