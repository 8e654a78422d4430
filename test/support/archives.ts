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
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readlink,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { create as tarCreate, list as tarList } from 'tar';
import { afterEach } from 'vitest';
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

/** Flips the bits `mask` names of the byte at `offset` of `file`, in place, as storage damage would. */
export async function flipBits(file: string, offset: number, mask = 0x01): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, offset);
    byte[0] = byte[0]! ^ mask;
    await handle.write(byte, 0, 1, offset);
  } finally {
    await handle.close();
  }
}

/**
 * For a test file: what each test asks to undo (`later`), run newest first after it, and
 * temporary directories (`dir`) removed then.
 */
export function undoAfterEach(): {
  later: (undo: () => Promise<unknown>) => void;
  dir: (prefix: string) => Promise<string>;
} {
  const undos: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const undo of undos.splice(0).reverse()) await undo();
  });
  return {
    later: (undo) => undos.push(undo),
    dir: async (prefix) => {
      const dir = await tempDir(prefix);
      undos.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
  };
}
