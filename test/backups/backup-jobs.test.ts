/**
 * Backup jobs against hostile input: `ignored` follows gitignore rules and is bounded; however
 * costly the patterns or large the tree, the API keeps answering while the job runs; and a
 * process asked to stop does not wait for a long job past its deadline.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../src/jobs/worker.ts';
import { IGNORED_LIMITS } from '../../src/backups/ignore-patterns.ts';
import { spawnAerie } from '../support/aerie-process.ts';
import { BACKUP_FORMATS, backupEntries, formatEnv } from '../support/backup-formats.ts';
import { freePort, untilListening } from '../support/wait.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

async function setup(on: TestApp = app) {
  const owner = await createUser(on);
  const server = await createServer(on, owner);
  const { token } = await createApiKey(on, owner);
  return { server, token, base: `/api/client/servers/${server.identifier}/backups` };
}

const backupRows = (serverId: string, on: TestApp = app) =>
  on.db.kysely.selectFrom('backups').selectAll().where('server_id', '=', serverId).execute();

const jobRows = () =>
  app.db.kysely.selectFrom('jobs').selectAll().where('kind', '=', 'backup.create').orderBy('id').execute();

async function write(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await fs.writeFile(path.join(root, name), content);
  }
}

/** For each format of backup (AERIE_BACKUP_FORMAT), an app that makes backups of it. */
function appOfFormat(format: (typeof BACKUP_FORMATS)[number]): () => TestApp {
  let formatApp: TestApp | undefined;
  beforeAll(async () => {
    formatApp = await startTestApp({ env: formatEnv(format) });
  });
  afterAll(async () => formatApp?.close());
  return () => formatApp!;
}

describe.each(BACKUP_FORMATS)('the ignored list of a backup (%s backups)', (format) => {
  const formatApp = appOfFormat(format);

  it('is read as a .gitignore: any depth, anchors, directories only, negation, case', async () => {
    const app = formatApp();
    const { server, token, base } = await setup(app);
    await write(server.volume, {
      'a.tmp': '1',
      'deep/er/b.tmp': '2',
      'keep.tmp': '3',
      'cache/x': '4',
      'plugins/cache/y': '5',
      'build/z': '6',
      'notes/build': '7',
      'Logs/latest.log': '8',
      'logs/latest.log': '9',
      'world/level.dat': '10',
    });
    const ignored = '*.tmp\n!keep.tmp\n/cache\nbuild/\nlogs\n# a comment\n';
    const res = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { ignored },
    });
    expect(res.statusCode).toBe(200);
    expect(await drainJobs(app)).toBe(1);
    const [row] = await backupRows(server.id, app);
    expect(row?.is_successful).toBe(1);
    const files = (await backupEntries(app, token, server, row!.id, format))
      .filter((entry) => entry.startsWith('File:'))
      .sort();
    expect(files).toEqual([
      'File:Logs/latest.log',
      'File:keep.tmp',
      'File:notes/build',
      'File:plugins/cache/y',
      'File:world/level.dat',
    ]);
  });
});

describe('the ignored list of a backup', () => {
  it('takes the longest text allowed, in the characters that take the most room, and keeps it whole', async () => {
    const { server, token, base } = await setup();
    // A lone surrogate is one character here and six in the stored JSON (\udXXX): the most
    // room one character can take. Patterns of the longest allowed length, up to the limit.
    const line = '\ud800'.repeat(IGNORED_LIMITS.patternCharacters);
    const lines = Math.floor((IGNORED_LIMITS.characters + 1) / (IGNORED_LIMITS.patternCharacters + 1));
    const last = '\ud800'.repeat(IGNORED_LIMITS.characters - lines * (IGNORED_LIMITS.patternCharacters + 1));
    const ignored = [...Array.from({ length: lines }, () => line), last].join('\n');
    expect(ignored.length).toBe(IGNORED_LIMITS.characters);
    const res = await app.http.inject({
      method: 'POST',
      url: base,
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: JSON.stringify({ ignored }),
    });
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await backupRows(server.id);
    expect(row!.ignored_files.length).toBeGreaterThan(47 * 1024);
    expect(JSON.parse(row!.ignored_files)).toEqual(ignored.split('\n').filter((l) => l !== ''));
  });

  it.each([
    ['too many characters', 'a'.repeat(IGNORED_LIMITS.characters + 1)],
    ['too many patterns', 'x\n'.repeat(IGNORED_LIMITS.patterns + 1)],
    ['too long a pattern', 'y'.repeat(IGNORED_LIMITS.patternCharacters + 1)],
    ['a control character', 'logs\u0000'],
  ])('with %s is a 422 that creates nothing', async (_name, ignored) => {
    const { server, token, base } = await setup();
    const jobsBefore = (await jobRows()).length;
    const res = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { ignored },
    });
    expect(res.statusCode).toBe(422);
    const [error] = res.json<{ errors: { code: string; meta: { source_field: string; rule: string } }[] }>()
      .errors;
    expect(error).toMatchObject({
      code: 'ValidationException',
      meta: { source_field: 'ignored', rule: 'ignored' },
    });
    expect(await backupRows(server.id)).toEqual([]);
    expect(await jobRows()).toHaveLength(jobsBefore);
  });
});

describe.each(BACKUP_FORMATS)('a backup with hostile patterns on a large tree (%s backups)', (format) => {
  const formatApp = appOfFormat(format);

  it('never holds up the API: requests keep answering while the job runs', { timeout: 120_000 }, async () => {
    const app = formatApp();
    const { server, token, base } = await setup(app);
    // 3,000 files, each path about 120 characters deep in directories of long names.
    const segment = 'abcdefghijklmnopqrstuvwxyz'.repeat(2);
    for (let d = 0; d < 30; d++) {
      const dir = path.join(server.volume, `${segment}${d}`, segment);
      await fs.mkdir(dir, { recursive: true });
      await Promise.all(
        Array.from({ length: 100 }, (_, f) => fs.writeFile(path.join(dir, `${segment}-${f}.dat`), 'x')),
      );
    }
    await fs.writeFile(path.join(server.volume, 'drop.tmp'), 'x');
    // Each of these takes a backtracking matcher exponential time on paths like the ones above.
    const hostile = [
      '******************************Z',
      `*${'a*'.repeat(40)}Z`,
      `${'**/'.repeat(40)}Z`,
      `${'*[a-z]'.repeat(60)}Z`,
    ];
    const ignored = [...Array.from({ length: 40 }, (_, i) => hostile[i % hostile.length]), '*.tmp'].join(
      '\n',
    );
    expect(ignored.length).toBeLessThanOrEqual(IGNORED_LIMITS.characters);

    const listening = await app.http.listen({ port: 0, host: '127.0.0.1' });
    const worker: Worker = app.services.createWorker('hostile');
    const loop = monitorEventLoopDelay({ resolution: 10 });
    const created = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { ignored },
    });
    expect(created.statusCode).toBe(200);
    loop.enable();
    worker.start();

    const latencies: number[] = [];
    const statuses = new Set<number>();
    let done = false;
    const deadline = Date.now() + 90_000;
    while (!done && Date.now() < deadline) {
      const started = performance.now();
      const res = await fetch(`${listening}/api/client/activity`, { headers: bearer(token) });
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      statuses.add(res.status);
      const [row] = await backupRows(server.id, app);
      done = row?.completed_at !== null && row?.completed_at !== undefined;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    loop.disable();
    await worker.stop();

    console.log(
      `hostile backup: ${latencies.length} requests answered meanwhile, slowest ${Math.round(Math.max(...latencies))} ms; ` +
        `event loop delay max ${Math.round(loop.max / 1e6)} ms, p99 ${Math.round(loop.percentile(99) / 1e6)} ms`,
    );
    const [row] = await backupRows(server.id, app);
    expect(row?.is_successful).toBe(1);
    const entries = await backupEntries(app, token, server, row!.id, format);
    expect(entries.filter((entry) => entry.startsWith('File:'))).toHaveLength(3000);
    expect(entries).not.toContain('File:drop.tmp');
    expect([...statuses]).toEqual([200]);
    expect(latencies.length).toBeGreaterThan(0);
    // "A moment": the event loop was never blocked for as long as a second.
    expect(loop.max / 1e6).toBeLessThan(1_000);
    expect(Math.max(...latencies)).toBeLessThan(2_000);
  });
});

describe('stopping a process with a long job in hand', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it(
    'waits until AERIE_SHUTDOWN_TIMEOUT_SECONDS, then exits and leaves the job to its lease',
    { timeout: 90_000 },
    async () => {
      // Nothing else is queued (the backup an earlier test asked for is made): the job the
      // process has in hand when it is stopped is this test's.
      await drainJobs(app);
      const { server, token, base } = await setup();
      // A sparse 64 GiB file: reading and compressing it takes minutes, storing it takes nothing.
      const handle = await fs.open(path.join(server.volume, 'huge.img'), 'w');
      await handle.truncate(64 * 1024 ** 3);
      await handle.close();
      expect(
        (await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} }))
          .statusCode,
      ).toBe(200);

      const port = await freePort();
      const aerie = spawnAerie(app, ['serve', '--port', String(port)], {
        AERIE_JOB_LEASE_SECONDS: '30',
        AERIE_SHUTDOWN_TIMEOUT_SECONDS: '1',
      });
      const { child, exited } = aerie;
      children.push(child);
      await untilListening(port);
      await expect
        .poll(async () => (await jobRows()).at(-1)?.state, { timeout: 30_000, interval: 50 })
        .toBe('running');
      await new Promise((resolve) => setTimeout(resolve, 500)); // well into the archive

      const signalled = Date.now();
      child.kill('SIGTERM');
      const code = await Promise.race([
        exited,
        new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000)),
      ]);
      expect(code, aerie.output()).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(15_000);
      expect(aerie.output()).toMatch(/another worker will take it over/);

      // The job is left as a crash would leave it: running, on the stopped worker's lease, which
      // the next worker takes over once it runs out. Nothing half-written stays behind.
      const job = (await jobRows()).at(-1);
      expect(job).toMatchObject({ state: 'running', attempts: 1 });
      expect(job?.lease_expires_at).not.toBeNull();
      const [backup] = await backupRows(server.id);
      expect(backup).toMatchObject({ is_successful: 0, completed_at: null });
      const leftovers = await fs.readdir(path.join(app.config.backupsDir, server.id)).catch(() => []);
      expect(leftovers.filter((name) => name.endsWith('.partial'))).toEqual([]);
      // The port is free again.
      await expect(fetch(`http://127.0.0.1:${port}/api/openapi.json`)).rejects.toThrow();
    },
  );
});
