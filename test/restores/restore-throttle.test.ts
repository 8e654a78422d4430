import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupOf } from '../support/archives.ts';
import { postRestore } from '../support/restores.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

describe('the per-server restore limit', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: { AERIE_RATE_LIMIT_PER_MINUTE: '10000', AERIE_RESTORE_LIMIT_PER_15_MINUTES: '2' },
    });
  });
  afterAll(async () => app.close());

  async function serverWithBackup() {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const backup = await importBackup(app, server.id, (await backupOf({ 'a.txt': 'a' })).archive);
    return { server, backup, token: (await createApiKey(app, owner)).token };
  }

  it('allows the limit per server in 15 minutes, then answers 429 with Retry-After', async () => {
    const { server, backup, token } = await serverWithBackup();
    for (let i = 0; i < 2; i++) {
      expect((await postRestore(app, token, server.identifier, backup.uuid, {})).statusCode).toBe(204);
      await drainJobs(app);
    }
    const refused = await postRestore(app, token, server.identifier, backup.uuid, {});
    expect(refused.statusCode).toBe(429);
    expect(refused.json<{ errors: { code: string }[] }>().errors[0]?.code).toBe(
      'TooManyRequestsHttpException',
    );
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // Matched here rather than with LIKE: the payload column is json on PostgreSQL, not text.
    const payloads = await app.db.kysely.selectFrom('jobs').select('payload').execute();
    expect(payloads.filter((job) => job.payload.includes(server.id))).toHaveLength(2);

    const other = await serverWithBackup();
    expect(
      (await postRestore(app, other.token, other.server.identifier, other.backup.uuid, {})).statusCode,
    ).toBe(204);
  });

  it('does not count a restore that was refused', async () => {
    const { server, backup, token } = await serverWithBackup();
    expect((await postRestore(app, token, server.identifier, backup.uuid, {})).statusCode).toBe(204);
    // The server is busy restoring: these are refused and must not use up the limit.
    for (let i = 0; i < 3; i++) {
      expect((await postRestore(app, token, server.identifier, backup.uuid, {})).statusCode).toBe(409);
    }
    await drainJobs(app);
    expect((await postRestore(app, token, server.identifier, backup.uuid, {})).statusCode).toBe(204);
  });
});
