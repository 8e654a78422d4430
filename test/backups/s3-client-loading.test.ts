/**
 * Where the S3 client is loaded (about 20 MB each time): `aerie backup create` uploads from its
 * archive thread (an archive backup) or its snapshot thread (a snapshot backup), which loads its
 * own, so its main thread never does; `aerie serve` loads it in its main thread while it starts,
 * before the first download link or deletion needs it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import { writeTree } from '../support/archives.ts';
import { BACKUP_FORMATS, formatEnv, storedKey } from '../support/backup-formats.ts';
import { createServer, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { startS3, type TestS3 } from '../support/s3.ts';
import { freePort, until } from '../support/wait.ts';

let s3: TestS3;
let app: TestApp;
beforeAll(async () => {
  s3 = await startS3();
  app = await startTestApp({ env: s3.env() });
});
afterAll(async () => {
  await app.close();
  await s3.close();
});
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Starts `aerie <args>` on the test app's database and data directory, with S3 storage, and a
 * probe that writes the npm packages its main thread loaded (its module cache) as it exits.
 */
function aerieWithProbe(args: string[], env: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-s3-loading-'));
  dirs.push(dir);
  const probe = path.join(dir, 'probe.cjs');
  const report = path.join(dir, 'loaded.json');
  fs.writeFileSync(
    probe,
    `process.on('exit', () => {
       const names = new Set();
       for (const file of Object.keys(require.cache)) {
         const m = /node_modules[\\\\/]((?:@[^\\\\/]+[\\\\/])?[^\\\\/]+)[\\\\/]/.exec(file);
         if (m) names.add(m[1].replace('\\\\', '/'));
       }
       require('fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify([...names]));
     });`,
  );
  const child = spawn(process.execPath, ['--require', probe, ...aerieArgv(args)], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...s3.env(),
      AERIE_DATA_DIR: app.dataDir,
      DATABASE_URL: app.config.database.url,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => output,
    loaded: () => JSON.parse(fs.readFileSync(report, 'utf8')) as string[],
  };
}

describe('the S3 client', () => {
  it.each(BACKUP_FORMATS)(
    'is not loaded by the main thread of `aerie backup create` making %s backups: the thread that makes one uploads',
    async (format) => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      await writeTree(server.volume, {
        'server.properties': 'motd=hi\n',
        'world/level.dat': 'x'.repeat(4096),
      });
      const aerie = aerieWithProbe(
        ['backup', 'create', '--server', server.identifier, '--name', 'cli', '--json'],
        formatEnv(format),
      );
      expect(await aerie.exited, aerie.output()).toBe(0);
      const { uuid } = JSON.parse(aerie.output().slice(aerie.output().indexOf('{'))) as { uuid: string };
      // The backup is in the bucket…
      expect(await s3.exists(storedKey(server.id, uuid, format))).toBe(true);
      // …and the main thread never loaded the client (the archive or snapshot thread has a module
      // cache of its own).
      const loaded = aerie.loaded();
      const driver = { sqlite: 'better-sqlite3', postgres: 'pg', mysql: 'mysql2' }[app.db.kind];
      expect(loaded).toContain(driver); // (the probe sees what was loaded)
      expect(loaded).not.toContain('@aws-sdk/client-s3');
      expect(loaded).not.toContain('@aws-sdk/lib-storage');
    },
    60_000,
  );

  it('is loaded by `aerie serve` while it starts', async () => {
    const port = await freePort();
    const aerie = aerieWithProbe(['serve', '--role', 'api', '--port', String(port)]);
    await until(async () => (await fetch(`http://127.0.0.1:${port}/health/live`)).ok, {
      what: 'the API',
      context: aerie.output,
    });
    aerie.child.kill('SIGTERM');
    expect(await aerie.exited, aerie.output()).toBe(0);
    expect(aerie.loaded()).toContain('@aws-sdk/client-s3');
  }, 60_000);
});
