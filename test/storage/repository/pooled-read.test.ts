/**
 * Repository.readPooledBlob in a worker thread (as a restore and an extract read): each blob's
 * content comes back exactly, decompressed and hashed in a checking thread beside the reader;
 * the reading thread ends by itself (its checking thread does not hold it); and storage damage (a flipped byte in a compressed and
 * in a stored blob, a pack cut short, a pack gone) fails that blob with the DamagedRepository
 * message readBlob gives, without spoiling the reads after it.
 */
import { createCipheriv, createHash, randomUUID } from 'node:crypto';
import { mkdir, rm, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInThread } from '../../../src/shared/thread.ts';
import { LocalRepositoryStore } from '../../../src/storage/repository/repository-store.ts';
import { packKey, Repository } from '../../../src/storage/repository/repository.ts';
import { takeSnapshot } from '../../../src/storage/repository/snapshot-writer.ts';
import type { FileNode } from '../../../src/storage/repository/tree.ts';
import { flipBits, undoAfterEach } from '../../support/archives.ts';
import type { PooledReadInput, PooledReadOutput } from './fixtures/pooled-read-thread.ts';

const KiB = 1024;
const undo = undoAfterEach();

/** The same pseudo-random bytes for a seed, every run. */
function seeded(length: number, seed: string): Buffer {
  const key = Buffer.alloc(32);
  key.write(seed);
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(length));
}

function logText(bytes: number): Buffer {
  const lines: string[] = [];
  for (let i = 0, length = 0; length < bytes; i++) {
    const line = `[12:00:${String(i % 60).padStart(2, '0')}] [Server thread/INFO]: Player${i % 37} moved ${i * 13}\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, bytes);
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A repository holding one snapshot of a volume of random and log files; its file nodes. */
async function repositoryOf(files: Record<string, Buffer>) {
  const volume = await undo.dir('aerie-pooled-volume-');
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(volume, rel)), { recursive: true });
    await writeFile(path.join(volume, rel), content);
  }
  const root = await undo.dir('aerie-pooled-repository-');
  const store = new LocalRepositoryStore(root);
  undo.later(() => store.close());
  const repository = await Repository.open(store);
  const { record } = await takeSnapshot(volume, repository, { backupId: randomUUID(), parent: null });
  const tree = await repository.readTree(record.tree);
  const nodes = new Map<string, FileNode>();
  for (const node of tree.entries) if (node.type === 'file') nodes.set(node.name, node);
  return { root, store, repository, nodes };
}

/** Reads in a thread, which must end by itself within a second of its outcome. */
async function readInThread(root: string, ids: string[]): Promise<PooledReadOutput> {
  const started = Date.now();
  const output = await runInThread<PooledReadOutput>(import.meta.url, './fixtures/pooled-read-thread', {
    root,
    ids,
  } satisfies PooledReadInput);
  // A thread still running after its outcome is waited for, then terminated, 10 s later.
  expect(Date.now() - started).toBeLessThan(5_000);
  return output;
}

function flipByte(root: string, key: string, offset: number): Promise<void> {
  return flipBits(path.join(root, ...key.split('/')), offset);
}

describe('reading pooled blobs in a worker thread', () => {
  it('gives back every blob exactly, compressed or not', async () => {
    const random = seeded(700 * KiB, 'random');
    const log = logText(900 * KiB);
    const { root, repository, nodes } = await repositoryOf({
      'random.bin': random,
      'latest.log': log,
      'tiny.txt': Buffer.from('motd=hello\n'),
    });
    const ids = [...nodes.values()].flatMap((node) => node.chunks);
    const kinds = ids.map((id) => repository.location(id)!.compressed);
    expect(kinds).toContain(true);
    expect(kinds).toContain(false);

    const { reads } = await readInThread(root, ids);
    const expected = await Promise.all(
      ids.map(async (id) => ({ sha256: sha256(await repository.readBlob(id)) })),
    );
    expect(reads).toEqual(expected);
  });

  it('fails a damaged blob as readBlob does, and reads the blobs after it', async () => {
    const random = seeded(300 * KiB, 'stored');
    const log = logText(400 * KiB);
    const { root, repository, nodes } = await repositoryOf({ 'stored.bin': random, 'latest.log': log });
    const storedId = nodes.get('stored.bin')!.chunks[0]!;
    const compressedId = nodes.get('latest.log')!.chunks[0]!;
    const stored = repository.location(storedId)!;
    const compressed = repository.location(compressedId)!;
    expect([stored.compressed, compressed.compressed]).toEqual([false, true]);
    await flipByte(root, packKey(stored.pack), stored.offset + 100);
    await flipByte(root, packKey(compressed.pack), compressed.offset + Math.floor(compressed.length / 2));

    const untouched = nodes.get('latest.log')!.chunks.slice(1);
    const { reads } = await readInThread(root, [storedId, compressedId, ...untouched]);
    const reopened = await Repository.open(new LocalRepositoryStore(root));
    const failure = (id: string) =>
      reopened.readBlob(id).then(
        () => null,
        (e: Error) => e.message,
      );
    expect(reads[0]).toEqual({ error: 'DamagedRepository', message: await failure(storedId) });
    expect(reads[0]).toMatchObject({ message: expect.stringMatching(/does not match its hash$/) as string });
    expect(reads[1]).toEqual({ error: 'DamagedRepository', message: await failure(compressedId) });
    expect(reads[1]).toMatchObject({
      message: expect.stringMatching(/compressed data is corrupt$/) as string,
    });
    for (const [index, id] of untouched.entries())
      expect(reads[index + 2]).toEqual({ sha256: sha256(await reopened.readBlob(id)) });
  });

  it('fails a blob whose pack was cut short or is gone, naming the pack', async () => {
    const { root, repository, nodes } = await repositoryOf({ 'stored.bin': seeded(200 * KiB, 'short') });
    const id = nodes.get('stored.bin')!.chunks[0]!;
    const where = repository.location(id)!;
    await truncate(path.join(root, ...packKey(where.pack).split('/')), where.offset + 10);
    expect((await readInThread(root, [id])).reads).toEqual([
      {
        error: 'DamagedRepository',
        message: `blob ${id} in pack ${where.pack} is damaged: the pack is shorter than its index says`,
      },
    ]);
    await rm(path.join(root, ...packKey(where.pack).split('/')));
    expect((await readInThread(root, [id])).reads).toEqual([
      { error: 'DamagedRepository', message: `pack ${where.pack} is missing (it holds blob ${id})` },
    ]);
  });
});
