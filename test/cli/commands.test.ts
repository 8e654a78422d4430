/**
 * The command line as a process of its own: what the program itself answers (--version, missing
 * options), and how `serve` and `worker` start and stop on their runtime.
 */
import fs from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAerie, type AerieProcess } from '../support/aerie-process.ts';
import { freePort, untilListening } from '../support/wait.ts';
import { testDatabase } from '../support/databases.ts';
import { REDIS_URL, serverAvailable } from '../support/dialects.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const VERSION = (
  JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

/** Resolves when the process has printed text matching `pattern`; fails after 20 s. */
async function untilPrinted(aerie: AerieProcess, pattern: RegExp): Promise<void> {
  await expect.poll(() => aerie.output(), { timeout: 20_000, interval: 50 }).toMatch(pattern);
}

describe('aerie', () => {
  it('--version prints the version in package.json', async () => {
    const aerie = spawnAerie(app, ['--version']);
    expect(await aerie.exited).toBe(0);
    expect(aerie.output()).toBe(`${VERSION}\n`);
  });

  it.each([
    [['user', 'create', '--username', 'x'], '--email <email>'],
    [['user', 'create', '--email', 'x@example.com'], '--username <username>'],
    [['key', 'create'], '--user <login>'],
    [['server', 'create', '--owner', 'x'], '--name <name>'],
    [['server', 'add-subuser', '--server', 'x', '--user', 'y'], '--permissions <list>'],
    [['backup', 'create', '--server', 'x'], '--name <name>'],
    [['backup', 'import', '--server', 'x', '--name', 'y'], '--file <path>'],
  ])("%j without a required option exits non-zero with commander's message", async (args, option) => {
    const aerie = spawnAerie(app, args);
    expect(await aerie.exited).toBe(1);
    expect(aerie.output()).toContain(`error: required option '${option}' not specified`);
    expect(aerie.output()).toContain(`Usage: aerie ${args.slice(0, 2).join(' ')} [options]`);
  });
});

describe('aerie migrate', () => {
  it('touches nothing but the database: no app key is made, an unreachable Redis is never asked', async () => {
    const dataDir = fs.mkdtempSync(`${app.dataDir}-migrate-`);
    const database = await testDatabase(dataDir);
    const closedPort = await freePort();
    const started = Date.now();
    const aerie = spawnAerie(app, ['migrate'], {
      AERIE_DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      REDIS_URL: `redis://127.0.0.1:${closedPort}`,
    });
    expect(await aerie.exited, aerie.output()).toBe(0);
    expect(aerie.output()).toMatch(new RegExp(`^${app.db.kind}: applied `));
    expect(aerie.output()).not.toMatch(/ioredis|ECONNREFUSED/);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(fs.existsSync(`${dataDir}/app.key`)).toBe(false);
    fs.rmSync(dataDir, { recursive: true, force: true });
    await database.drop();
  });
});

describe('aerie worker', () => {
  it('runs jobs until SIGTERM, then stops after the job in hand and exits 0', async () => {
    const aerie = spawnAerie(app, ['worker', '--node', 'cli-test']);
    await untilPrinted(aerie, /worker started/);
    expect(aerie.output()).toContain('cli-test');
    aerie.child.kill('SIGTERM');
    expect(await aerie.exited).toBe(0);
    expect(aerie.output()).toContain('worker stopping after the job in hand');
  });
});

describe('aerie serve', () => {
  it('--role api serves until SIGTERM, then closes and exits 0', async () => {
    const port = await freePort();
    const aerie = spawnAerie(app, ['serve', '--role', 'api', '--port', String(port)]);
    await untilListening(port);
    aerie.child.kill('SIGTERM');
    expect(await aerie.exited).toBe(0);
    expect(aerie.output()).toContain('shutting down');
    await expect(fetch(`http://127.0.0.1:${port}/api/openapi.json`)).rejects.toThrow();
  });

  it('says a port is in use, and exits 1 having closed what it opened', async () => {
    await servingOnTakenPort();
  });
});

/** `serve` on a port something else holds: it must close its runtime, or the process stays up. */
async function servingOnTakenPort(env: Record<string, string> = {}): Promise<void> {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  try {
    const aerie = spawnAerie(app, ['serve', '--host', '127.0.0.1', '--port', String(port)], env);
    expect(await aerie.exited).toBe(1);
    expect(aerie.output()).toContain(
      `aerie: port ${port} on 127.0.0.1 is already in use (set PORT or --port)`,
    );
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
}

describe.runIf(await serverAvailable(REDIS_URL))('aerie with REDIS_URL', () => {
  it('runs a one-shot command on Redis counters and exits when it is done', async () => {
    const aerie = spawnAerie(app, ['migrate'], { REDIS_URL });
    expect(await aerie.exited).toBe(0);
    expect(aerie.output()).toBe(`${app.db.kind}: already up to date\n`);
  });

  it('closes its Redis connection when serve cannot listen, and exits', async () => {
    await servingOnTakenPort({ REDIS_URL });
  });

  it('stops a worker on Redis counters on SIGTERM', async () => {
    const aerie = spawnAerie(app, ['worker'], { REDIS_URL });
    await untilPrinted(aerie, /worker started/);
    aerie.child.kill('SIGTERM');
    expect(await aerie.exited).toBe(0);
  });
});
