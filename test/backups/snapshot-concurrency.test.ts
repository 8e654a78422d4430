/**
 * Snapshot backups and prunes of one repository at the same time, in processes of their own that
 * share the database (the suite's engine): `aerie backup create` and `aerie backup prune` beside
 * the same work done in this process, started at varied moments of each other's run. Whatever
 * the interleaving, every backup extracts to exactly the files it was taken of and a check that
 * reads every chunk passes; the repository's locks are seen at work (a prune that starts while a
 * backup runs waits for it, a backup that starts while a prune runs waits for it) and none is
 * left behind. Then the locks themselves on the database (RepositoryLocks): exclusive holders
 * never overlap, shared ones overlap each other but never an exclusive one, a dead holder's lease
 * blocks only until it lapses, a waiter gives up with a ConflictError, and a check waits for a
 * prune. Last, processes killed (SIGKILL) in the middle of a backup and of a prune: nothing made
 * before is lost, and the next prune reclaims what the killed run left.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, watch } from 'node:fs';
import { mkdir, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, setPriority } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RepositoryLocks } from '../../src/backups/repository-locks.ts';
import { ConflictError } from '../../src/shared/errors.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { spawnAerie, type AerieProcess } from '../support/aerie-process.ts';
import { contents, writeTree, type NodeInfo } from '../support/archives.ts';
import { createServer, createUser, type TestApp } from '../support/harness.ts';
import {
  deleteBackup,
  jsonRecord,
  repositoryDir,
  runCli,
  SNAPSHOTS,
  type CliRun,
  openSnapshotSuite,
  type SnapshotSuite,
} from '../support/snapshots.ts';

const KIB = 1024;
const MIB = 1024 * KIB;

let app: TestApp;
let owner: Awaited<ReturnType<typeof createUser>>;
let token: string;
let work: string;
let suite: SnapshotSuite | undefined;

beforeAll(async () => {
  suite = await openSnapshotSuite('aerie-snapshot-concurrency-');
  ({ app, owner, token, work } = suite);
});

afterAll(async () => suite?.close());

type Files = Record<string, NodeInfo>;

/** A server, and what each of its backups was taken of (its volume as it was), by UUID. */
interface TestServer {
  id: string;
  identifier: string;
  volume: string;
  /** Backups still there, oldest first, with the files each holds. */
  backups: Map<string, Files>;
}

async function newServer(): Promise<TestServer> {
  const server = await createServer(app, owner);
  return { ...server, backups: new Map() };
}

const repositoryName = (server: TestServer) => `local:${server.id}`;

/** RepositoryLocks on the app's database, as another process would hold them. */
const locksOnDb = () => new RepositoryLocks(app.db, () => new Date());

/** A backup made in this process (the service `aerie backup create` runs). */
async function backUpHere(server: TestServer, name: string): Promise<string> {
  const files = await contents(server.volume);
  const record = await app.services.backupManagement.createNow(server.id, name);
  server.backups.set(record.uuid, files);
  return record.uuid;
}

/** Deletes a backup through the API (its snapshot record goes; its chunks wait for a prune). */
async function forget(server: TestServer, uuid: string): Promise<void> {
  await deleteBackup(app, token, server, uuid);
  server.backups.delete(uuid);
}

async function deleteOldest(server: TestServer): Promise<void> {
  const [oldest] = server.backups.keys();
  await forget(server, oldest!);
}

/**
 * `aerie <args>` started as a process of its own; `done` settles when it exits. `yielding` runs
 * it at the lowest CPU priority: on a busy machine, a test that must kill it at a given moment
 * then sees that moment before the process has gone far past it.
 */
function startCli(args: string[], yielding = false): { proc: AerieProcess; done: Promise<CliRun> } {
  const proc = spawnAerie(app, args, SNAPSHOTS);
  if (yielding) setPriority(proc.child.pid!, 19);
  let stdout = '';
  proc.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const done = proc.exited.then((code) => ({ code, output: proc.output(), stdout }));
  return { proc, done };
}

interface LockRow {
  id: string;
  repository: string;
  exclusive: boolean;
  holder: string;
  expires_at: string;
}

async function lockRows(repository?: string): Promise<LockRow[]> {
  let query = app.db.kysely.selectFrom('backup_repository_locks').selectAll();
  if (repository !== undefined) query = query.where('repository', '=', repository);
  const rows = await query.execute();
  return rows.map((row) => ({ ...row, exclusive: Number(row.exclusive) === 1 }));
}

/**
 * Polls `probe` every few ms until it gives a value (neither undefined nor false); undefined if
 * `stop` settles first (or a minute passes).
 */
async function whenSeen<T>(
  probe: () => Promise<T | undefined | false>,
  stop: Promise<unknown>,
): Promise<T | undefined> {
  let stopped = false;
  const end = () => (stopped = true);
  void stop.then(end, end);
  const deadline = Date.now() + 60_000;
  while (!stopped && Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    await sleep(3);
  }
  return undefined;
}

/** Takes a lock and keeps it until `release` is called; resolves once it is held. */
async function holdOpen(exclusive: boolean, repository: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const work = () => {
    entered();
    return released;
  };
  const locks = locksOnDb();
  const holding = exclusive ? locks.exclusive(repository, work) : locks.shared(repository, work);
  await Promise.race([inside, holding]);
  return {
    release: async () => {
      release();
      await holding;
    },
  };
}

/** A backup extracts (`aerie backup extract`'s service) to exactly the files it was taken of. */
async function expectExtracts(server: TestServer, uuid: string): Promise<void> {
  const to = path.join(work, `extract-${randomUUID()}`);
  await app.services.backupManagement.extractTo(server.id, uuid, to);
  expect(await contents(to), `backup ${uuid}`).toEqual(server.backups.get(uuid));
  await rm(to, { recursive: true, force: true });
}

/** Every backup of the server still there extracts to exactly its files. */
async function expectEveryBackupExtracts(server: TestServer): Promise<void> {
  const successful = await app.db.kysely
    .selectFrom('backups')
    .select('id')
    .where('server_id', '=', server.id)
    .where('is_successful', '=', 1)
    .execute();
  expect(successful.map((row) => row.id).sort()).toEqual([...server.backups.keys()].sort());
  for (const uuid of server.backups.keys()) await expectExtracts(server, uuid);
}

/** `aerie backup check --read-data` (through its service, or as a process of its own) finds nothing wrong. */
async function expectCheckPasses(server: TestServer, via: 'service' | 'cli'): Promise<void> {
  if (via === 'cli') {
    const run = await runCli(app, ['backup', 'check', '--server', server.id, '--read-data', '--json']);
    expect(run.code, run.output).toBe(0);
    const record = jsonRecord<{ damaged_backups: string[]; repositories: { problems: unknown[] }[] }>(run);
    expect(record.damaged_backups).toEqual([]);
    for (const repository of record.repositories) expect(repository.problems).toEqual([]);
    return;
  }
  for (const { report } of await app.services.backupManagement.checkRepositories(server.id, true)) {
    expect(report.problems).toEqual([]);
    expect(report.damagedBackups).toEqual([]);
  }
}

/** Bytes of every file in the server's repository (temporary files of killed writers too). */
async function repositoryBytes(server: TestServer): Promise<number> {
  const root = repositoryDir(app, server.id);
  let total = 0;
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

async function strayPacks(server: TestServer): Promise<number> {
  const [done] = await app.services.backupManagement.checkRepositories(server.id, false);
  return done!.report.strayPacks;
}

/** The stored time of `ms` since the epoch, as leases are written. */
const storedAt = (ms: number) => toStoredTime(new Date(ms));

/**
 * Time passes for the leases a killed process left: they lapse (long enough ago for the next
 * release to clear them away).
 */
async function lapseLeasesOf(pid: number): Promise<void> {
  await app.db.kysely
    .updateTable('backup_repository_locks')
    .set({ expires_at: storedAt(Date.now() - 11 * 60_000) })
    .where('holder', '=', `${hostname()}:${pid}`)
    .execute();
}

describe('prunes running beside backups, in other processes', () => {
  it('never damage a backup, wait for a backup running, and hold a backup back while they run', async () => {
    const server = await newServer();
    const regions = (n: number) => `world/region-${n}.mca`;
    const spec: Record<string, Buffer | string> = {
      'server.properties': 'motd=concurrency\n',
      'logs/latest.log': 'player joined the game\n'.repeat(8000),
    };
    for (let n = 0; n < 8; n++) spec[regions(n)] = randomBytes(384 * KIB);
    await writeTree(server.volume, spec);
    await mkdir(path.join(server.volume, 'plugins'));

    /** Some files change, one comes, one goes: each backup stores new chunks. */
    const change = async (round: number) => {
      await writeFile(path.join(server.volume, regions(round % 8)), randomBytes((256 + 32 * round) * KIB));
      await writeFile(path.join(server.volume, regions((round + 3) % 8)), randomBytes(300 * KIB));
      await writeFile(path.join(server.volume, `plugins/new-${round}.jar`), randomBytes(120 * KIB));
      if (round > 1) await rm(path.join(server.volume, `plugins/new-${round - 2}.jar`), { force: true });
      await writeFile(path.join(server.volume, 'server.properties'), `motd=round ${round}\n`);
    };

    const a = await backUpHere(server, 'A');
    await change(100);
    await backUpHere(server, 'B');
    await deleteOldest(server);
    expect(server.backups.has(a)).toBe(false);

    /** Pauses between one run starting its work and the other starting, round by round. */
    const DELAYS = [0, 0, 40, 30, 120, 90, 250, 5];
    let prunesThatWaited = 0;
    let backupsThatWaited = 0;
    for (const [round, delay] of DELAYS.entries()) {
      await change(round);
      // Garbage for this round's prune.
      if (server.backups.size > 2 && (round % 2 === 1 || round % 4 === 2)) await deleteOldest(server);
      const files = await contents(server.volume);
      const snapshotsBefore = server.backups.size;
      const name = `round-${round}`;

      if (round % 2 === 0) {
        // The backup in another process; the prune here, once that backup holds its lock.
        const backup = startCli(['backup', 'create', '--server', server.id, '--name', name, '--json']);
        const lease = await whenSeen(
          async () => (await lockRows(repositoryName(server))).find((row) => !row.exclusive)?.id,
          backup.done,
        );
        // The same lease 30 ms on: the backup looked for a prune, found none, and holds the lock
        // (a backup that meets a prune takes its row away at once).
        await sleep(30 + delay);
        const backupRunning = (await lockRows(repositoryName(server))).some((row) => row.id === lease);
        const [pruned] = await app.services.backupManagement.pruneRepositories(server.id);
        const pruneEnded = Date.now();
        const run = await backup.done;
        expect(run.code, run.output).toBe(0);
        const uuid = jsonRecord<{ uuid: string }>(run).uuid;
        server.backups.set(uuid, files);
        if (backupRunning) {
          // It waited for the backup: it found its snapshot, and ended after the backup's last write.
          prunesThatWaited += 1;
          expect(pruned!.report.before.snapshots).toBe(snapshotsBefore + 1);
          expect(pruned!.report.snapshots).toBe(snapshotsBefore + 1);
          const record = await stat(path.join(repositoryDir(app, server.id), 'snapshots', uuid));
          expect(record.mtimeMs).toBeLessThanOrEqual(pruneEnded);
        }
      } else {
        // The prune in another process; the backup here, once that prune holds its lock.
        const prune = startCli(['backup', 'prune', '--server', server.id, '--json']);
        const held = await whenSeen(
          async () => (await lockRows(repositoryName(server))).some((row) => row.exclusive),
          prune.done,
        );
        await sleep(delay);
        // A prune's row keeps backups out from the moment it is written, held or waited for.
        const pruneRunning = (await lockRows(repositoryName(server))).some((row) => row.exclusive);
        await backUpHere(server, name);
        const run = await prune.done;
        expect(run.code, run.output).toBe(0);
        const [report] = jsonRecord<{
          repositories: { snapshots: number; after: { snapshots: number } }[];
        }>(run).repositories;
        if (held && pruneRunning) {
          // The backup waited for the prune: its snapshot was there neither when the prune began nor
          // when it ended.
          backupsThatWaited += 1;
          expect(report!.snapshots).toBe(snapshotsBefore);
          expect(report!.after.snapshots).toBe(snapshotsBefore);
        }
      }

      // No lease is left behind; every backup is whole.
      expect(await lockRows()).toEqual([]);
      await expectEveryBackupExtracts(server);
      await expectCheckPasses(server, round === DELAYS.length - 1 ? 'cli' : 'service');
    }
    // The locks were put to work in both directions.
    expect(prunesThatWaited).toBeGreaterThanOrEqual(2);
    expect(backupsThatWaited).toBeGreaterThanOrEqual(2);
  }, 150_000);
});

describe('the repository locks, on the database', () => {
  const locks = locksOnDb;
  const random = (min: number, max: number) => min + Math.random() * (max - min);

  interface Held {
    exclusive: boolean;
    start: number;
    end: number;
  }

  /** Runs `work` under the lock, noting when it held it. */
  async function hold(
    list: Held[],
    exclusive: boolean,
    repository: string,
    busyMs: number,
    through = locks(),
  ): Promise<void> {
    const work = async () => {
      const start = performance.now();
      await sleep(busyMs);
      list.push({ exclusive, start, end: performance.now() });
    };
    await (exclusive ? through.exclusive(repository, work) : through.shared(repository, work));
  }

  const overlap = (a: Held, b: Held) => a.start < b.end && b.start < a.end;

  function expectExclusiveAlone(held: Held[]): void {
    for (const [i, a] of held.entries())
      for (const b of held.slice(i + 1))
        if (a.exclusive || b.exclusive) expect(overlap(a, b), JSON.stringify([a, b])).toBe(false);
  }

  it('never lets two exclusive holders overlap', async () => {
    const repository = `local:${randomUUID()}`;
    const held: Held[] = [];
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        const mine = locks(); // one per holder, as each process has its own
        for (let n = 0; n < 2; n++) {
          await sleep(random(0, 20));
          await hold(held, true, repository, random(10, 60), mine);
        }
      }),
    );
    expect(held).toHaveLength(6);
    expectExclusiveAlone(held);
    expect(await lockRows(repository)).toEqual([]);
  }, 60_000);

  it('lets shared holders overlap each other, never an exclusive one', async () => {
    const repository = `local:${randomUUID()}`;
    const held: Held[] = [];
    const sharedHolders = Array.from({ length: 4 }, async () => {
      for (let n = 0; n < 4; n++) {
        await hold(held, false, repository, random(20, 80));
        await sleep(random(0, 30));
      }
    });
    const exclusiveHolders = Array.from({ length: 2 }, async () => {
      for (let n = 0; n < 2; n++) {
        await sleep(random(30, 150));
        await hold(held, true, repository, random(10, 50));
      }
    });
    await Promise.all([...sharedHolders, ...exclusiveHolders]);
    expect(held.filter((h) => h.exclusive)).toHaveLength(4);
    expect(held.filter((h) => !h.exclusive)).toHaveLength(16);
    expectExclusiveAlone(held);
    const shared = held.filter((h) => !h.exclusive);
    const sharedOverlaps = shared.filter((a, i) => shared.some((b, j) => i !== j && overlap(a, b)));
    expect(sharedOverlaps.length).toBeGreaterThan(1);
    expect(await lockRows(repository)).toEqual([]);
  }, 60_000);

  async function plantLease(repository: string, exclusive: boolean, expiresAt: number, holder: string) {
    await app.db.kysely
      .insertInto('backup_repository_locks')
      .values({
        id: randomUUID(),
        repository,
        exclusive: exclusive ? 1 : 0,
        holder,
        expires_at: storedAt(expiresAt),
      })
      .execute();
  }

  it('holds a lease left by a dead holder only until it lapses, and clears it away long after', async () => {
    const repository = `local:${randomUUID()}`;
    // A prune that was killed: its exclusive lease runs for a little longer.
    const lapses = Date.now() + 1200;
    await plantLease(repository, true, lapses, 'gone-host:4242');
    const refused = await locks()
      .shared(repository, () => Promise.resolve('in'), { waitMs: 200 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as Error).message).toContain('being pruned by gone-host:4242');
    const backupIn = await locks().shared(repository, () => Promise.resolve(Date.now()), { waitMs: 10_000 });
    expect(backupIn).toBeGreaterThanOrEqual(lapses);
    expect(backupIn).toBeLessThan(lapses + 2000);

    // A backup that was killed holds a prune back likewise; a lease that lapsed long ago, not at all.
    const other = `local:${randomUUID()}`;
    const alsoLapses = Date.now() + 800;
    await plantLease(other, false, alsoLapses, 'gone-host:4343');
    await plantLease(other, true, Date.now() - 60_000, 'gone-host:4444');
    await plantLease(other, true, Date.now() - 11 * 60_000, 'gone-host:4545');
    const pruneIn = await locks().exclusive(other, () => Promise.resolve(Date.now()), { waitMs: 10_000 });
    expect(pruneIn).toBeGreaterThanOrEqual(alsoLapses);
    expect(pruneIn).toBeLessThan(alsoLapses + 2500);
    // Leases that lapsed more than ten minutes ago are cleared when a lock is released.
    expect((await lockRows(other)).map((row) => row.holder).sort()).toEqual([
      'gone-host:4343',
      'gone-host:4444',
    ]);
    await app.db.kysely
      .deleteFrom('backup_repository_locks')
      .where('repository', 'in', [repository, other])
      .execute();
  }, 30_000);

  it('gives up waiting with a ConflictError after waitMs, leaving no row of its own', async () => {
    const repository = `local:${randomUUID()}`;
    const prune = await holdOpen(true, repository);
    try {
      const started = Date.now();
      const backup = await locks()
        .shared(repository, () => Promise.resolve('in'), { waitMs: 400 })
        .catch((error: unknown) => error);
      expect(backup).toBeInstanceOf(ConflictError);
      expect((backup as Error).message).toMatch(/being pruned by .+:\d+/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      const second = await locks()
        .exclusive(repository, () => Promise.resolve('in'), { waitMs: 400 })
        .catch((error: unknown) => error);
      expect(second).toBeInstanceOf(ConflictError);
      // Only the holder's row is there: those that gave up took theirs away.
      expect(await lockRows(repository)).toHaveLength(1);
      // Aborted while waiting: it stops at once.
      const abort = new AbortController();
      const aborted = locks().shared(repository, () => Promise.resolve('in'), { signal: abort.signal });
      setTimeout(() => abort.abort(), 100);
      await expect(aborted).rejects.toThrow();
    } finally {
      await prune.release();
    }

    // A prune that finds a backup running waits for it, then gives up the same way.
    const backup = await holdOpen(false, repository);
    try {
      const started = Date.now();
      const refused = await locks()
        .exclusive(repository, () => Promise.resolve('in'), { waitMs: 600 })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ConflictError);
      expect((refused as Error).message).toMatch(/in use by .+:\d+/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    } finally {
      await backup.release();
    }
    expect(await lockRows(repository)).toEqual([]);
  }, 30_000);

  it('makes a check wait for a prune: it never reads a repository while a prune changes it', async () => {
    const server = await newServer();
    await writeTree(server.volume, { 'a.bin': randomBytes(600 * KIB), 'b.txt': 'b\n' });
    await backUpHere(server, 'first');
    const prune = await holdOpen(true, repositoryName(server));
    let settled = false;
    const checking = app.services.backupManagement.checkRepositories(server.id, true).finally(() => {
      settled = true;
    });
    try {
      await sleep(2000); // a check of this repository takes well under a second
      expect(settled).toBe(false);
    } finally {
      await prune.release();
    }
    for (const { report } of await checking) expect(report.problems).toEqual([]);
  }, 30_000);
});

describe('processes killed (SIGKILL) in the middle of their work', () => {
  let server: TestServer;
  const region = (n: number) => `world/region-${String(n).padStart(2, '0')}.mca`;
  /** 12 regions of 2 MiB, some text: about 25 MiB. */
  const REGIONS = 12;

  /** Rewrites `count` regions from `first` on: new chunks for the next backup to store. */
  async function rewriteRegions(first: number, count: number): Promise<void> {
    for (let n = first; n < first + count; n++)
      await writeFile(path.join(server.volume, region(n % REGIONS)), randomBytes(2 * MIB));
  }

  beforeAll(async () => {
    server = await newServer();
    const spec: Record<string, Buffer | string> = { 'logs/latest.log': 'saving the world\n'.repeat(60_000) };
    for (let n = 0; n < REGIONS; n++) spec[region(n)] = randomBytes(2 * MIB);
    await writeTree(server.volume, spec);
    await backUpHere(server, 'base');
  }, 60_000);

  /** Every file under the server's repository, relative (`packs/ab/<id>`; temporary files too). */
  async function repositoryFiles(): Promise<string[]> {
    const root = repositoryDir(app, server.id);
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
  }

  /**
   * Kills `run` (SIGKILL) the moment a file of the repository that `happened` picks appears or
   * goes (`there` says which): seen through inotify, and by looking every few ms too (a file in a
   * directory made a moment before can slip past a watcher). Resolves whether it was killed
   * before it ended.
   */
  async function killWhen(
    run: { proc: AerieProcess; done: Promise<CliRun> },
    happened: (file: string, there: boolean) => boolean,
  ): Promise<boolean> {
    const root = repositoryDir(app, server.id);
    const before = new Set(await repositoryFiles());
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      run.proc.child.kill('SIGKILL');
    };
    const watcher = watch(root, { recursive: true }, (_, file) => {
      if (file !== null && happened(String(file), existsSync(path.join(root, String(file))))) kill();
    });
    try {
      await whenSeen(async () => {
        const now = new Set(await repositoryFiles().catch(() => [...before]));
        const changed =
          [...now].some((file) => !before.has(file) && happened(file, true)) ||
          [...before].some((file) => !now.has(file) && happened(file, false));
        if (changed) kill();
        return killed;
      }, run.done);
    } finally {
      watcher.close();
    }
    await run.done;
    return killed;
  }

  const PACK = /^packs\/[0-9a-f]{2}\/[0-9a-f]{64}$/;
  const PACK_BEING_WRITTEN = /^packs\/[0-9a-f]{2}\/[0-9a-f]{64}\.[0-9a-f]+\.tmp$/;
  const INDEX = /^index\/[0-9a-f]{64}$/;
  const INDEX_BEING_WRITTEN = /^index\/[0-9a-f]{64}\.[0-9a-f]+\.tmp$/;

  it('loses no backup to a backup killed at any point, and the next prune reclaims what it stored', async () => {
    // Counted from the moment the killed backup holds its lock (it is starting its thread, then
    // reading), or from the moment it stores something.
    const KILL_AT: { what: string; afterMs?: number; file?: RegExp }[] = [
      { what: '50 ms after it took its lock', afterMs: 50 },
      { what: '300 ms after it took its lock', afterMs: 300 },
      { what: 'while it writes its first pack', file: PACK_BEING_WRITTEN },
      { what: 'once its first pack is stored', file: PACK },
      { what: 'while it writes its index', file: INDEX_BEING_WRITTEN },
    ];
    let killsThatLeftPacks = 0;
    for (const [n, at] of KILL_AT.entries()) {
      await rewriteRegions(n * 5, 6); // 12 MiB of new chunks: a pack of 8 MiB, then the rest
      const files = await contents(server.volume);
      const existing = new Set(await repositoryFiles());
      const name = `killed-${n}`;
      const backup = startCli(['backup', 'create', '--server', server.id, '--name', name], true);
      const held = await whenSeen(
        async () => (await lockRows(repositoryName(server))).some((row) => !row.exclusive),
        backup.done,
      );
      expect(held, backup.proc.output()).toBe(true);
      if (at.afterMs !== undefined) {
        await sleep(at.afterMs);
        backup.proc.child.kill('SIGKILL');
      } else {
        const pattern = at.file!;
        const killed = await killWhen(backup, (file, there) => there && pattern.test(file));
        // Its index is written in a moment: a fast machine may write and rename it before the
        // watcher sees it (the backup then finishes: taken below as any other).
        if (at.file !== INDEX_BEING_WRITTEN)
          expect(killed, `the killed backup never ${at.what}: ${backup.proc.output()}`).toBe(true);
      }
      const { code, output } = await backup.done;
      const row = await app.db.kysely
        .selectFrom('backups')
        .selectAll()
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      const pid = backup.proc.child.pid!;
      // It finished before the signal landed (and may have been killed on its way out, its lease
      // still held): a fast machine backs up these 12 MiB in well under 300 ms once it holds its
      // lock, writes its index in a moment, and a watcher's event may come late. A backup like
      // any other, then. The 50 ms point always kills it mid-way, and some point must have left
      // packs behind (checked at the end).
      if (at.afterMs !== 50 && row.completed_at !== null && Number(row.is_successful) === 1) {
        if (code === null) await lapseLeasesOf(pid);
        else expect(code, output).toBe(0);
        server.backups.set(row.id, files);
        continue;
      }
      expect(code, `${at.what}: it ended before it was killed: ${output}`).toBeNull();

      // Its row stays in progress; its lease stays behind.
      expect(row.completed_at).toBeNull();
      expect(Number(row.is_successful)).toBe(0);
      expect(await lockRows(repositoryName(server))).toEqual([
        expect.objectContaining({ exclusive: false, holder: `${hostname()}:${pid}` }),
      ]);
      // Readers share the lock: what was made before extracts as it was.
      await expectEveryBackupExtracts(server);
      if (n === 0) {
        // A prune waits for the dead lease until it lapses.
        await expect(
          locksOnDb().exclusive(repositoryName(server), () => Promise.resolve(), { waitMs: 300 }),
        ).rejects.toThrow(ConflictError);
      }
      await lapseLeasesOf(pid);

      // What the killed run left; time passes for its temporary files too (a prune removes those
      // older than an hour: a writer may still be on a younger one).
      const root = repositoryDir(app, server.id);
      const left = (await repositoryFiles()).filter((file) => !existing.has(file));
      const hoursAgo = new Date(Date.now() - 2 * 3600_000);
      for (const file of left.filter((f) => f.endsWith('.tmp')))
        await utimes(path.join(root, file), hoursAgo, hoursAgo);
      const recorded = left.includes(`snapshots/${row.id}`);
      const stray = await strayPacks(server);
      if (stray > 0) killsThatLeftPacks += 1;

      const before = await repositoryBytes(server);
      if (n % 3 === 0) {
        const pruned = await runCli(app, ['backup', 'prune', '--server', server.id, '--json']);
        expect(pruned.code, pruned.output).toBe(0);
        const [report] = jsonRecord<{ repositories: { strayPacks: number }[] }>(pruned).repositories;
        expect(report!.strayPacks).toBe(stray);
      } else {
        const [pruned] = await app.services.backupManagement.pruneRepositories(server.id);
        expect(pruned!.report.strayPacks).toBe(stray);
      }
      expect(await repositoryBytes(server)).toBeLessThanOrEqual(before);
      const remaining = new Set(await repositoryFiles());
      if (!recorded) {
        // Nothing of the killed run is left.
        expect(left.filter((file) => remaining.has(file))).toEqual([]);
      } else {
        // It lived to save its snapshot: its row, in progress until `backup reconcile` marks it
        // failed, keeps it and the packs it names.
        expect(left.filter((file) => PACK.test(file)).every((file) => remaining.has(file))).toBe(true);
      }
      expect(await strayPacks(server)).toBe(0);
      await expectCheckPasses(server, 'service');

      // The next backup is made against the last good one, and is whole.
      await expectExtracts(server, await backUpHere(server, `after-${n}`));
      while (server.backups.size > 2) await deleteOldest(server);
    }
    expect(killsThatLeftPacks).toBeGreaterThan(0);
    expect(await lockRows()).toEqual([]);
  }, 180_000);

  it('loses no backup to a prune killed part-way, and a second prune finishes its work', async () => {
    // Moments in a prune's run, as its objects show them: it has stored its new index (the old
    // ones are still there), and it has deleted a pack (others it no longer needs are still there).
    const moments = [
      { what: 'stored its new index', happened: (file: string, there: boolean) => there && INDEX.test(file) },
      { what: 'deleted a pack', happened: (file: string, there: boolean) => !there && PACK.test(file) },
    ];
    let leftForTheSecond = 0;
    for (const [n, moment] of moments.entries()) {
      // Garbage for the prune: a backup deleted, with chunks no other snapshot has.
      await rewriteRegions(n * 4, 4);
      const garbage = await backUpHere(server, `garbage-${n}`);
      await rewriteRegions(n * 4, 4);
      await backUpHere(server, `kept-${n}`);
      await forget(server, garbage);
      while (server.backups.size > 2) await deleteOldest(server);

      const prune = startCli(['backup', 'prune', '--server', server.id, '--json'], true);
      const killed = await killWhen(prune, moment.happened);
      const run = await prune.done;
      expect(killed, `the prune ended before it ${moment.what}: ${run.output}`).toBe(true);
      expect(run.code).toBeNull();
      const pid = prune.proc.child.pid!;
      expect(await lockRows(repositoryName(server))).toEqual([
        expect.objectContaining({ exclusive: true, holder: `${hostname()}:${pid}` }),
      ]);
      await lapseLeasesOf(pid);

      // Every backup is whole; a second prune finishes the work.
      await expectEveryBackupExtracts(server);
      type Report = { after: { indexes: number }; packsDeleted: number; indexesDeleted: number };
      let reports: Report[];
      if (n === 0) {
        const second = await runCli(app, ['backup', 'prune', '--server', server.id, '--json']);
        expect(second.code, second.output).toBe(0);
        reports = jsonRecord<{ repositories: Report[] }>(second).repositories;
      } else {
        reports = (await app.services.backupManagement.pruneRepositories(server.id)).map(
          (done) => done.report,
        );
      }
      expect(reports).toHaveLength(1);
      const report = reports[0]!;
      leftForTheSecond += report.packsDeleted + report.indexesDeleted;
      expect(report.after.indexes).toBe(1);
      expect(await strayPacks(server)).toBe(0);
      await expectCheckPasses(server, n === moments.length - 1 ? 'cli' : 'service');
      expect(await lockRows()).toEqual([]);
    }
    // The kills left the prunes' work half done.
    expect(leftForTheSecond).toBeGreaterThan(0);
  }, 120_000);
});
