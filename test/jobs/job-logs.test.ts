import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/jobs/worker.ts';
import { systemClock } from '../../src/shared/time.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

/** A worker on the app's queue and handlers whose log lines are kept, parsed. */
function loggingWorker(app: TestApp): { worker: Worker; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const worker = new Worker({
    jobs: app.services.jobs,
    handlers: app.services.jobHandlers,
    clock: systemClock,
    logger: pino({ level: 'info' }, stream),
    node: 'test',
    pollMs: 1000,
    leaseMs: 30_000,
    timeoutMs: 60_000,
  });
  return { worker, lines };
}

describe('job logs', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('name the server and backup, and say the bytes and duration of a backup and of a restore', async () => {
    const owner = await createUser(app);
    const { token } = await createApiKey(app, owner);
    const server = await createServer(app, owner);
    fs.writeFileSync(path.join(server.volume, 'map.dat'), Buffer.alloc(123_456, 1));
    const base = `/api/client/servers/${server.identifier}/backups`;
    const created = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { name: 'b' },
    });
    const backupId = created.json<{ attributes: { uuid: string } }>().attributes.uuid;
    const { worker, lines } = loggingWorker(app);
    expect(await worker.runOnce()).toBe(true);
    const restore = await app.http.inject({
      method: 'POST',
      url: `${base}/${backupId}/restore`,
      headers: bearer(token),
      payload: {},
    });
    expect(restore.statusCode).toBe(204);
    expect(await worker.runOnce()).toBe(true);

    const stored = await app.db.kysely
      .selectFrom('backups')
      .select('bytes')
      .where('id', '=', backupId)
      .executeTakeFirstOrThrow();
    const succeeded = lines.filter((line) => line.msg === 'job succeeded');
    expect(succeeded).toHaveLength(2);
    expect(succeeded[0]).toMatchObject({
      kind: 'backup.create',
      server: server.id,
      backup: backupId,
      bytes: Number(stored.bytes),
    });
    expect(succeeded[1]).toMatchObject({
      kind: 'backup.restore',
      server: server.id,
      backup: backupId,
      bytes: 123_456,
    });
    for (const line of succeeded) expect(line.durationMs).toEqual(expect.any(Number));
    // Every line of a job names its server and backup, from its start.
    const started = lines.filter((line) => line.msg === 'job started');
    expect(started).toHaveLength(2);
    for (const line of started) expect(line).toMatchObject({ server: server.id, backup: backupId });
  });

  it('say the duration of a job that failed for good', async () => {
    const owner = await createUser(app);
    const { token } = await createApiKey(app, owner);
    const server = await createServer(app, owner);
    const base = `/api/client/servers/${server.identifier}/backups`;
    const created = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { name: 'c' },
    });
    const backupId = created.json<{ attributes: { uuid: string } }>().attributes.uuid;
    // The volume is gone: the archive cannot be made.
    fs.rmSync(server.volume, { recursive: true, force: true });
    fs.writeFileSync(server.volume, 'not a directory');
    const { worker, lines } = loggingWorker(app);
    while (await worker.runOnce());
    const ended = lines.filter(
      (line) => line.msg === 'job failed' || line.msg === 'job failed; it will be tried again',
    );
    expect(ended.length).toBeGreaterThan(0);
    for (const line of ended) {
      expect(line).toMatchObject({ kind: 'backup.create', server: server.id, backup: backupId });
      expect(typeof line.durationMs).toBe('number');
    }
  });
});
