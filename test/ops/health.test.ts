import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import { SERVER_DIALECT_CASES, scratchDatabase } from '../support/dialects.ts';
import { startS3 } from '../support/s3.ts';
import { createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';

const opened: TestApp[] = [];
async function app(options: Parameters<typeof startTestApp>[0] = {}): Promise<TestApp> {
  const started = await startTestApp(options);
  opened.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.close()));
});

async function activityCount(a: TestApp): Promise<number> {
  const row = await a.db.kysely
    .selectFrom('activity_logs')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('GET /health/live', () => {
  it('answers 200 without authentication', async () => {
    const a = await app();
    const response = await a.http.inject({ method: 'GET', url: '/health/live' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });
});

describe('GET /health/ready', () => {
  it('answers 200 naming each check when the database, migrations and storage are fine', async () => {
    const a = await app();
    const response = await a.http.inject({ method: 'GET', url: '/health/ready' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      status: 'ok',
      checks: { database: 'ok', migrations: 'ok', storage: 'ok' },
    });
    // The storage probe stored an archive through the backup storage, and left nothing of it.
    expect(fs.readdirSync(a.config.backupsDir)).toEqual(['.ready']);
    expect(fs.readdirSync(path.join(a.config.backupsDir, '.ready'))).toEqual([]);
  });

  it('answers 503 naming the storage when backups cannot be written', async () => {
    const a = await app();
    fs.rmSync(a.config.backupsDir, { recursive: true, force: true });
    fs.writeFileSync(a.config.backupsDir, 'not a directory');
    const response = await a.http.inject({ method: 'GET', url: '/health/ready' });
    expect(response.statusCode).toBe(503);
    const body = response.json<{ status: string; checks: Record<string, string>; errors: unknown[] }>();
    expect(body.status).toBe('unavailable');
    expect(body.checks).toEqual({ database: 'ok', migrations: 'ok', storage: 'not writable' });
    expect(body.errors).toEqual([
      {
        code: 'ServiceUnavailableHttpException',
        status: '503',
        detail: 'Not ready: storage not writable.',
      },
    ]);
    // Back to ready as soon as the storage is.
    fs.rmSync(a.config.backupsDir);
    expect((await a.http.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
  });

  it('answers 503 naming the migrations when one has not run', async () => {
    const a = await app();
    const { sql } = await import('kysely');
    await sql`delete from aerie_migrations where name = ${'2026_11_27_000000_retention_indexes'}`.execute(
      a.db.kysely,
    );
    const response = await a.http.inject({ method: 'GET', url: '/health/ready' });
    expect(response.statusCode).toBe(503);
    expect(response.json<{ checks: Record<string, string> }>().checks).toEqual({
      database: 'ok',
      migrations: '1 pending (2026_11_27_000000_retention_indexes); run aerie migrate',
      storage: 'ok',
    });
  });

  const postgres = SERVER_DIALECT_CASES.find((dialect) => dialect.kind === 'postgres')!;
  it.runIf(postgres.available)(
    'answers 503 naming the database when it is gone, and /health/live still answers 200',
    async () => {
      const scratch = await scratchDatabase(postgres);
      const a = await app({ databaseUrl: scratch.url });
      expect((await a.http.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
      await scratch.drop();
      const response = await a.http.inject({ method: 'GET', url: '/health/ready' });
      expect(response.statusCode).toBe(503);
      const { checks } = response.json<{ checks: Record<string, string> }>();
      expect(checks.database).toBe('unreachable');
      expect(checks.storage).toBe('ok');
      expect((await a.http.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    },
    30_000,
  );

  it('is never rate-limited and writes nothing to the activity log', async () => {
    const a = await app({ env: { AERIE_RATE_LIMIT_PER_MINUTE: '2' } });
    const user = await createUser(a);
    const { token } = await createApiKey(a, user);
    const before = await activityCount(a);
    for (let i = 0; i < 10; i++) {
      for (const url of ['/health/live', '/health/ready']) {
        const response = await a.http.inject({
          method: 'GET',
          url,
          headers: { authorization: `Bearer ${token}` },
        });
        expect(response.statusCode).toBe(200);
        expect(response.headers['x-ratelimit-limit']).toBeUndefined();
      }
    }
    expect(await activityCount(a)).toBe(before);
    // The limit itself is on: the API does get limited.
    const codes = [];
    for (let i = 0; i < 3; i++)
      codes.push(
        (
          await a.http.inject({
            method: 'GET',
            url: '/api/client',
            headers: { authorization: `Bearer ${token}` },
          })
        ).statusCode,
      );
    expect(codes).toContain(429);
  });
});

describe('GET /health/ready with backups in S3', () => {
  it('stores and deletes a probe object in the bucket, and names the storage when the store is away', async () => {
    const s3 = await startS3();
    try {
      const a = await app({ env: s3.env() });
      const response = await a.http.inject({ method: 'GET', url: '/health/ready' });
      expect(response.json()).toEqual({
        status: 'ok',
        checks: { database: 'ok', migrations: 'ok', storage: 'ok' },
      });
      expect(await s3.keys()).toEqual([]);

      const closed = net.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as net.AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const away = await app({ env: s3.env(`http://127.0.0.1:${port}`) });
      const refused = await away.http.inject({ method: 'GET', url: '/health/ready' });
      expect(refused.statusCode).toBe(503);
      const { checks } = refused.json<{ checks: Record<string, string> }>();
      expect(checks.database).toBe('ok');
      expect(checks.storage).not.toBe('ok');
    } finally {
      await Promise.all(opened.splice(0).map((a) => a.close()));
      await s3.close();
    }
  }, 30_000);
});
