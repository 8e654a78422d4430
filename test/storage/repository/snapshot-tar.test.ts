import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { readArchive } from '../../../src/storage/archive/archive-reader.ts';
import { createArchive } from '../../../src/storage/archive/archive-writer.ts';
import { GZIP_CONCURRENCY } from '../../../src/storage/archive/parallel-gzip.ts';
import { packKey, Repository } from '../../../src/storage/repository/repository.ts';
import { LocalRepositoryStore } from '../../../src/storage/repository/repository-store.ts';
import { snapshotTarGz } from '../../../src/storage/repository/snapshot-tar.ts';
import { takeSnapshot } from '../../../src/storage/repository/snapshot-writer.ts';
import { DamagedRepository, type TreeNode } from '../../../src/storage/repository/tree.ts';
import { snapshot as describeTree, type NodeInfo } from '../../support/archives.ts';
import { until } from '../../support/wait.ts';

const MiB = 1024 * 1024;
const BACKUP = '7a1c2f52-3f0e-4f3b-9a57-0c61f1c0a001';

const roots: string[] = [];
const stores: LocalRepositoryStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function workspace(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-snapshot-tar-'));
  roots.push(root);
  return root;
}

/** A path of more than 100 bytes whose last component alone is 200 characters: it needs pax. */
const DEEP_DIR = 'deep/a-rather-long-directory-name/another-level-of-nesting/and-one-more-level';
const LONG_NAME = `${'long-name-'.repeat(19)}0123456789`;
const DEEP_FILE = `${DEEP_DIR}/${LONG_NAME}`;

/**
 * A small volume of everything an archive has to get right: nested, empty and restricted
 * directories, an empty file, an executable, 3 MiB of random bytes (several chunks, stored
 * gzip members), compressible text, a name that needs a pax header, unicode names, and times
 * that are not whole seconds.
 */
function makeVolume(volume: string): void {
  const files: [string, Buffer | string, number][] = [
    ['world/region/r.0.0.mca', randomBytes(3 * MiB), 0o644],
    ['logs/latest.log', '[12:00:00] [Server thread/INFO]: Player joined the game\n'.repeat(20_000), 0o644],
    ['empty.txt', '', 0o644],
    ['start.sh', '#!/bin/sh\nexec java -jar server.jar\n', 0o755],
    ['secret/ops.json', '[]', 0o600],
    ['a/b/c/d/e/nested.txt', 'deep down\n', 0o640],
    [DEEP_FILE, 'the name needs a pax header\n', 0o644],
    ['ünïcødé/日本語のファイル.txt', 'こんにちは\n', 0o644],
    ['emoji-🎮.txt', 'gg\n', 0o644],
  ];
  for (const [rel, content, mode] of files) {
    const target = path.join(volume, rel);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, content);
    fs.chmodSync(target, mode);
    fs.utimesSync(target, 1_650_000_000.25, 1_650_000_000.75);
  }
  fs.mkdirSync(path.join(volume, 'empty-dir'));
  fs.chmodSync(path.join(volume, 'secret'), 0o700);
  fs.utimesSync(path.join(volume, 'empty.txt'), 1_700_000_000.9997, 1_700_000_000.9997);
  // Directories last, deepest first: writing into a directory changes its mtime.
  const dirs = ['empty-dir', 'secret', 'a/b/c/d/e', 'a/b/c/d', 'a/b/c', 'a/b', 'a', DEEP_DIR, 'ünïcødé'];
  dirs.forEach((dir, n) => fs.utimesSync(path.join(volume, dir), 1_600_000_000 + n, 1_600_000_000.5 + n));
}

/** Bytes of the large volume: more than the stream may ever hold or read ahead. */
const BIG = 160 * MiB;

/**
 * One file of `size` bytes: a random 4 MiB block over and over. It takes `size` bytes to read
 * back and to archive (gzip does not shrink it), but its chunks repeat: the repository stays small.
 */
function writeRepeated(volume: string, size: number): void {
  const block = randomBytes(4 * MiB);
  const fd = fs.openSync(path.join(volume, 'world.bin'), 'w', 0o644);
  try {
    for (let written = 0; written < size; written += block.length) fs.writeSync(fd, block);
  } finally {
    fs.closeSync(fd);
  }
}

/** A store that counts (and can watch) the range reads made of it. */
class WatchedStore extends LocalRepositoryStore {
  fetchedBytes = 0;
  ranges = 0;
  onRange: (() => void) | undefined;

  override getRange(key: string, offset: number, length: number): Promise<Buffer> {
    this.fetchedBytes += length;
    this.ranges += 1;
    this.onRange?.();
    return super.getRange(key, offset, length);
  }
}

interface Snapped {
  volume: string;
  repoDir: string;
  repository: Repository;
  store: WatchedStore;
  tree: string;
}

async function snapshotOf(fill: (volume: string) => void): Promise<Snapped> {
  const root = workspace();
  const volume = path.join(root, 'volume');
  fs.mkdirSync(volume);
  fill(volume);
  const repoDir = path.join(root, 'repository');
  const written = new LocalRepositoryStore(repoDir);
  stores.push(written);
  const { record } = await takeSnapshot(volume, await Repository.open(written), {
    backupId: BACKUP,
    parent: null,
  });
  const opened = await openRepository(repoDir);
  return { volume, repoDir, tree: record.tree, ...opened };
}

async function openRepository(repoDir: string): Promise<{ repository: Repository; store: WatchedStore }> {
  const store = new WatchedStore(repoDir);
  stores.push(store);
  return { store, repository: await Repository.open(store) };
}

async function download(stream: Readable, file: string): Promise<string> {
  await pipeline(stream, fs.createWriteStream(file));
  return file;
}

function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Everything but the root itself, with mtimes cut to the second (all a tar keeps). */
async function describeVolume(root: string): Promise<Record<string, NodeInfo>> {
  const tree = await describeTree(root, { mtimes: true });
  delete tree[''];
  for (const info of Object.values(tree)) info.mtimeMs = Math.floor(info.mtimeMs! / 1000) * 1000;
  return tree;
}

/**
 * A tar's entries, by path, each as its raw bytes: pax header (if any), header block, content
 * and padding. Also the paths in order, and what follows the last entry.
 */
function tarEntries(tar: Buffer): { order: string[]; raw: Map<string, Buffer>; trailer: Buffer } {
  const order: string[] = [];
  const raw = new Map<string, Buffer>();
  const octal = (block: Buffer, at: number, length: number) =>
    parseInt(
      block
        .toString('latin1', at, at + length)
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
  const text = (block: Buffer, at: number, length: number) =>
    block.toString('utf8', at, at + length).replace(/\0.*$/s, '');
  let offset = 0;
  let start = 0;
  let paxPath: string | null = null;
  while (offset < tar.length) {
    const block = tar.subarray(offset, offset + 512);
    if (block.every((byte) => byte === 0)) break;
    const type = String.fromCharCode(block[156]!);
    const size = octal(block, 124, 12);
    const body = tar.subarray(offset + 512, offset + 512 + size);
    const next = offset + 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      paxPath = /\d+ path=(.*)\n/.exec(body.toString('utf8'))?.[1] ?? null;
      offset = next;
      continue;
    }
    const prefix = text(block, 345, 155);
    const name = text(block, 0, 100);
    const entryPath = paxPath ?? (prefix === '' ? name : `${prefix}/${name}`);
    order.push(entryPath);
    raw.set(entryPath, tar.subarray(start, next));
    paxPath = null;
    offset = next;
    start = next;
  }
  return { order, raw, trailer: tar.subarray(offset) };
}

/** The node at `rel` in the snapshot whose root tree is `tree`. */
async function nodeAt(repository: Repository, tree: string, rel: string): Promise<TreeNode> {
  let node: TreeNode | undefined;
  let id = tree;
  for (const name of rel.split('/')) {
    node = (await repository.readTree(id)).entries.find((entry) => entry.name === name);
    if (node === undefined) throw new Error(`${rel} is not in the snapshot`);
    if (node.type === 'dir') id = node.tree;
  }
  return node!;
}

/** How many threads this process runs (the compression threads among them). */
function threads(): number {
  return fs.readdirSync('/proc/self/task').length;
}

/** The thread count once it holds still (the snapshot writer's thread may still be ending). */
async function settledThreads(): Promise<number> {
  let count = threads();
  await until(
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = threads();
      return now === count || ((count = now), false);
    },
    { timeoutMs: 10_000, what: 'the thread count to settle' },
  );
  return count;
}

describe('snapshotTarGz', () => {
  it('streams a .tar.gz that GNU tar and gzip read back into the volume, file for file', async () => {
    const { volume, repository, tree } = await snapshotOf(makeVolume);
    const root = workspace();
    const output = await download(snapshotTarGz(repository, tree), path.join(root, 'snapshot.tar.gz'));

    execFileSync('gzip', ['-t', output]);
    const extracted = path.join(root, 'extracted');
    fs.mkdirSync(extracted);
    execFileSync('tar', ['-xzpf', output, '-C', extracted]);
    expect(await describeVolume(extracted)).toEqual(await describeVolume(volume));

    // Names that need pax, and every path of the volume, as GNU tar lists them.
    const listed = execFileSync('tar', ['-tzf', output], { encoding: 'utf8' }).trim().split('\n');
    expect(listed).toContain(DEEP_FILE);
    expect(listed).toContain('ünïcødé/日本語のファイル.txt');
    expect(listed).toContain('empty-dir/');
    const timed = execFileSync('tar', ['--full-time', '-tvzf', output], {
      encoding: 'utf8',
      env: { ...process.env, TZ: 'UTC' },
    });
    expect(timed).toMatch(/ 0\/0 +0 2023-11-14 22:13:20 empty\.txt\n/); // the second it fell in
  });

  it('gives the same bytes every time, from any view of the repository', async () => {
    const { repoDir, repository, tree } = await snapshotOf(makeVolume);
    const root = workspace();
    const first = await download(snapshotTarGz(repository, tree), path.join(root, 'first.tar.gz'));
    const again = await openRepository(repoDir);
    const second = await download(snapshotTarGz(again.repository, tree), path.join(root, 'second.tar.gz'));
    expect(sha256(second)).toBe(sha256(first));
  });

  it('writes each entry byte for byte as the archive writer does, in the snapshot order', async () => {
    const { volume, repository, tree } = await snapshotOf(makeVolume);
    const root = workspace();
    const ours = await download(snapshotTarGz(repository, tree), path.join(root, 'snapshot.tar.gz'));
    const theirs = path.join(root, 'archive.tar.gz');
    await createArchive(volume, theirs);

    const a = tarEntries(gunzipSync(fs.readFileSync(ours)));
    const b = tarEntries(gunzipSync(fs.readFileSync(theirs)));
    expect([...a.raw.keys()].sort()).toEqual([...b.raw.keys()].sort());
    for (const [entryPath, bytes] of b.raw) expect(a.raw.get(entryPath)?.equals(bytes), entryPath).toBe(true);
    expect(a.trailer.equals(Buffer.alloc(1024))).toBe(true);
    expect(b.trailer.equals(Buffer.alloc(1024))).toBe(true);
    // Depth-first, by the bytes of the names, each directory before its content.
    expect(a.order.slice(0, 8)).toEqual([
      'a/',
      'a/b/',
      'a/b/c/',
      'a/b/c/d/',
      'a/b/c/d/e/',
      'a/b/c/d/e/nested.txt',
      'deep/',
      'deep/a-rather-long-directory-name/',
    ]);
    expect(a.raw.get(DEEP_FILE)!.length).toBeGreaterThan(1024); // a pax header in front

    // The project's own reader takes it as it takes an archive: same entries, same content.
    const read = async (file: string) => {
      const entries: Record<string, { kind: string; mode: number; sha256: string }> = {};
      await readArchive(file, async (entry) => {
        const hash = createHash('sha256');
        await entry.readBody((chunk) => void hash.update(chunk));
        entries[entry.rel] = { kind: entry.kind, mode: entry.tar.mode!, sha256: hash.digest('hex') };
      });
      return entries;
    };
    expect(await read(ours)).toEqual(await read(theirs));
  });

  it('fails with DamagedRepository when a chunk in a pack is damaged', async () => {
    const { repoDir, repository, tree } = await snapshotOf(makeVolume);
    const mca = await nodeAt(repository, tree, 'world/region/r.0.0.mca');
    if (mca.type !== 'file') throw new Error('not a file');
    const where = repository.location(mca.chunks[1]!)!;
    const pack = path.join(repoDir, packKey(where.pack));
    const bytes = fs.readFileSync(pack);
    bytes[where.offset + Math.floor(where.length / 2)]! ^= 0x40;
    fs.writeFileSync(pack, bytes);

    const damaged = await openRepository(repoDir);
    const output = path.join(workspace(), 'snapshot.tar.gz');
    const failure = await download(snapshotTarGz(damaged.repository, tree), output).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DamagedRepository);
    expect((failure as Error).message).toContain('world/region/r.0.0.mca');
    expect((failure as DamagedRepository).object).toBe(where.pack);
  });

  it('fails with DamagedRepository when a pack is missing', async () => {
    const { repoDir, repository, tree } = await snapshotOf(makeVolume);
    const packs = new Set(
      [...repository.entries()].filter(([, b]) => b.kind === 'data').map(([, b]) => b.pack),
    );
    for (const pack of packs) fs.rmSync(path.join(repoDir, packKey(pack)));
    const broken = await openRepository(repoDir);
    const output = path.join(workspace(), 'snapshot.tar.gz');
    const failure = await download(snapshotTarGz(broken.repository, tree), output).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DamagedRepository);
    expect((failure as Error).message).toMatch(/pack \w+ is missing/);
  });

  it('stops when its signal is aborted: no more reads, and its threads end', async () => {
    const { repository, store, tree } = await snapshotOf(makeVolume);
    const before = await settledThreads();
    const controller = new AbortController();
    const reason = new Error('the client went away');
    store.onRange = () => controller.abort(reason);
    const stream = snapshotTarGz(repository, tree, { signal: controller.signal });
    const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
    const failure = await download(stream, path.join(workspace(), 'snapshot.tar.gz')).catch(
      (e: unknown) => e,
    );
    expect(failure).toBe(reason);
    await closed;
    const ranges = store.ranges;
    await until(() => threads() <= before, { timeoutMs: 10_000, what: 'the compression threads to end' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(store.ranges).toBe(ranges);
    expect(ranges).toBe(1); // the root tree's, which aborted: no read started after it
  });

  it('does not start at all under a signal aborted already', async () => {
    const { repository, store, tree } = await snapshotOf(makeVolume);
    const stream = snapshotTarGz(repository, tree, { signal: AbortSignal.abort() });
    const failure = await download(stream, path.join(workspace(), 'snapshot.tar.gz')).catch(
      (e: unknown) => e,
    );
    expect((failure as Error).name).toBe('AbortError');
    expect(store.ranges).toBe(0);
  });

  it('reads no further than its consumer takes, and lets go of everything when destroyed', async () => {
    const { repository, store, tree } = await snapshotOf((volume) => writeRepeated(volume, BIG));
    const before = await settledThreads();
    const stream = snapshotTarGz(repository, tree);
    // Take the first bytes, then nothing more.
    const first = await new Promise<Buffer>((resolve, reject) => {
      stream.once('error', reject);
      stream.once('readable', () => resolve(stream.read() as Buffer));
    });
    expect(first.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(threads()).toBeGreaterThanOrEqual(before + GZIP_CONCURRENCY); // compressing meanwhile
    let fetched = -1;
    await until(
      async () => {
        const now = store.fetchedBytes;
        await new Promise((resolve) => setTimeout(resolve, 300));
        return now === store.fetchedBytes && (fetched = now) >= 0;
      },
      { timeoutMs: 20_000, what: 'the reads to stop' },
    );
    // Read ahead (48 MiB and a chunk), the compressor's blocks, what the stream buffers.
    expect(fetched).toBeLessThanOrEqual((48 + 4 + 2 * GZIP_CONCURRENCY + 4) * MiB);
    expect(fetched).toBeLessThan(BIG);

    const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
    stream.destroy();
    await closed;
    await until(() => threads() <= before, { timeoutMs: 10_000, what: 'the compression threads to end' });
    const ranges = store.ranges;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(store.ranges).toBe(ranges);
  });

  it('streams a large snapshot whole, every byte read once', async () => {
    const { volume, repository, store, tree } = await snapshotOf((dir) => writeRepeated(dir, BIG));
    const root = workspace();
    const output = await download(snapshotTarGz(repository, tree), path.join(root, 'snapshot.tar.gz'));
    expect(store.fetchedBytes).toBeGreaterThanOrEqual(BIG);
    expect(store.fetchedBytes).toBeLessThan(BIG + MiB); // and the trees
    const extracted = path.join(root, 'extracted');
    fs.mkdirSync(extracted);
    execFileSync('tar', ['-xzpf', output, '-C', extracted]);
    expect(await describeVolume(extracted)).toEqual(await describeVolume(volume));
  });
});
