import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobContext } from '../../src/jobs/worker.ts';
import type { JobPayloads } from '../../src/jobs/job-kinds.ts';
import { backupOf, contents } from '../support/archives.ts';
import { activityOfServer, postRestore, restoreLeftovers } from '../support/restores.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

// A worker can stall (a long pause, a hung disk) past its lease; another worker then takes the
// job over. The stalled one must then neither swap its tree in nor touch the new owner's files.
describe('a restore whose worker lost its lease', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app.close());

  it('does not swap, does not disturb the new owner, and leaves exactly one completion', async () => {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    fs.writeFileSync(path.join(server.volume, 'live.txt'), 'live');
    const { archive } = await backupOf({ 'world.dat': 'from the backup' });
    const backup = await importBackup(app, server.id, archive);
    const { token } = await createApiKey(app, owner);
    expect(
      (await postRestore(app, token, server.identifier, backup.uuid, { truncate: true })).statusCode,
    ).toBe(204);

    // The stalled worker's claim: attempt 1, its lease already run out.
    const stalled = await app.services.jobs.claim('stalled', iso(), iso(-1));
    expect(stalled?.attempts).toBe(1);
    // Another worker takes the job over (attempt 2) and restores.
    expect(await drainJobs(app)).toBe(1);
    expect(await contents(server.volume)).toMatchObject({ 'world.dat': expect.anything() as unknown });
    const restored = await contents(server.volume);

    // Now the stalled worker wakes up and carries on with its attempt.
    const job: JobContext<JobPayloads['backup.restore']> = {
      id: stalled!.id,
      payload: JSON.parse(stalled!.payload) as JobPayloads['backup.restore'],
      batch: stalled!.batch,
      attempt: 1,
      signal: new AbortController().signal,
      renewLease: () => app.services.jobs.heartbeat(stalled!.id, 'stalled', iso(), iso(60_000)),
    };
    // Its own signal was never aborted (its heartbeats stalled with it): only the renewal stops it.
    await expect(app.services.jobHandlers['backup.restore'].run(job)).rejects.toThrow();
    expect(await contents(server.volume)).toEqual(restored);
    expect(await restoreLeftovers(app)).toEqual([]);
    const outcomes = (await activityOfServer(app, server.id)).map((e) => e.event);
    expect(outcomes).toEqual(['server:backup.restore', 'server:backup.restore-complete']);
  });

  it('cleans up the directories an earlier attempt left, whatever the attempt', async () => {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    fs.writeFileSync(path.join(server.volume, 'live.txt'), 'live');
    const { archive } = await backupOf({ 'world.dat': 'from the backup' });
    const backup = await importBackup(app, server.id, archive);
    const { token } = await createApiKey(app, owner);
    expect((await postRestore(app, token, server.identifier, backup.uuid, {})).statusCode).toBe(204);
    // Two earlier attempts died with their staging half-built.
    const first = await app.services.jobs.claim('gone-1', iso(), iso(-1));
    await app.services.jobs.claim('gone-2', iso(), iso(-1));
    for (const suffix of ['', '-2']) {
      const staging = path.join(app.config.volumesDir, `.restore-${server.id}-${first!.id}${suffix}.staging`);
      fs.mkdirSync(staging);
      fs.writeFileSync(path.join(staging, `half-${randomUUID()}`), 'x');
    }
    expect(await drainJobs(app)).toBe(1);
    expect(await restoreLeftovers(app)).toEqual([]);
    expect(Object.keys(await contents(server.volume)).sort()).toEqual(['live.txt', 'world.dat']);
  });
});
