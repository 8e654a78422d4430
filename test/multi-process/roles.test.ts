/**
 * Aerie split into roles, as a deployment that outgrows one process runs it: two `serve --role
 * api` processes and two `worker` processes, each a real process of its own, on one PostgreSQL
 * database and one Redis. What one process would guarantee alone must hold across them: every
 * job runs exactly once, on a worker of its server's node and never in an API process; the API
 * key limit, the one-restore-at-a-time rule and the rate limits hold whichever process answers;
 * and a worker killed in the middle of a restore leaves a job another worker finishes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restorePaths } from '../../src/storage/volumes/restore-files.ts';
import type { ServerRow } from '../../src/servers/server.table.ts';
import type { User } from '../../src/users/user.ts';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import {
  REDIS_URL,
  SERVER_DIALECTS,
  scratchDatabase,
  serverAvailable,
  type ScratchDatabase,
} from '../support/dialects.ts';
import { storedPath } from '../support/backup-formats.ts';
import { createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { freePort, until } from '../support/wait.ts';

const POSTGRES = SERVER_DIALECTS.find((d) => d.kind === 'postgres')!;
const available = (await serverAvailable(POSTGRES.url)) && (await serverAvailable(REDIS_URL));
const RATE_LIMIT = 100;
const MiB = 1024 * 1024;

interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<unknown>;
}

let scratch: ScratchDatabase;
let app: TestApp;
let env: Record<string, string>;
const procs: Proc[] = [];
/** The last lines of every process started here, for a timeout's message. */
const logs = () => procs.map((p) => `--- ${p.name}\n${p.output().slice(-3000)}`).join('\n');
const apis: string[] = [];

/** Starts `aerie <args>` on the shared database, data directory and Redis. */
function start(name: string, args: string[]): Proc {
  const child = spawn(process.execPath, aerieArgv(args), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const proc = { name, child, output: () => output, exited };
  procs.push(proc);
  return proc;
}

async function startApi(name: string): Promise<string> {
  const port = await freePort();
  const proc = start(name, ['serve', '--role', 'api', '--host', '127.0.0.1', '--port', String(port)]);
  const base = `http://127.0.0.1:${port}`;
  await until(
    () =>
      fetch(`${base}/api/openapi.json`).then(
        (r) => r.ok,
        () => proc.child.exitCode === null && false,
      ),
    { timeoutMs: 30_000, what: `${name} to listen`, context: logs },
  );
  return base;
}

async function startWorker(name: string, node = 'local'): Promise<Proc> {
  const proc = start(name, ['worker', '--node', node]);
  await until(() => Promise.resolve(/worker started/.test(proc.output())), {
    timeoutMs: 30_000,
    what: `${name} to start`,
    context: logs,
  });
  return proc;
}

/** Sends a request to the API process `i % 2`: consecutive calls alternate between the two. */
function api(i: number, token: string, method: string, url: string, body?: unknown) {
  return fetch(`${apis[i % 2]!}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function writeFiles(dir: string, files: Record<string, Buffer>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await fs.writeFile(path.join(dir, name), content);
  }
}

/** Every regular file under `dir`, by relative path, as its SHA-256. */
async function digests(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, full)] = createHash('sha256')
      .update(await fs.readFile(full))
      .digest('hex');
  }
  return out;
}

function jobsOf(kind: string) {
  return app.db.kysely.selectFrom('jobs').selectAll().where('kind', '=', kind).orderBy('id').execute();
}

async function eventsOf(serverId: string): Promise<{ event: string; batch: string }[]> {
  return app.db.kysely
    .selectFrom('activity_logs as l')
    .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
    .select(['l.event', 'l.batch'])
    .where('s.subject_type', '=', 'server')
    .where('s.subject_id', '=', serverId)
    .orderBy('l.id')
    .execute();
}

const workerPids = () => procs.filter((p) => p.name.startsWith('worker')).map((p) => p.child.pid);
const pidOf = (owner: string | null) => Number(owner?.split(':')[1]);

describe.runIf(available)('two API processes and two workers on one PostgreSQL and Redis', () => {
  let owner: User;
  let token: string;

  beforeAll(async () => {
    scratch = await scratchDatabase(POSTGRES);
    app = await startTestApp({ databaseUrl: scratch.url });
    // A Redis database of its own, so that no other test's counters (per address) touch these.
    const redis = new URL(REDIS_URL);
    redis.pathname = '/7';
    env = {
      DATABASE_URL: scratch.url,
      AERIE_DATA_DIR: app.dataDir,
      REDIS_URL: redis.toString(),
      AERIE_APP_KEY: randomBytes(32).toString('hex'),
      AERIE_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      AERIE_RESTORE_LIMIT_PER_15_MINUTES: '100',
      AERIE_JOB_LEASE_SECONDS: '6',
      AERIE_WORKER_POLL_MS: '200',
      LOG_LEVEL: 'info',
    };
    owner = await createUser(app);
    token = (await createApiKey(app, owner)).token;
    // The first start migrates the (already migrated) database; start them all together.
    const started = await Promise.all([startApi('api-1'), startApi('api-2')]);
    apis.push(...started);
    await Promise.all([startWorker('worker-1'), startWorker('worker-2')]);
  }, 120_000);

  afterAll(async () => {
    for (const proc of procs) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await app?.close();
    await scratch?.drop();
  });

  it('runs every backup job exactly once, on the workers of its node, never in an API process', async () => {
    const servers: ServerRow[] = [];
    for (let i = 0; i < 6; i++) {
      const created = await app.services.servers.create({ owner: owner.username, name: `s${i}` });
      await writeFiles(created.volume, {
        'a.txt': Buffer.from(`server ${i}`),
        'd/b.bin': randomBytes(64 * 1024),
      });
      servers.push(created.server);
    }
    const far = await app.services.servers.create({ owner: owner.username, name: 'far', node: 'far' });
    await writeFiles(far.volume, { 'far.txt': Buffer.from('far away') });

    const posts = Array.from({ length: 30 }, (_, i) =>
      api(i, token, 'POST', `/api/client/servers/${servers[i % 6]!.identifier}/backups`, { name: `b${i}` }),
    );
    const responses = await Promise.all(posts);
    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 200));
    const farResponse = await api(
      0,
      token,
      'POST',
      `/api/client/servers/${far.server.identifier}/backups`,
      {},
    );
    expect(farResponse.status).toBe(200);

    const done = await until(
      async () => {
        const rows = (await jobsOf('backup.create')).filter((j) => j.node === 'local');
        return rows.length === 30 && rows.every((j) => j.state === 'succeeded') && rows;
      },
      { timeoutMs: 240_000, what: 'the 30 backups', context: logs },
    );
    expect(done.map((j) => j.attempts)).toEqual(Array.from({ length: 30 }, () => 1));
    // Both workers took a share; no API process ran any.
    const pids = new Set(done.map((j) => pidOf(j.lease_owner)));
    expect([...pids].sort()).toEqual(workerPids().sort());

    const backups = await app.db.kysely
      .selectFrom('backups')
      .selectAll()
      .where('server_id', '!=', far.server.id)
      .execute();
    expect(backups).toHaveLength(30);
    for (const backup of backups) {
      expect(Boolean(backup.is_successful)).toBe(true);
      // Each is a snapshot in its server's repository, of the server's files.
      expect(backup.format).toBe('snapshot');
      await fs.stat(storedPath(app, backup.server_id, backup.id, 'snapshot'));
      expect([Number(backup.files), Number(backup.bytes)]).toEqual([2, 'server N'.length + 64 * 1024]);
    }
    for (const server of servers) {
      const events = (await eventsOf(server.id)).map((e) => e.event);
      expect(events.filter((e) => e === 'server:backup.start')).toHaveLength(5);
      expect(events.filter((e) => e === 'server:backup.complete')).toHaveLength(5);
    }

    // The far node's backup waits for a worker of that node, which then runs it.
    const [farJob] = (await jobsOf('backup.create')).filter((j) => j.node === 'far');
    expect(farJob).toMatchObject({ state: 'queued', attempts: 0 });
    const farWorker = await startWorker('far-worker', 'far');
    await until(
      async () => (await jobsOf('backup.create')).find((j) => j.node === 'far' && j.state === 'succeeded'),
      { timeoutMs: 30_000, what: 'the far backup', context: logs },
    );
    const [farDone] = (await jobsOf('backup.create')).filter((j) => j.node === 'far');
    expect(pidOf(farDone!.lease_owner)).toBe(farWorker.child.pid);
    expect(farDone!.attempts).toBe(1);
    farWorker.child.kill('SIGTERM');
    await farWorker.exited;
    procs.splice(procs.indexOf(farWorker), 1);
  }, 300_000);

  it('holds the 25-key limit across processes: of 40 concurrent creates, exactly the ones up to 25 keys succeed', async () => {
    const user = await createUser(app);
    const { token: own } = await createApiKey(app, user); // the first of the 25
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        api(i, own, 'POST', '/api/client/account/api-keys', { description: `k${i}`, allowed_ips: [] }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(24);
    expect(statuses.filter((s) => s === 400)).toHaveLength(16);
    const keys = await app.db.kysely
      .selectFrom('api_keys')
      .select('id')
      .where('user_id', '=', user.id)
      .execute();
    expect(keys).toHaveLength(25);
  });

  it('lets one restore of a server through at a time, and runs each exactly once', async () => {
    const servers = [];
    for (let i = 0; i < 3; i++) {
      const { server, volume } = await app.services.servers.create({ owner: owner.username, name: `r${i}` });
      await writeFiles(volume, {
        'world/level.dat': randomBytes(32 * 1024),
        'config.yml': Buffer.from(`r${i}`),
      });
      const backup = await app.services.backupManagement.createNow(server.id, 'nightly');
      await writeFiles(volume, { 'config.yml': Buffer.from('changed'), 'new.txt': Buffer.from('new') });
      servers.push({ server, volume, backup });
    }
    const before = await Promise.all(servers.map((s) => digests(s.volume)));
    const restoreJobsBefore = (await jobsOf('backup.restore')).length;

    const responses = await Promise.all(
      servers.flatMap(({ server, backup }) =>
        Array.from({ length: 8 }, (_, i) =>
          api(i, token, 'POST', `/api/client/servers/${server.identifier}/backups/${backup.uuid}/restore`, {
            truncate: true,
          }),
        ),
      ),
    );
    const statuses = responses.map((r) => r.status);
    for (let s = 0; s < servers.length; s++) {
      const mine = statuses.slice(s * 8, s * 8 + 8);
      expect(
        mine.filter((x) => x === 204),
        JSON.stringify(mine),
      ).toHaveLength(1);
      expect(mine.filter((x) => x === 409)).toHaveLength(7);
    }

    const jobs = await until(
      async () => {
        const rows = (await jobsOf('backup.restore')).slice(restoreJobsBefore);
        return rows.length === servers.length && rows.every((j) => j.state === 'succeeded') && rows;
      },
      { timeoutMs: 60_000, what: 'the restores', context: logs },
    );
    expect(jobs.map((j) => j.attempts)).toEqual([1, 1, 1]);
    for (const [i, { server, volume }] of servers.entries()) {
      const events = (await eventsOf(server.id)).map((e) => e.event);
      expect(events.filter((e) => e === 'server:backup.restore')).toHaveLength(1);
      expect(events.filter((e) => e === 'server:backup.restore-complete')).toHaveLength(1);
      const after = await digests(volume);
      expect(Object.keys(after).sort()).toEqual(['config.yml', 'world/level.dat']);
      expect(after['world/level.dat']).toBe(before[i]!['world/level.dat']);
      expect(await fs.readFile(path.join(volume, 'config.yml'), 'utf8')).toBe(`r${i}`);
    }
  }, 90_000);

  it('counts requests through both API processes against one rate limit in Redis', async () => {
    const user = await createUser(app);
    const { token: own } = await createApiKey(app, user);
    const statuses: number[] = [];
    // In waves, so that the limit is reached while both processes answer.
    for (let wave = 0; wave < 4; wave++) {
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) => api(i, own, 'GET', '/api/client/account')),
      );
      statuses.push(...responses.map((r) => r.status));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(RATE_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(160 - RATE_LIMIT);
    // Both processes refuse once the shared count is past the limit.
    const [a, b] = await Promise.all([
      api(0, own, 'GET', '/api/client/account'),
      api(1, own, 'GET', '/api/client/account'),
    ]);
    expect([a.status, b.status]).toEqual([429, 429]);
    expect(a.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('finishes a restore whose worker was killed mid-way, on another worker, with the volume whole', async () => {
    const { server, volume } = await app.services.servers.create({ owner: owner.username, name: 'big' });
    const files: Record<string, Buffer> = { 'config.yml': Buffer.from('backup') };
    for (let i = 0; i < 40; i++) files[`data/chunk-${i}.bin`] = randomBytes(4 * MiB); // 160 MiB, incompressible
    await writeFiles(volume, files);
    const backup = await app.services.backupManagement.createNow(server.id, 'big');
    const backedUp = await digests(volume);
    await fs.rm(path.join(volume, 'data'), { recursive: true });
    await writeFiles(volume, { 'config.yml': Buffer.from('live'), 'live.txt': Buffer.from('live only') });
    const live = await digests(volume);

    const response = await api(
      1,
      token,
      'POST',
      `/api/client/servers/${server.identifier}/backups/${backup.uuid}/restore`,
      {
        truncate: true,
      },
    );
    expect(response.status).toBe(204);
    const job = await until(
      async () =>
        (await jobsOf('backup.restore')).find(
          (j) =>
            (JSON.parse(j.payload) as { serverId: string }).serverId === server.id && j.state === 'running',
        ),
      { timeoutMs: 30_000, what: 'a worker to claim the restore', context: logs },
    );
    const paths = restorePaths(app.config.volumesDir, server.id, Number(job.id));
    await until(async () => (await fs.readdir(paths.staging).catch(() => [])).length > 0, {
      timeoutMs: 30_000,
      what: 'the restore to start extracting',
      context: logs,
    });
    const victim = procs.find((p) => p.child.pid === pidOf(job.lease_owner));
    expect(victim?.name).toMatch(/^worker-/);
    victim!.child.kill('SIGKILL');
    await victim!.exited;
    // Killed before the swap: the live files are untouched.
    expect(await digests(volume)).toEqual(live);
    // A worker started in its place; the survivor or it takes the job once the lease runs out.
    const replacement = await startWorker('worker-3');

    const finished = await until(
      async () => {
        const row = await app.db.kysely
          .selectFrom('jobs')
          .selectAll()
          .where('id', '=', job.id)
          .executeTakeFirst();
        return row?.state === 'succeeded' || row?.state === 'failed' ? row : undefined;
      },
      { timeoutMs: 90_000, what: 'the restore to be finished by another worker', context: logs },
    );
    expect(finished).toMatchObject({ state: 'succeeded', attempts: 2, error: null });
    expect(pidOf(finished.lease_owner)).not.toBe(victim!.child.pid);
    expect(workerPids()).toContain(pidOf(finished.lease_owner));
    expect(await digests(volume)).toEqual(backedUp);
    const leftovers = (await fs.readdir(app.config.volumesDir)).filter((e) => e.startsWith('.restore-'));
    expect(leftovers).toEqual([]);
    const events = (await eventsOf(server.id)).map((e) => e.event);
    expect(events.filter((e) => e.startsWith('server:backup.restore'))).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
    const status = await app.db.kysely
      .selectFrom('servers')
      .select('status')
      .where('id', '=', server.id)
      .executeTakeFirst();
    expect(status?.status).toBeNull();
    expect(replacement.child.exitCode).toBeNull();
  }, 300_000);
});
