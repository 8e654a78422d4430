/**
 * Real directories to attack, and the crafted archives to attack them with, for the hostile-archive
 * tests of extraction (extract-attacks.test.ts) and of the whole restore (restore-attacks.test.ts):
 *
 *   <root>/volumes/<uuid>/   the server volume (the extraction destination)
 *   <root>/outside/          what an attacker aims at: must never change
 *   <root>/archives/         the crafted .tar.gz files
 *
 * Archives are built byte by byte (test/support/raw-tar.ts) because ordinary archivers refuse to
 * write most of them. A test file calls `removeLayouts` after each test and `removeGzipBomb` after
 * all of them.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ArchiveError } from '../../../src/storage/archive/archive.types.ts';
import { writeTarGz, writeZeroFileTarGz, type RawEntry, type TarGzOptions } from '../../support/raw-tar.ts';

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

// ---------------------------------------------------------------------------------------------
// Layout

export interface Layout {
  root: string;
  volumesDir: string;
  uuid: string;
  volume: string;
  outside: string;
  archives: string;
}

const roots: string[] = [];

/** Deletes every layout made since the last call. */
export async function removeLayouts(): Promise<void> {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
}

export async function makeLayout(): Promise<Layout> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'aerie-attack-')));
  roots.push(root);
  const uuid = randomUUID();
  const layout: Layout = {
    root,
    volumesDir: join(root, 'volumes'),
    uuid,
    volume: join(root, 'volumes', uuid),
    outside: join(root, 'outside'),
    archives: join(root, 'archives'),
  };
  await mkdir(layout.volume, { recursive: true });
  await mkdir(layout.archives);
  // The attacker's targets: a directory with a sentinel, a loose file.
  await mkdir(join(layout.outside, 'dir'), { recursive: true });
  await writeFile(join(layout.outside, 'dir', 'sentinel.txt'), 'sentinel: do not touch\n');
  await writeFile(join(layout.outside, 'file.txt'), 'outside file: do not touch\n');
  await writeFile(join(layout.outside, 'secret.txt'), 'secret: do not touch\n');
  await chmod(join(layout.outside, 'dir'), 0o750);
  return layout;
}

export async function archive(
  layout: Layout,
  entries: readonly RawEntry[],
  opts?: TarGzOptions,
): Promise<string> {
  const file = join(layout.archives, `${randomUUID()}.tar.gz`);
  await writeTarGz(file, entries, opts);
  return file;
}

export async function archiveBytes(layout: Layout, data: Buffer): Promise<string> {
  const file = join(layout.archives, `${randomUUID()}.tar.gz`);
  await writeFile(file, data);
  return file;
}

// A 1 GiB file of zeros (~1 MiB compressed), built once on first use and shared.
let bombDir: string | undefined;
let bombFile: Promise<string> | undefined;

/** Entries that share names with the live volume built by `populateVolume` (restore-attacks). */
export const overlapping: RawEntry[] = [
  { path: 'config.yml', content: 'archive config\n' },
  { path: 'world/', type: '5' },
  { path: 'world/level.dat', content: 'archive level\n' },
  { path: 'data.txt', content: 'archive data\n' },
  { path: 'plugins/', type: '5' },
  { path: 'plugins/x.jar', content: 'archive jar\n' },
  { path: 'start.sh', content: '#!/bin/sh\necho archive\n', mode: 0o6777 },
];

export function gzipBomb(): Promise<string> {
  bombFile ??= (async () => {
    bombDir = await realpath(await mkdtemp(join(tmpdir(), 'aerie-bomb-')));
    const file = join(bombDir, 'bomb.tar.gz');
    await writeZeroFileTarGz(file, 'bomb.bin', GiB, { before: overlapping });
    return file;
  })();
  return bombFile;
}

export async function removeGzipBomb(): Promise<void> {
  if (bombDir !== undefined) await rm(bombDir, { recursive: true, force: true });
  bombDir = undefined;
  bombFile = undefined;
}

// ---------------------------------------------------------------------------------------------
// Tree snapshots

export interface NodeInfo {
  type: 'file' | 'dir' | 'symlink' | 'other';
  mode: number;
  size?: number;
  sha256?: string;
  target?: string;
  mtimeMs?: number;
  nlink?: number;
}

export interface SnapshotOptions {
  mtime?: boolean;
  nlink?: boolean;
  /** Relative paths whose subtree is left out. */
  exclude?: readonly string[];
}

/** Every node under `dir` by relative path ('.' is `dir` itself); symlinks are never followed. */
export async function snapshot(dir: string, opts: SnapshotOptions = {}): Promise<Record<string, NodeInfo>> {
  const out: Record<string, NodeInfo> = {};
  async function visit(abs: string, rel: string): Promise<void> {
    if (opts.exclude?.includes(rel)) return;
    const st = await lstat(abs);
    const info: NodeInfo = {
      type: st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other',
      mode: st.mode & 0o7777,
    };
    if (opts.mtime) info.mtimeMs = st.mtimeMs;
    if (opts.nlink && !st.isDirectory()) info.nlink = st.nlink;
    if (st.isFile()) {
      info.size = st.size;
      info.sha256 = createHash('sha256')
        .update(await readFile(abs))
        .digest('hex');
    } else if (st.isSymbolicLink()) {
      info.target = await readlink(abs);
    }
    out[rel] = info;
    if (st.isDirectory()) {
      for (const name of (await readdir(abs)).sort()) {
        await visit(join(abs, name), rel === '.' ? name : `${rel}/${name}`);
      }
    }
  }
  await visit(dir, '.');
  return out;
}

/** Snapshot of everything in the layout except the destination itself. */
export function surroundings(layout: Layout): Promise<Record<string, NodeInfo>> {
  return snapshot(layout.root, { exclude: [`volumes/${layout.uuid}`] });
}

export function outsideSnapshot(layout: Layout): Promise<Record<string, NodeInfo>> {
  return snapshot(layout.outside, { mtime: true, nlink: true });
}

export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Assertions

/** Awaits `promise`, which must reject with an ArchiveError; returns it. */
export async function archiveError(promise: Promise<unknown>): Promise<ArchiveError> {
  let value: unknown;
  try {
    value = await promise;
  } catch (err) {
    if (err instanceof ArchiveError) return err;
    throw new Error(`expected an ArchiveError, got: ${String(err)}`, { cause: err });
  }
  throw new Error(`expected a rejection, but it resolved with ${JSON.stringify(value)}`);
}

export async function expectFile(path: string, content: string): Promise<void> {
  const st = await lstat(path);
  expect(st.isFile(), `${path} is a regular file`).toBe(true);
  expect(await readFile(path, 'utf8')).toBe(content);
}

export const unlimited = { maxBytes: null };
