/**
 * Snapshot backups as the API, the command line and the repository on disk see them: making a
 * backup through the API and waiting for it, reading backups and the list back, downloading one
 * through its signed link over real HTTP, running `aerie backup …` commands, and reaching behind
 * the repository's back (a server's repository directory, its packs, a byte flipped in a chunk,
 * snapshots planted by hand with their backup rows) to damage or forge what storage holds.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'vitest';
import { BackupRepository } from '../../src/backups/backup.repository.ts';
import type { Backup } from '../../src/backups/backup.ts';
import { LocalRepositoryStore } from '../../src/storage/repository/repository-store.ts';
import {
  blobId,
  Repository,
  type BlobLine,
  type BlobWriter,
  type SnapshotRecord,
} from '../../src/storage/repository/repository.ts';
import { walkTree } from '../../src/storage/repository/snapshot-reader.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { spawnAerie } from './aerie-process.ts';
import { flipBits, tempDir } from './archives.ts';
import { bearer, createApiKey, createUser, drainJobs, startTestApp, type TestApp } from './harness.ts';

/** A backup as the API shows it. */
export interface BackupAttributes {
  uuid: string;
  name: string;
  is_successful: boolean;
  is_locked: boolean;
  is_automatic: boolean;
  completed_at: string | null;
  sha256_hash: string | null;
  checksum: string | null;
  bytes: number;
  file_count: number | null;
  format: 'snapshot' | 'archive';
  added_bytes: number | null;
  created_at: string;
}

export interface BackupList {
  data: { attributes: BackupAttributes }[];
  meta: { backup_count: number; storage_bytes: number };
}

/** `/api/client/servers/{server}/backups`. */
export function backupsUrl(server: { identifier: string }): string {
  return `/api/client/servers/${server.identifier}/backups`;
}

/** Starts a backup through the API, runs the queued jobs, and returns the backup as it then is. */
export async function backupThroughApi(
  app: TestApp,
  token: string,
  server: { identifier: string },
  body: Record<string, unknown> = {},
): Promise<BackupAttributes> {
  const res = await app.http.inject({
    method: 'POST',
    url: backupsUrl(server),
    headers: bearer(token),
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
  const uuid = res.json<{ attributes: BackupAttributes }>().attributes.uuid;
  await drainJobs(app);
  const done = await readBackup(app, token, server, uuid);
  expect(done.is_successful, `backup ${uuid} did not succeed`).toBe(true);
  return done;
}

export async function readBackup(
  app: TestApp,
  token: string,
  server: { identifier: string },
  uuid: string,
): Promise<BackupAttributes> {
  const res = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}`,
    headers: bearer(token),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ attributes: BackupAttributes }>().attributes;
}

export async function listBackups(
  app: TestApp,
  token: string,
  server: { identifier: string },
): Promise<BackupList> {
  const res = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}?per_page=50`,
    headers: bearer(token),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<BackupList>();
}

export async function deleteBackup(
  app: TestApp,
  token: string,
  server: { identifier: string },
  uuid: string,
): Promise<void> {
  const res = await app.http.inject({
    method: 'DELETE',
    url: `${backupsUrl(server)}/${uuid}`,
    headers: bearer(token),
  });
  expect(res.statusCode, res.body).toBe(204);
}

/** The base URL of the app listening on a real port (started on first use). */
export async function listeningUrl(app: TestApp): Promise<string> {
  const address = app.http.server.address() as AddressInfo | null;
  if (address !== null) return `http://127.0.0.1:${address.port}`;
  await app.http.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.http.server.address() as AddressInfo).port}`;
}

export interface Download {
  status: number;
  headers: Headers;
  body: Buffer;
}

/**
 * Asks for a backup's download link (`GET …/download`), then fetches the link over real HTTP.
 * The body is read whole; a body that fails part-way rejects.
 */
export async function downloadThroughLink(
  app: TestApp,
  token: string,
  server: { identifier: string },
  uuid: string,
): Promise<Download> {
  const link = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/download`,
    headers: bearer(token),
  });
  expect(link.statusCode, link.body).toBe(200);
  const signed = new URL(link.json<{ attributes: { url: string } }>().attributes.url);
  const res = await fetch(`${await listeningUrl(app)}${signed.pathname}${signed.search}`);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** What `aerie <args>` did: its exit code and everything it printed. */
export interface CliRun {
  code: number | null;
  output: string;
  stdout: string;
}

/** Snapshot backups, and the undo backup a restore takes first: what these tests are about. */
export const SNAPSHOTS: Record<string, string> = {
  AERIE_BACKUP_FORMAT: 'snapshot',
  AERIE_RESTORE_UNDO_BACKUP: 'true',
};

/** Runs `aerie <args>` (a process of its own) on the app's database and data directory. */
export async function runCli(
  app: TestApp,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const run = spawnAerie(app, args, { ...SNAPSHOTS, ...env });
  let stdout = '';
  run.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await run.exited;
  return { code, output: run.output(), stdout };
}

/** What a snapshot test file works with: an app making snapshots, a user with a key, a scratch directory. */
export interface SnapshotSuite {
  app: TestApp;
  owner: Awaited<ReturnType<typeof createUser>>;
  token: string;
  work: string;
  close(): Promise<void>;
}

/** Starts what a snapshot test file works with (its scratch directory named with `prefix`). */
export async function openSnapshotSuite(prefix: string): Promise<SnapshotSuite> {
  const app = await startTestApp({ env: SNAPSHOTS });
  const owner = await createUser(app);
  const { token } = await createApiKey(app, owner);
  const work = await tempDir(prefix);
  return {
    app,
    owner,
    token,
    work,
    close: async () => {
      await app.close();
      await rm(work, { recursive: true, force: true });
    },
  };
}

/** The JSON record a `--json` command printed as its last line of stdout. */
export function jsonRecord<T = Record<string, unknown>>(run: CliRun): T {
  const lines = run.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as T;
}

/**
 * Another app on the same database and data directory as `app`, set up by `env` (another backup
 * format, say): what a restart with other settings gives. Its close leaves both in place.
 */
export function sibling(app: TestApp, env: Record<string, string>): Promise<TestApp> {
  return startTestApp({
    databaseUrl: app.config.database.url,
    env: { AERIE_DATA_DIR: app.dataDir, ...SNAPSHOTS, ...env },
  });
}

/** The directory of a server's snapshot repository on local disk. */
export function repositoryDir(app: TestApp, serverId: string): string {
  return path.join(app.config.backupsDir, serverId, 'repository');
}

/** Runs `work` on the server's repository, opened afresh (its whole index loaded). */
export async function withRepository<T>(
  app: TestApp,
  serverId: string,
  work: (repository: Repository, store: LocalRepositoryStore) => Promise<T>,
): Promise<T> {
  const store = new LocalRepositoryStore(repositoryDir(app, serverId));
  try {
    return await work(await Repository.open(store), store);
  } finally {
    await store.close();
  }
}

/** The pack files of a repository, largest first, with their paths on disk. */
export async function packFiles(repository: string): Promise<{ id: string; file: string; bytes: number }[]> {
  const root = path.join(repository, 'packs');
  const found: { id: string; file: string; bytes: number }[] = [];
  for (const prefix of await readdir(root)) {
    for (const name of await readdir(path.join(root, prefix))) {
      if (name.endsWith('.tmp')) continue;
      const file = path.join(root, prefix, name);
      found.push({ id: name, file, bytes: (await stat(file)).size });
    }
  }
  return found.sort((a, b) => b.bytes - a.bytes);
}

/** A pack's own header: each blob's line (id, kind, offset, stored length, raw length, compression). */
export async function packHeader(file: string): Promise<BlobLine[]> {
  const bytes = await readFile(file);
  const length = bytes.readUInt32LE(bytes.length - 12);
  expect(bytes.subarray(bytes.length - 8).toString()).toBe('AERIEPK1');
  const header = JSON.parse(bytes.subarray(bytes.length - 12 - length, bytes.length - 12).toString()) as {
    blobs: BlobLine[];
  };
  return header.blobs;
}

/** Flips one byte in the middle of one blob, wherever it is packed, as storage damage would. */
export async function flipByteInBlob(repository: string, blob: string): Promise<void> {
  for (const pack of await packFiles(repository)) {
    const line = (await packHeader(pack.file)).find(([id]) => id === blob);
    if (line === undefined) continue;
    const [, , offset, length] = line;
    await flipBits(pack.file, offset + Math.floor(length / 2), 0xff);
    return;
  }
  throw new Error(`no pack of ${repository} holds ${blob}`);
}

/** The chunk ids of one file of a snapshot, in order (`rel` relative to the volume). */
export async function chunksOf(app: TestApp, serverId: string, backupId: string, rel: string) {
  return withRepository(app, serverId, async (repository) => {
    const { record } = await repository.loadSnapshot(backupId);
    for await (const found of walkTree(repository, record.tree))
      if (found.rel === rel && found.node.type === 'file') return found.node.chunks;
    throw new Error(`no file ${rel} in ${backupId}`);
  });
}

/**
 * Flips one byte in the middle of the largest data blob of the repository's largest pack, as
 * storage damage would; returns the blob's id and its pack's.
 */
export async function flipByteInData(repository: string): Promise<{ blob: string; pack: string }> {
  const [pack] = await packFiles(repository);
  if (pack === undefined) throw new Error(`no pack in ${repository}`);
  const data = (await packHeader(pack.file)).filter((line) => line[1] === 0);
  const [blob, , offset, length] = data.sort((a, b) => b[3] - a[3])[0]!;
  await flipBits(pack.file, offset + Math.floor(length / 2), 0xff);
  return { blob, pack: pack.id };
}

/** The paths (relative to the volume) of the files of a snapshot whose content uses `blob`. */
export async function filesUsing(app: TestApp, serverId: string, backupId: string, blob: string) {
  return withRepository(app, serverId, async (repository) => {
    const { record } = await repository.loadSnapshot(backupId);
    const files: string[] = [];
    for await (const { rel, node } of walkTree(repository, record.tree))
      if (node.type === 'file' && node.chunks.includes(blob)) files.push(rel);
    return files;
  });
}

/** A tree entry as a test writes it: anything at all, for trees that are not what Aerie writes. */
export type RawEntry = Record<string, unknown>;

/** Writes blobs of a hand-made snapshot (what a test forges), with helpers for its trees and files. */
export class SnapshotForge {
  constructor(readonly writer: BlobWriter) {}

  /** Stores `content` as one data blob (chunk); returns its id. */
  async chunk(content: Buffer): Promise<string> {
    const id = blobId(content);
    await this.writer.add('data', content, id);
    return id;
  }

  /** Stores a tree blob of exactly these entries, in this order, unchecked; returns its id. */
  async tree(entries: RawEntry[]): Promise<string> {
    const bytes = Buffer.from(JSON.stringify({ v: 1, entries }));
    const id = blobId(bytes);
    await this.writer.add('tree', bytes, id);
    return id;
  }

  /** A file entry whose content is stored as one chunk. */
  async file(name: string, content: Buffer, extra: RawEntry = {}): Promise<RawEntry> {
    return fileEntry(name, content.length, [await this.chunk(content)], extra);
  }
}

export function fileEntry(name: string, size: number, chunks: string[], extra: RawEntry = {}): RawEntry {
  return { name, type: 'file', mode: 0o644, mtime: 1_700_000_000_000, size, inode: 1, chunks, ...extra };
}

export function dirEntry(name: string, tree: string, extra: RawEntry = {}): RawEntry {
  return { name, type: 'dir', mode: 0o755, mtime: 1_700_000_000_000, tree, ...extra };
}

export interface Planted {
  backupId: string;
  /** SHA-256 of the stored snapshot record: the backup's checksum. */
  sha256: string;
  record: SnapshotRecord;
}

/**
 * Writes a hand-made snapshot into the server's repository, as a backup with a fresh UUID:
 * `build` stores its blobs and returns the root tree's id. Nothing is recorded in the database
 * (see `insertSnapshotBackup`).
 */
export async function plantSnapshot(
  app: TestApp,
  serverId: string,
  build: (forge: SnapshotForge) => Promise<string>,
  totals: { files?: number; bytes?: number } = {},
): Promise<Planted> {
  const backupId = randomUUID();
  return withRepository(app, serverId, async (repository) => {
    const writer = repository.writer();
    let tree: string;
    try {
      tree = await build(new SnapshotForge(writer));
    } catch (error) {
      await writer.abandon();
      throw error;
    }
    const written = await writer.finish();
    const record: SnapshotRecord = {
      v: 1,
      backup: backupId,
      time: new Date().toISOString(),
      tree,
      parent: null,
      // Totals that do not get in the way: an extract is bounded by them (the record matches the
      // backup's checksum, so they are the backup's own), and a forged tree's own fault is what
      // a test means to see.
      files: totals.files ?? 1000,
      directories: 1000,
      bytes: totals.bytes ?? 64 * 1024 * 1024,
      added: { blobs: written.blobs, bytes: written.storedBytes },
    };
    const sha256 = await repository.saveSnapshot(record);
    return { backupId, sha256, record };
  });
}

/** Records a successful snapshot backup of the server, as a finished backup job would. */
export async function insertSnapshotBackup(
  app: TestApp,
  serverId: string,
  planted: { backupId: string; sha256: string; record?: Pick<SnapshotRecord, 'bytes' | 'files'> },
  name = 'forged',
): Promise<Backup> {
  const now = toStoredTime(new Date());
  const backup: Backup = {
    id: planted.backupId,
    serverId,
    name,
    ignoredFiles: [],
    disk: 'local',
    sha256: planted.sha256,
    bytes: planted.record?.bytes ?? 0,
    isSuccessful: true,
    isLocked: false,
    isAutomatic: false,
    scheduleId: null,
    createdAt: now,
    completedAt: now,
    files: planted.record?.files ?? 0,
    format: 'snapshot',
    addedBytes: 0,
    progress: null,
  };
  await new BackupRepository(app.db.kysely).insert(backup);
  return backup;
}
