/**
 * Real directory trees and real .tar.gz files for the backup and restore tests.
 *
 * - `writeTree` populates a directory from a small description (files with content and mode,
 *   directories, symlinks);
 * - `tarGzOf` archives a directory with node-tar's `create`, the way an ordinary tool would;
 * - `snapshot` reads a tree back (paths, kinds, modes, sizes, SHA-256, link targets, mtimes)
 *   without following any symlink, so two trees can be compared with `toEqual`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, open, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { create as tarCreate, list as tarList } from 'tar';
import { aerieArgv, ROOT } from './aerie-process.ts';
import type { ServerStatus } from '../../src/servers/server.table.ts';
import type { TestApp } from './harness.ts';
import { entryHeader, padding } from './raw-tar.ts';

export type TreeSpec = Record<string, string | Buffer | FileSpec | DirSpec | LinkSpec>;
export interface FileSpec {
  content: string | Buffer;
  mode?: number;
}
export interface DirSpec {
  dir: true;
  mode?: number;
}
export interface LinkSpec {
  symlink: string;
}

/**
 * Writes `spec` under `root` (created if missing). Keys are paths relative to `root`; a key ending
 * in `/` is a directory. Parents are created with mode 0755, files default to 0644.
 */
export async function writeTree(root: string, spec: TreeSpec): Promise<void> {
  await mkdir(root, { recursive: true });
  for (const [rel, value] of Object.entries(spec)) {
    const target = path.join(root, rel);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
    if (rel.endsWith('/') || (typeof value === 'object' && 'dir' in value)) {
      const mode =
        typeof value === 'object' && 'mode' in value && value.mode !== undefined ? value.mode : 0o755;
      await mkdir(target, { recursive: true });
      await chmod(target, mode);
    } else if (typeof value === 'object' && 'symlink' in value) {
      await symlink(value.symlink, target);
    } else {
      const file: FileSpec = typeof value === 'string' || Buffer.isBuffer(value) ? { content: value } : value;
      await writeFile(target, file.content);
      await chmod(target, file.mode ?? 0o644);
    }
  }
}

export async function tempDir(prefix = 'aerie-fixture-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** A gzip-compressed tar of everything inside `sourceDir` (entries named `a.txt`, `dir/`, …). */
export async function tarGzOf(sourceDir: string, file: string, gzipLevel = 6): Promise<string> {
  const names = (await readdir(sourceDir)).sort();
  await tarCreate({ gzip: { level: gzipLevel }, file, cwd: sourceDir }, names);
  return file;
}

/** Writes `spec` into a fresh source directory and archives it: the backup and what it holds. */
export async function backupOf(
  spec: TreeSpec,
  workDir?: string,
): Promise<{ source: string; archive: string }> {
  const dir = workDir ?? (await tempDir());
  const source = await mkdtemp(path.join(dir, 'source-'));
  await writeTree(source, spec);
  const archive = await tarGzOf(source, `${source}.tar.gz`);
  return { source, archive };
}

/** The entry paths of a .tar.gz, as node-tar reads them. */
export async function archiveEntries(file: string): Promise<string[]> {
  const entries: string[] = [];
  await tarList({ file, onReadEntry: (entry) => entries.push(`${entry.type}:${entry.path}`) });
  return entries;
}

export async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

export interface NodeInfo {
  type: 'file' | 'dir' | 'symlink' | 'other';
  mode: number;
  size?: number;
  sha256?: string;
  target?: string;
  mtimeMs?: number;
}

/**
 * Everything about a tree, keyed by relative path (the root itself is ''), never following a
 * symlink. `mtimes` adds modification times (for "nothing changed at all" comparisons).
 */
export async function snapshot(
  root: string,
  options: { mtimes?: boolean } = {},
): Promise<Record<string, NodeInfo>> {
  const out: Record<string, NodeInfo> = {};
  const visit = async (rel: string): Promise<void> => {
    const full = rel === '' ? root : path.join(root, rel);
    const stats = await lstat(full);
    const info: NodeInfo = { type: 'other', mode: stats.mode & 0o7777 };
    if (options.mtimes && !stats.isSymbolicLink()) info.mtimeMs = stats.mtimeMs;
    if (stats.isSymbolicLink()) {
      info.type = 'symlink';
      info.target = await readlink(full);
      info.mode = 0; // a link's own mode means nothing on Linux
    } else if (stats.isFile()) {
      info.type = 'file';
      info.size = stats.size;
      info.sha256 = await sha256Of(full);
    } else if (stats.isDirectory()) {
      info.type = 'dir';
    }
    out[rel] = info;
    if (stats.isDirectory()) {
      for (const name of (await readdir(full)).sort()) await visit(rel === '' ? name : `${rel}/${name}`);
    }
  };
  await visit('');
  return out;
}

/** A snapshot without the root's own entry: what a restore must reproduce of a backup. */
export async function contents(root: string): Promise<Record<string, NodeInfo>> {
  const all = await snapshot(root);
  delete all[''];
  return all;
}

/**
 * Fills `dir` with `count` files of `bytesEach` bytes that gzip cannot shrink (random data; one
 * random block is reused at shifting offsets so that generating hundreds of MiB stays fast).
 */
export async function writeIncompressibleFiles(dir: string, count: number, bytesEach: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const pool = randomBytes(8 * 1024 * 1024);
  const chunk = 1024 * 1024;
  for (let i = 0; i < count; i++) {
    const handle = await open(path.join(dir, `chunk-${String(i).padStart(4, '0')}.bin`), 'w', 0o644);
    try {
      for (let written = 0; written < bytesEach; written += chunk) {
        const start = (i * 7919 + (written / chunk) * 104729) % (pool.length - chunk);
        await handle.write(pool, start, Math.min(chunk, bytesEach - written));
      }
    } finally {
      await handle.close();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// A restore as the API and the database see it.

/** Where the local store keeps a backup's archive. */
export function storedArchive(app: TestApp, serverId: string, backupId: string): string {
  return path.join(app.config.backupsDir, serverId, `${backupId}.tar.gz`);
}

/** POST …/restore. `body` undefined sends no body and no Content-Type; a string is sent as is. */
export function postRestore(
  app: TestApp,
  token: string | null,
  server: string,
  backup: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return app.http.inject({
    method: 'POST',
    url: `/api/client/servers/${server}/backups/${backup}/restore`,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(payload === undefined ? {} : { payload }),
  });
}

export async function serverStatus(app: TestApp, serverId: string): Promise<string | null> {
  const row = await app.db.kysely
    .selectFrom('servers')
    .select('status')
    .where('id', '=', serverId)
    .executeTakeFirstOrThrow();
  return row.status;
}

export async function setServerStatus(
  app: TestApp,
  serverId: string,
  status: ServerStatus | null,
): Promise<void> {
  await app.db.kysely.updateTable('servers').set({ status }).where('id', '=', serverId).execute();
}

/** The restore jobs queued for a server, oldest first, with their payloads parsed. */
export async function restoreJobsOf(app: TestApp, serverId: string) {
  const rows = await app.db.kysely
    .selectFrom('jobs')
    .selectAll()
    .where('kind', '=', 'backup.restore')
    .orderBy('id')
    .execute();
  return rows
    .map((row) => ({
      ...row,
      id: Number(row.id),
      payload: JSON.parse(row.payload) as Record<string, unknown>,
    }))
    .filter((row) => row.payload.serverId === serverId);
}

export interface LoggedEntry {
  id: number;
  batch: string;
  event: string;
  actor_id: string | null;
  ip: string | null;
  properties: Record<string, unknown>;
  subjects: string[];
}

/** Activity entries about a server (its subjects include it), oldest first, with their subjects. */
export async function activityOfServer(
  app: TestApp,
  serverId: string,
  eventPrefix = 'server:backup.restore',
): Promise<LoggedEntry[]> {
  const db = app.db.kysely;
  const rows = await db
    .selectFrom('activity_logs as l')
    .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
    .select(['l.id', 'l.batch', 'l.event', 'l.actor_id', 'l.ip', 'l.properties'])
    .where('s.subject_type', '=', 'server')
    .where('s.subject_id', '=', serverId)
    .where('l.event', 'like', `${eventPrefix}%`)
    .orderBy('l.id')
    .execute();
  const entries: LoggedEntry[] = [];
  for (const row of rows) {
    const subjects = await db
      .selectFrom('activity_log_subjects')
      .select(['subject_type', 'subject_id'])
      .where('activity_log_id', '=', row.id)
      .execute();
    entries.push({
      ...row,
      id: Number(row.id),
      properties: JSON.parse(row.properties) as Record<string, unknown>,
      subjects: subjects.map((s) => `${s.subject_type}:${s.subject_id}`).sort(),
    });
  }
  return entries;
}

/** Names in the volumes directory left by a restore (staging or retired trees, trees in the trash). */
export async function restoreLeftovers(app: TestApp): Promise<string[]> {
  const inTrash = await readdir(path.join(app.config.volumesDir, '.trash')).catch(() => []);
  return [
    ...(await readdir(app.config.volumesDir)).filter((name) => name.startsWith('.restore-')),
    ...inTrash.map((name) => `.trash/${name}`),
  ];
}

/**
 * Like `tarGzOf` for big trees of regular files and directories: streams the tar (written with
 * test/support/raw-tar.ts) through a fast gzip level, much faster than node-tar for hundreds of MiB.
 */
export async function bigTarGzOf(sourceDir: string, file: string): Promise<string> {
  async function* blocks(rel: string): AsyncGenerator<Buffer> {
    for (const name of (await readdir(path.join(sourceDir, rel))).sort()) {
      const entryPath = rel === '' ? name : `${rel}/${name}`;
      const stats = await lstat(path.join(sourceDir, entryPath));
      if (stats.isDirectory()) {
        yield entryHeader({ path: `${entryPath}/`, mode: stats.mode & 0o7777 });
        yield* blocks(entryPath);
      } else if (stats.isFile()) {
        yield entryHeader({ path: entryPath, size: stats.size, mode: stats.mode & 0o7777 });
        for await (const chunk of createReadStream(path.join(sourceDir, entryPath), {
          highWaterMark: 1 << 20,
        }))
          yield chunk as Buffer;
        yield padding(stats.size);
      }
    }
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield* blocks('');
    yield Buffer.alloc(1024);
  }
  await pipeline(Readable.from(all()), createGzip({ level: 0 }), createWriteStream(file));
  return file;
}

// ---------------------------------------------------------------------------------------------
// Aerie processes started by a test.

export { freePort } from './wait.ts';

/** Resolves once an Aerie answers HTTP on `port`. */
export async function untilListening(port: number): Promise<void> {
  // A start from the sources under a whole suite on two cores has taken over 30 s.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/openapi.json`)).ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`nothing listening on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface AerieProcess {
  child: ChildProcess;
  /** Everything it has printed so far, stdout and stderr together. */
  output(): string;
  /** Its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
}

/**
 * Runs `aerie <args>` (from the sources, see `aerie-process.ts`) as its own process, on the test
 * app's database and data directory.
 */
export function spawnAerie(app: TestApp, args: string[], env: Record<string, string> = {}): AerieProcess {
  const child = spawn(process.execPath, aerieArgv(args), {
    cwd: ROOT,
    env: {
      ...process.env,
      AERIE_DATA_DIR: app.dataDir,
      DATABASE_URL: app.config.database.url,
      AERIE_WORKER_POLL_MS: '50',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}
