/**
 * Snapshot repositories end to end, on both stores (a local directory, and an S3-compatible bucket
 * served by s3rver): a volume is snapshotted with `takeSnapshot` and read back with `readSnapshot`
 * byte for byte; later snapshots store only what changed (unchanged files are not read again,
 * unless `full`); excluded files and symlinks are left out; and damage in storage (a flipped
 * byte, a missing pack, a tree naming what is not there) fails the read with a DamagedRepository
 * that says which file it hit.
 */
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type ListObjectsV2CommandOutput,
} from '@aws-sdk/client-s3';
import { createCipheriv, createHash, randomUUID } from 'node:crypto';
import { open, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { S3Settings } from '../../../src/config.ts';
import {
  LocalRepositoryStore,
  RepositoryMissing,
  type RepositoryStore,
} from '../../../src/storage/repository/repository-store.ts';
import {
  blobId,
  packKey,
  Repository,
  type SnapshotRecord,
} from '../../../src/storage/repository/repository.ts';
import { S3RepositoryStore } from '../../../src/storage/repository/s3-repository-store.ts';
import { readSnapshot } from '../../../src/storage/repository/snapshot-reader.ts';
import { takeSnapshot, type SnapshotOptions } from '../../../src/storage/repository/snapshot-writer.ts';
import {
  DamagedRepository,
  encodeTree,
  type FileNode,
  type Tree,
} from '../../../src/storage/repository/tree.ts';
import { flipBits, snapshot, undoAfterEach, writeTree, type NodeInfo } from '../../support/archives.ts';
import { startS3, type TestS3 } from '../../support/s3.ts';

const KIB = 1024;
const MIB = 1024 * KIB;
/** A fixed modification time (whole seconds: utimes sets it back exactly). */
const FIXED_TIME = 1_700_000_000;

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

function s3Settings(): S3Settings {
  return {
    bucket: s3.bucket,
    endpoint: s3.endpoint,
    publicEndpoint: null,
    region: 'us-east-1',
    forcePathStyle: true,
    checksums: 'when_required',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
  };
}

/** What is undone after each test: temporary directories, stores left open. */
const undo = undoAfterEach();
const scratchDir = undo.dir;

/** One kind of store, and how a test reaches behind the repository's back to damage it. */
interface Backend {
  name: string;
  /** A new, empty store. */
  create(): Promise<RepositoryStore>;
  /** Another store over the same objects (nothing shared in memory with the first). */
  reopen(store: RepositoryStore): RepositoryStore;
  /** Flips one byte of an object, as storage damage would. */
  flipByte(store: RepositoryStore, key: string, offset: number): Promise<void>;
}

function tracked<T extends RepositoryStore>(store: T): T {
  undo.later(() => store.close());
  return store;
}

const local: Backend = {
  name: 'a local directory',
  create: async () => tracked(new LocalRepositoryStore(await scratchDir('aerie-repository-'))),
  reopen: (store) => tracked(new LocalRepositoryStore((store as LocalRepositoryStore).root)),
  flipByte: (store, key, offset) =>
    flipBits(path.join((store as LocalRepositoryStore).root, ...key.split('/')), offset),
};

const onS3: Backend = {
  name: 'an S3 bucket',
  create: () => Promise.resolve(tracked(new S3RepositoryStore(s3Settings(), `${randomUUID()}/repository/`))),
  reopen: (store) => tracked(new S3RepositoryStore(s3Settings(), (store as S3RepositoryStore).prefix)),
  flipByte: async (store, key, offset) => {
    const Key = (store as S3RepositoryStore).prefix + key;
    const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key }));
    const bytes = Buffer.from(await object.Body!.transformToByteArray());
    bytes[offset] = bytes[offset]! ^ 0x01;
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body: bytes }));
  },
};

/** The same pseudo-random bytes for a seed, every run (AES-256-CTR over zeros). */
function seeded(length: number, seed: string): Buffer {
  const key = Buffer.alloc(32);
  key.write(seed);
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(length));
}

/** About `bytes` of log-like text (zstd makes a fraction of it). */
function logText(bytes: number): string {
  const words = ['player', 'joined', 'left', 'the', 'game', 'saved', 'chunk', 'tick', 'world', 'server'];
  let state = 12345;
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const picked: string[] = [];
    for (let w = 0; w < 8; w++) {
      state = (state * 16807) % 2147483647;
      picked.push(words[state % words.length]!);
    }
    const line = `[12:${String(i % 60).padStart(2, '0')}:${String(i % 59).padStart(2, '0')}] [Server thread/INFO]: ${picked.join(' ')} #${i}\n`;
    lines.push(line);
    length += line.length;
  }
  return lines.join('');
}

const RANDOM_FILE = 'random.bin';
const RANDOM_BYTES = 3 * MIB;

/** A small server volume: a 3 MiB random file, 2 MiB of text, nested directories, empty ones. */
async function makeVolume(): Promise<{ volume: string; bytes: number }> {
  const volume = await scratchDir('aerie-volume-');
  await writeTree(volume, {
    [RANDOM_FILE]: seeded(RANDOM_BYTES, RANDOM_FILE),
    'logs/latest.log': logText(2 * MIB),
    'world/level.dat': seeded(10 * KIB, 'level'),
    'world/region/r.0.0.mca': seeded(300 * KIB, 'region'),
    'config/server.properties': 'motd=A Minecraft Server\nmax-players=20\n',
    'a/b/c/deep.txt': 'deep down\n',
    'empty.txt': '',
    'plugins/': { dir: true },
    'start.sh': { content: '#!/bin/sh\nexec java -jar server.jar\n', mode: 0o755 },
    'private/': { dir: true, mode: 0o700 },
    'private/key.pem': { content: 'not really a key\n', mode: 0o600 },
  });
  await utimes(path.join(volume, RANDOM_FILE), FIXED_TIME, FIXED_TIME);
  const bytes = Object.values(await snapshot(volume)).reduce((sum, node) => sum + (node.size ?? 0), 0);
  return { volume, bytes };
}

/** The volume as `snapshot` describes it, with mtimes, the root and any symlink left out. */
async function expected(volume: string): Promise<Record<string, NodeInfo>> {
  const all = await snapshot(volume, { mtimes: true });
  delete all[''];
  for (const [rel, node] of Object.entries(all)) if (node.type === 'symlink') delete all[rel];
  return all;
}

/** Every entry of a snapshot, read back the way `snapshot` describes a tree (content hashed). */
async function readBack(repository: Repository, tree: string): Promise<Record<string, NodeInfo>> {
  const out: Record<string, NodeInfo> = {};
  for await (const entry of readSnapshot(repository, tree)) {
    const { node } = entry;
    if (node.type === 'dir') {
      out[entry.rel] = { type: 'dir', mode: node.mode, mtimeMs: node.mtime };
      for await (const chunk of entry.content()) expect(chunk).toHaveLength(0);
      continue;
    }
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of entry.content()) {
      hash.update(chunk);
      size += chunk.length;
    }
    expect(size).toBe(node.size);
    out[entry.rel] = { type: 'file', mode: node.mode, size, sha256: hash.digest('hex'), mtimeMs: node.mtime };
  }
  return out;
}

/** What reading the whole snapshot fails with. */
async function readFailure(repository: Repository, tree: string): Promise<DamagedRepository> {
  try {
    await readBack(repository, tree);
  } catch (error) {
    expect(error).toBeInstanceOf(DamagedRepository);
    return error as DamagedRepository;
  }
  throw new Error('the snapshot was read back whole');
}

async function snap(
  volume: string,
  store: RepositoryStore,
  options: Partial<SnapshotOptions> = {},
): Promise<SnapshotRecord & { backup: string }> {
  const repository = await Repository.open(store);
  const { record, sha256 } = await takeSnapshot(volume, repository, {
    backupId: randomUUID(),
    parent: null,
    ...options,
  });
  expect(sha256).toMatch(/^[0-9a-f]{64}$/);
  return record;
}

/** The node of a file in a snapshot, found through its trees. */
async function fileNode(repository: Repository, tree: string, rel: string): Promise<FileNode> {
  const names = rel.split('/');
  let current: Tree = await repository.readTree(tree);
  for (const [index, name] of names.entries()) {
    const node = current.entries.find((entry) => entry.name === name);
    if (node === undefined) throw new Error(`${rel} is not in the snapshot`);
    if (index === names.length - 1) {
      if (node.type !== 'file') throw new Error(`${rel} is no file`);
      return node;
    }
    if (node.type !== 'dir') throw new Error(`${name} is no directory`);
    current = await repository.readTree(node.tree);
  }
  throw new Error('unreachable');
}

/** Overwrites `length` bytes in the middle of a file, in place (size and inode kept). */
async function editInPlace(file: string, offset: number, bytes: Buffer): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.write(bytes, 0, bytes.length, offset);
  } finally {
    await handle.close();
  }
}

describe.each([local, onS3])('a snapshot repository in $name', (backend) => {
  it('stores a volume and reads every file back, byte for byte, with its tree', async () => {
    const store = await backend.create();
    const { volume, bytes } = await makeVolume();
    const record = await snap(volume, store);
    expect(record).toMatchObject({ v: 1, parent: null, files: 9, directories: 9, bytes });
    expect(record.added.blobs).toBeGreaterThan(0);
    // The random file is stored as it is, the text compressed.
    expect(record.added.bytes).toBeGreaterThan(RANDOM_BYTES);
    expect(record.added.bytes).toBeLessThan(bytes * 0.8);

    const repository = await Repository.open(backend.reopen(store));
    expect(await repository.snapshotIds()).toEqual([record.backup]);
    expect((await repository.loadSnapshot(record.backup)).record).toEqual(record);
    const found = await readBack(repository, record.tree);
    expect(found).toEqual(await expected(volume));
    expect(found['empty.txt']).toMatchObject({ type: 'file', size: 0 });
    expect(found.plugins).toMatchObject({ type: 'dir' });
    expect(found['start.sh']).toMatchObject({ mode: 0o755 });
    expect(found.private).toMatchObject({ mode: 0o700 });
    // Directories come before what they hold, in name order.
    const order = Object.keys(found);
    expect(order.indexOf('a')).toBeLessThan(order.indexOf('a/b'));
    expect(order.indexOf('a/b/c')).toBeLessThan(order.indexOf('a/b/c/deep.txt'));
    expect(order).toEqual([...order].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
  });

  it('reads whole every file whose size falls around the read window (2 MiB)', async () => {
    const store = await backend.create();
    const volume = await scratchDir('aerie-volume-');
    const sizes = [0, 1, 4095, 2 * MIB - 1, 2 * MIB, 2 * MIB + 1, 4 * MIB, 5 * MIB + 3];
    await writeTree(
      volume,
      Object.fromEntries(sizes.map((size) => [`f${size}.bin`, seeded(size, `s${size}`)])),
    );
    const record = await snap(volume, store);
    expect(record.bytes).toBe(sizes.reduce((sum, size) => sum + size, 0));
    const found = await readBack(await Repository.open(backend.reopen(store)), record.tree);
    expect(found).toEqual(await expected(volume));
  });

  it('reads a file whose chunks lie one after another in a pack with one range request', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const record = await snap(volume, store);
    const reader = backend.reopen(store);
    const repository = await Repository.open(reader);
    const random = await fileNode(repository, record.tree, RANDOM_FILE);
    expect(random.chunks.length).toBeGreaterThan(2);
    const ranges = vi.spyOn(reader, 'getRange');
    const found = await readBack(repository, record.tree);
    expect(found).toEqual(await expected(volume));
    // One request for the run of the random file's chunks (stored as they are, one after another).
    const places = random.chunks.map((id) => repository.location(id)!);
    const forIt = ranges.mock.calls.filter(([, offset]) => offset === places[0]!.offset);
    expect(forIt).toHaveLength(1);
    const last = places[places.length - 1]!;
    expect(forIt[0]![2]).toBe(last.offset + last.length - places[0]!.offset);
    expect(
      ranges.mock.calls.some(([, offset]) => places.slice(1).some((where) => where.offset === offset)),
    ).toBe(false);
  });

  it('adds next to nothing for a second snapshot of the unchanged volume', async () => {
    const store = await backend.create();
    const { volume, bytes } = await makeVolume();
    const first = await snap(volume, store);
    const second = await snap(volume, store, { parent: first.backup });
    expect(second.parent).toBe(first.backup);
    expect(second.tree).toBe(first.tree);
    expect(second).toMatchObject({ files: first.files, directories: first.directories, bytes });
    expect(second.added.bytes).toBeLessThan(bytes / 100);
    // Read every file again (`full`): the same chunks, none stored twice.
    const third = await snap(volume, store, { parent: second.backup, full: true });
    expect(third.tree).toBe(first.tree);
    expect(third.added.bytes).toBeLessThan(bytes / 100);
    const repository = await Repository.open(backend.reopen(store));
    expect((await repository.snapshotIds()).sort()).toEqual(
      [first.backup, second.backup, third.backup].sort(),
    );
    expect(await readBack(repository, third.tree)).toEqual(await expected(volume));
  });

  it('stores a chunk or two of a file edited in place, and reads the new content back', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const first = await snap(volume, store);
    const file = path.join(volume, RANDOM_FILE);
    await editInPlace(file, RANDOM_BYTES / 2, seeded(4 * KIB, 'the edit'));
    await utimes(file, FIXED_TIME + 60, FIXED_TIME + 60);
    const second = await snap(volume, store, { parent: first.backup });

    const repository = await Repository.open(backend.reopen(store));
    const before = await fileNode(repository, first.tree, RANDOM_FILE);
    const after = await fileNode(repository, second.tree, RANDOM_FILE);
    expect(before.chunks.length).toBeGreaterThanOrEqual(3);
    const changed = after.chunks.filter((id) => !before.chunks.includes(id));
    expect(changed.length).toBeGreaterThanOrEqual(1);
    expect(changed.length).toBeLessThanOrEqual(2);
    // The changed chunks and the trees above the file: far less than the file.
    expect(second.added.bytes).toBeLessThan(RANDOM_BYTES / 2);
    expect(second.added.blobs).toBeLessThanOrEqual(changed.length + 1);
    expect(await readBack(repository, second.tree)).toEqual(await expected(volume));
  });

  it('misses a change that kept size and mtime, unless `full` reads every file', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const first = await snap(volume, store);
    const repository = await Repository.open(backend.reopen(store));
    const original = (await readBack(repository, first.tree))[RANDOM_FILE]!;

    const file = path.join(volume, RANDOM_FILE);
    await editInPlace(file, RANDOM_BYTES / 2, seeded(4 * KIB, 'a quiet edit'));
    await utimes(file, FIXED_TIME, FIXED_TIME);
    const now = await expected(volume);
    expect(now[RANDOM_FILE]).toMatchObject({ size: original.size, mtimeMs: original.mtimeMs });
    expect(now[RANDOM_FILE]!.sha256).not.toBe(original.sha256);

    // Size, mtime and inode as in the parent: the file is not read, its old chunks stand.
    const missed = await snap(volume, store, { parent: first.backup });
    expect(missed.tree).toBe(first.tree);
    expect(missed.added.blobs).toBe(0);
    const reopened = await Repository.open(backend.reopen(store));
    expect((await readBack(reopened, missed.tree))[RANDOM_FILE]).toEqual(original);

    const found = await snap(volume, store, { parent: missed.backup, full: true });
    expect(found.tree).not.toBe(first.tree);
    expect(found.added.bytes).toBeLessThan(RANDOM_BYTES / 2);
    const last = await Repository.open(backend.reopen(store));
    expect(await readBack(last, found.tree)).toEqual(now);
  });

  it('leaves out what `exclude` names, and what is under an excluded directory', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    await writeTree(volume, { 'cache/a.tmp': 'scratch', 'cache/keep.txt': 'kept', 'x.tmp': 'scratch' });
    const asked: string[] = [];
    const record = await snap(volume, store, {
      exclude: (rel, isDirectory) => {
        asked.push(`${rel}${isDirectory ? '/' : ''}`);
        return (isDirectory && rel === 'logs') || rel === 'world/level.dat' || rel.endsWith('.tmp');
      },
    });
    expect(asked).toContain('logs/');
    expect(asked).toContain('world/region/');
    expect(asked).toContain('world/region/r.0.0.mca');
    expect(asked).not.toContain('logs/latest.log');

    const repository = await Repository.open(backend.reopen(store));
    const found = await readBack(repository, record.tree);
    const want = await expected(volume);
    for (const rel of ['logs', 'logs/latest.log', 'world/level.dat', 'cache/a.tmp', 'x.tmp']) {
      expect(found).not.toHaveProperty([rel]);
      delete want[rel];
    }
    expect(found).toHaveProperty(['cache/keep.txt']);
    expect(found).toEqual(want);
    // The text was never read: nothing the size of it was stored.
    expect(record.added.bytes).toBeLessThan(RANDOM_BYTES + 512 * KIB);
  });

  it('stores no symlink and follows none', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const outside = await scratchDir('aerie-outside-');
    const secret = `secret ${randomUUID()}\n`;
    await writeTree(outside, { 'secret.txt': secret, 'more/secret.txt': secret });
    await symlink(outside, path.join(volume, 'escape'));
    await symlink(path.join(outside, 'secret.txt'), path.join(volume, 'secret-link'));
    await symlink(RANDOM_FILE, path.join(volume, 'same-as-random'));
    await symlink('..', path.join(volume, 'world/loop'));
    await symlink('does-not-exist', path.join(volume, 'dangling'));
    // A file in the first snapshot that is a symlink by the second.
    await writeFile(path.join(volume, 'config/ops.json'), '[]\n');
    const first = await snap(volume, store);
    await rm(path.join(volume, 'config/ops.json'));
    await symlink(path.join(outside, 'secret.txt'), path.join(volume, 'config/ops.json'));
    const second = await snap(volume, store, { parent: first.backup });

    const repository = await Repository.open(backend.reopen(store));
    for (const record of [first, second]) {
      const found = await readBack(repository, record.tree);
      for (const rel of [
        'escape',
        'secret-link',
        'same-as-random',
        'world/loop',
        'dangling',
        'escape/secret.txt',
      ])
        expect(found).not.toHaveProperty([rel]);
      expect(
        Object.values(found).some(
          (node) => node.sha256 === createHash('sha256').update(secret).digest('hex'),
        ),
      ).toBe(false);
    }
    expect(await readBack(repository, first.tree)).toHaveProperty(['config/ops.json']);
    const found = await readBack(repository, second.tree);
    expect(found).not.toHaveProperty(['config/ops.json']);
    expect(found).toEqual(await expected(volume));
    expect(second.files).toBe(first.files - 1);
    // Nothing of the outside directory's content is anywhere in the repository.
    const secretId = blobId(Buffer.from(secret));
    expect(repository.has(secretId)).toBe(false);
  });

  it('fails, naming the file, when a byte of a pack is damaged', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const record = await snap(volume, store);
    const repository = await Repository.open(backend.reopen(store));
    const node = await fileNode(repository, record.tree, RANDOM_FILE);
    const where = repository.location(node.chunks[1]!)!;
    expect(where).toMatchObject({ kind: 'data', compressed: false });
    await backend.flipByte(store, packKey(where.pack), where.offset + Math.floor(where.length / 2));

    const damaged = await readFailure(await Repository.open(backend.reopen(store)), record.tree);
    expect(damaged.message).toMatch(
      new RegExp(`^${RANDOM_FILE}: blob ${node.chunks[1]} in pack ${where.pack} is damaged`),
    );
    expect(damaged.object).toBe(where.pack);
  });

  it('fails, naming the file, when compressed data in a pack is damaged', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const record = await snap(volume, store);
    const repository = await Repository.open(backend.reopen(store));
    const node = await fileNode(repository, record.tree, 'logs/latest.log');
    const where = repository.location(node.chunks[0]!)!;
    expect(where.compressed).toBe(true);
    await backend.flipByte(store, packKey(where.pack), where.offset + Math.floor(where.length / 2));
    const damaged = await readFailure(await Repository.open(backend.reopen(store)), record.tree);
    expect(damaged.message).toMatch(/^logs\/latest\.log: blob [0-9a-f]{64} in pack [0-9a-f]{64} is damaged/);
  });

  it('fails when a tree blob is damaged', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const record = await snap(volume, store);
    const repository = await Repository.open(backend.reopen(store));
    const where = repository.location(record.tree)!;
    expect(where.kind).toBe('tree');
    await backend.flipByte(store, packKey(where.pack), where.offset);
    const damaged = await readFailure(await Repository.open(backend.reopen(store)), record.tree);
    expect(damaged.message).toContain(`blob ${record.tree} in pack ${where.pack} is damaged`);
  });

  it('fails, naming the file, when a pack is missing', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const record = await snap(volume, store);
    const repository = await Repository.open(backend.reopen(store));
    const node = await fileNode(repository, record.tree, 'a/b/c/deep.txt');
    const { pack } = repository.location(node.chunks[0]!)!;
    await store.delete(packKey(pack));
    expect((await store.list('packs/')).map((o) => o.key)).not.toContain(packKey(pack));

    const damaged = await readFailure(await Repository.open(backend.reopen(store)), record.tree);
    // The first file of the walk (directories first, in name order) is the first to need it.
    expect(damaged.message).toBe(`a/b/c/deep.txt: pack ${pack} is missing (it holds blob ${node.chunks[0]})`);
    expect(damaged.object).toBe(pack);
  });

  it('fails, naming the file, when a tree names a blob the index does not know', async () => {
    const store = await backend.create();
    const { volume } = await makeVolume();
    const record = await snap(volume, store);
    const repository = await Repository.open(backend.reopen(store));
    const real = await fileNode(repository, record.tree, 'a/b/c/deep.txt');
    const unknown = blobId(Buffer.from(`never stored ${randomUUID()}`));
    const file = (name: string, extra: Partial<FileNode>): FileNode => ({
      name,
      type: 'file',
      mode: 0o644,
      mtime: FIXED_TIME * 1000,
      size: real.size,
      inode: 1,
      chunks: real.chunks,
      ...extra,
    });
    const writer = repository.writer();
    const store1 = async (tree: Tree) => {
      const bytes = encodeTree(tree);
      await writer.add('tree', bytes);
      return blobId(bytes);
    };
    const ghost = await store1({
      entries: [file('fine.txt', {}), file('ghost.bin', { chunks: [real.chunks[0]!, unknown] })],
    });
    const treeAsChunk = await store1({ entries: [file('odd.bin', { chunks: [record.tree] })] });
    const wrongSize = await store1({ entries: [file('short.txt', { size: real.size + 1 })] });
    const lostDir = await store1({
      entries: [{ name: 'lost', type: 'dir', mode: 0o755, mtime: FIXED_TIME * 1000, tree: unknown }],
    });
    await writer.finish();

    const reopened = await Repository.open(backend.reopen(store));
    expect((await readFailure(reopened, ghost)).message).toBe(
      `ghost.bin: chunk ${unknown} is in no pack of the index`,
    );
    expect((await readFailure(reopened, treeAsChunk)).message).toBe(
      `odd.bin: chunk ${record.tree} is in no pack of the index`,
    );
    expect((await readFailure(reopened, wrongSize)).message).toContain('short.txt: its chunks hold');
    expect((await readFailure(reopened, lostDir)).message).toBe(`blob ${unknown} is in no pack of the index`);
    expect((await readFailure(reopened, unknown)).message).toBe(`blob ${unknown} is in no pack of the index`);
  });

  it('keeps objects as the store contract says', async () => {
    const store = await backend.create();
    const key = `packs/ab/${'ab'.repeat(32)}`;
    await store.put(key, [Buffer.from('hello, '), Buffer.from('world'), new Uint8Array([33])]);
    await store.put('index/one', [Buffer.from('{}')]);
    await store.put('snapshots/two', [Buffer.alloc(0)]);
    await store.sync();
    expect((await store.get(key)).toString()).toBe('hello, world!');
    expect(await store.get('snapshots/two')).toHaveLength(0);
    expect((await store.getRange(key, 7, 5)).toString()).toBe('world');
    expect((await store.getRange(key, 0, 1)).toString()).toBe('h');
    // Past the end: what there is, and nothing once the range starts past it.
    expect((await store.getRange(key, 10, 10)).toString()).toBe('ld!');
    expect(await store.getRange(key, 13, 4)).toHaveLength(0);
    expect(await store.getRange(key, 100, 4)).toHaveLength(0);
    expect(await store.getRange(key, 3, 0)).toHaveLength(0);

    const listed = await store.list('packs/');
    expect(listed).toEqual([{ key, bytes: 13, modifiedAt: expect.any(Date) as Date }]);
    expect(Math.abs(listed[0]!.modifiedAt.getTime() - Date.now())).toBeLessThan(60_000);
    expect((await store.list('index/')).map((o) => o.key)).toEqual(['index/one']);
    expect((await store.list('snapshots/')).map((o) => [o.key, o.bytes])).toEqual([['snapshots/two', 0]]);
    expect(await store.list('locks/')).toEqual([]);

    for (const read of [() => store.get('index/none'), () => store.getRange('packs/cd/none', 0, 4)]) {
      const error: unknown = await read().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RepositoryMissing);
    }
    await expect(store.get('index/none')).rejects.toThrow('index/none is missing from the backup repository');

    await store.delete(key);
    await store.delete(key); // gone already: removed all the same
    await store.delete('index/never-was');
    await expect(store.get(key)).rejects.toBeInstanceOf(RepositoryMissing);
    await expect(store.getRange(key, 0, 4)).rejects.toBeInstanceOf(RepositoryMissing);
    expect(await store.list('packs/')).toEqual([]);

    // An object put again under its key is replaced whole.
    await store.put('index/one', [Buffer.from('{"v":1}')]);
    expect((await backend.reopen(store).get('index/one')).toString()).toBe('{"v":1}');
  });

  it('opens an empty store as an empty repository', async () => {
    const repository = await Repository.open(await backend.create());
    expect(await repository.snapshotIds()).toEqual([]);
    expect([...repository.entries()]).toEqual([]);
  });
});

describe('S3RepositoryStore', () => {
  it('keeps its objects under its prefix, apart from any other', async () => {
    const server = randomUUID();
    const store = tracked(new S3RepositoryStore(s3Settings(), `${server}/repository`));
    const other = tracked(new S3RepositoryStore(s3Settings(), `/${server}/repository-2/`));
    expect(store.prefix).toBe(`${server}/repository/`);
    expect(store.where).toBe(`s3://${s3.bucket}/${server}/repository/`);
    expect(other.prefix).toBe(`${server}/repository-2/`);
    await store.put('index/a', [Buffer.from('a')]);
    await other.put('index/b', [Buffer.from('b')]);
    expect(await s3.keys()).toEqual(
      expect.arrayContaining([`${server}/repository/index/a`, `${server}/repository-2/index/b`]),
    );
    expect((await store.list('index/')).map((o) => o.key)).toEqual(['index/a']);
    expect((await other.list('index/')).map((o) => o.key)).toEqual(['index/b']);
    await expect(other.get('index/a')).rejects.toBeInstanceOf(RepositoryMissing);
  });

  it('lists page after page', async () => {
    // s3rver 3.7 makes its continuation tokens with DES, which Node's OpenSSL 3 no longer has: a
    // truncated listing fails there (InternalError). Its pages are cut here instead, from the
    // whole listing, with tokens of their own.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called with its client below
    const send = S3Client.prototype.send as unknown as (this: S3Client, command: unknown) => Promise<unknown>;
    const pages: { token: string | undefined; keys: number }[] = [];
    const paging = vi.spyOn(S3Client.prototype, 'send').mockImplementation(async function (
      this: S3Client,
      command: unknown,
    ) {
      if (!(command instanceof ListObjectsV2Command)) return send.call(this, command);
      const { ContinuationToken, MaxKeys, ...input } = command.input;
      const all = (await send.call(this, new ListObjectsV2Command(input))) as ListObjectsV2CommandOutput;
      const from = ContinuationToken === undefined ? 0 : Number(ContinuationToken);
      const contents = (all.Contents ?? []).slice(from, from + MaxKeys!);
      const next = from + MaxKeys!;
      const more = next < (all.Contents ?? []).length;
      pages.push({ token: ContinuationToken, keys: contents.length });
      return {
        ...all,
        Contents: contents,
        KeyCount: contents.length,
        IsTruncated: more,
        ...(more ? { NextContinuationToken: String(next) } : {}),
      };
    } as never);
    undo.later(() => Promise.resolve(paging.mockRestore()));

    const store = tracked(
      new S3RepositoryStore(s3Settings(), `${randomUUID()}/repository/`, { pageSize: 3 }),
    );
    const keys = Array.from({ length: 10 }, (_, i) => `snapshots/${String(i).padStart(2, '0')}`);
    for (const key of keys) await store.put(key, [Buffer.from(key)]);
    await store.put('index/x', [Buffer.from('x')]);
    const listed = await store.list('snapshots/');
    expect(listed.map((o) => o.key)).toEqual(keys);
    expect(listed.every((o) => o.bytes === 12 && o.modifiedAt instanceof Date)).toBe(true);
    expect(pages).toEqual([
      { token: undefined, keys: 3 },
      { token: '3', keys: 3 },
      { token: '6', keys: 3 },
      { token: '9', keys: 1 },
    ]);
    expect((await store.list('')).length).toBe(11);
  });

  it('holds a pack of the largest size in one object, and reads ranges of it', async () => {
    const store = tracked(new S3RepositoryStore(s3Settings(), `${randomUUID()}/repository/`));
    const pack = seeded(17 * MIB, 'a large pack');
    const parts = [pack.subarray(0, 5 * MIB), pack.subarray(5 * MIB, 16 * MIB), pack.subarray(16 * MIB)];
    await store.put('packs/00/large', parts);
    expect(await store.list('packs/')).toEqual([
      { key: 'packs/00/large', bytes: pack.length, modifiedAt: expect.any(Date) as Date },
    ]);
    expect(
      (await store.getRange('packs/00/large', 9 * MIB + 3, 2 * MIB)).equals(
        pack.subarray(9 * MIB + 3, 11 * MIB + 3),
      ),
    ).toBe(true);
    expect((await store.get('packs/00/large')).equals(pack)).toBe(true);
  });

  it('marks a store it cannot reach as unreachable', async () => {
    const { storeUnreachable } = await import('../../../src/storage/stores/store-unreachable.ts');
    const store = tracked(
      new S3RepositoryStore(
        { ...s3Settings(), endpoint: 'http://127.0.0.1:9' },
        `${randomUUID()}/repository/`,
      ),
    );
    expect(store.where).toMatch(/^s3:\/\//);
    const error: unknown = await store.get('index/a').catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(RepositoryMissing);
    expect(storeUnreachable(error)).toBe('ECONNREFUSED');
  });
});
