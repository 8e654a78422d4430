import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../src/jobs/worker.ts';
import { createApiKey, createServer, createUser, startTestApp, type TestApp } from '../support/harness.ts';

const run = promisify(execFile);

describe('examples/backup-and-restore.mjs against a running Aerie', () => {
  let app: TestApp;
  let worker: Worker;
  let url: string;
  beforeAll(async () => {
    app = await startTestApp({ env: { AERIE_WORKER_POLL_MS: '50' } });
    await app.http.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.http.server.address() as AddressInfo).port}`;
    worker = app.services.createWorker('e2e');
    worker.start();
  });
  afterAll(async () => {
    await worker.stop();
    await app.close();
  });

  it('lists servers, backs one up, restores it and reads both feeds, through the API alone', async () => {
    const owner = await createUser(app);
    const server = await createServer(app, owner, { name: 'survival' });
    fs.writeFileSync(path.join(server.volume, 'world.dat'), 'the world as it was');
    const { token } = await createApiKey(app, owner);

    const script = run('node', ['examples/backup-and-restore.mjs'], {
      env: { ...process.env, AERIE_URL: url, AERIE_TOKEN: token },
    });
    const { stdout } = await script;

    expect(stdout).toContain(`server survival (${server.identifier})`);
    expect(stdout).toMatch(/backup done: \d+ bytes, sha256:[0-9a-f]{64}/);
    expect(stdout).toContain('restore finished: server:backup.restore-complete');
    expect(stdout).toContain('server:backup.start');
    expect(stdout).toMatch(/account .* user:api-key.create/);
    expect(fs.readFileSync(path.join(server.volume, 'world.dat'), 'utf8')).toBe('the world as it was');
    const restored = await app.db.kysely.selectFrom('jobs').select(['kind', 'state']).orderBy('id').execute();
    expect(restored).toEqual([
      { kind: 'backup.create', state: 'succeeded' },
      { kind: 'backup.restore', state: 'succeeded' },
    ]);
  });
});
