import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flipBits, tempDir } from '../../support/archives.ts';
import { checkRepository, type CheckReport } from '../../../src/storage/repository/check.ts';
import { LocalRepositoryStore } from '../../../src/storage/repository/repository-store.ts';
import { packKey, Repository, type BlobLocation } from '../../../src/storage/repository/repository.ts';
import { walkTree } from '../../../src/storage/repository/snapshot-reader.ts';
import { backUp, copyRepository, randomContent, textContent, writeVolume } from './fixtures/volumes.ts';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

describe('checkRepository', () => {
  let work: string;
  /** Backups A, B, C: B shares `shared.bin` with A, and `common.bin` with C. */
  let template: LocalRepositoryStore;
  let copies = 0;
  const freshCopy = () => copyRepository(template, path.join(work, `repo-${++copies}`));

  beforeAll(async () => {
    work = await tempDir('aerie-check-');
    const shared = randomContent(1, 500 * 1024);
    const common = randomContent(2, 400 * 1024);
    const volumes = {
      [A]: {
        'shared.bin': shared,
        'a/only-a.bin': randomContent(3, 300 * 1024),
        'a/log.txt': textContent(1, 50_000),
      },
      [B]: { 'shared.bin': shared, 'common.bin': common, 'b/notes.txt': textContent(2, 20_000) },
      [C]: { 'common.bin': common, 'c/only-c.bin': randomContent(4, 300 * 1024), 'c/empty/': null },
    };
    template = new LocalRepositoryStore(path.join(work, 'template'));
    for (const [backup, spec] of Object.entries(volumes))
      await backUp(template, await writeVolume(path.join(work, `volume-${backup}`), spec), backup);
    await template.close();
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** Checks the repository in `root` through a store of its own (none of a test's handles kept). */
  async function checkAt(root: string, options: { readData: boolean }): Promise<CheckReport> {
    const store = new LocalRepositoryStore(root);
    try {
      return await checkRepository(store, options);
    } finally {
      await store.close();
    }
  }

  /** Where the first chunk of file `name` of backup `backup` is stored. */
  async function chunkOf(store: LocalRepositoryStore, backup: string, name: string): Promise<BlobLocation> {
    const repository = await Repository.open(store);
    const { record } = await repository.loadSnapshot(backup);
    for await (const { rel, node } of walkTree(repository, record.tree))
      if (rel === name && node.type === 'file') return repository.location(node.chunks[0]!)!;
    throw new Error(`${name} is not in backup ${backup}`);
  }

  async function rootTreeOf(store: LocalRepositoryStore, backup: string): Promise<BlobLocation> {
    const repository = await Repository.open(store);
    return repository.location((await repository.loadSnapshot(backup)).record.tree)!;
  }

  /** Flips one bit of the byte at `offset` of a pack, in place. */
  function flipByte(store: LocalRepositoryStore, pack: string, offset: number): Promise<void> {
    return flipBits(path.join(store.root, ...packKey(pack).split('/')), offset, 0x10);
  }

  it('finds nothing wrong with a sound repository', async () => {
    const store = await freshCopy();
    const repository = await Repository.open(store);
    const blobs = [...repository.entries()].length;
    const packs = (await store.list('packs/')).length;
    for (const readData of [false, true]) {
      const report = await checkAt(store.root, { readData });
      expect(report).toEqual({
        snapshots: 3,
        packs,
        blobs,
        problems: [],
        damagedBackups: [],
        strayPacks: 0,
        bytesRead: readData ? (await store.list('packs/')).reduce((sum, o) => sum + o.bytes, 0) : 0,
      });
    }
    await store.close();
  });

  it('finds a byte changed inside a chunk only by reading the data, and names the backups using it', async () => {
    const store = await freshCopy();
    const where = await chunkOf(store, B, 'shared.bin');
    await store.close();
    await flipByte(store, where.pack, where.offset + Math.floor(where.length / 2));

    const structure = await checkAt(store.root, { readData: false });
    expect(structure.problems).toEqual([]);
    expect(structure.damagedBackups).toEqual([]);

    const data = await checkAt(store.root, { readData: true });
    expect(data.damagedBackups).toEqual([A, B]);
    const named = data.problems.filter((p) => p.backup !== null);
    expect(named.map((p) => p.backup).sort()).toEqual([A, B]);
    for (const problem of named) {
      expect(problem.message).toContain('shared.bin');
      expect(problem.message).toContain(where.pack);
    }
    // The pack as a whole no longer matches its id: a problem of its own.
    expect(data.problems).toContainEqual({
      backup: null,
      message: expect.stringContaining(`pack ${where.pack} is damaged`) as string,
    });
  });

  it('finds a deleted pack without reading the data, naming every backup that needs it', async () => {
    const store = await freshCopy();
    // common.bin is in B's data pack (B stored it first); C's own file in C's.
    const where = await chunkOf(store, C, 'common.bin');
    const own = await chunkOf(store, C, 'c/only-c.bin');
    expect(own.pack).not.toBe(where.pack);
    await store.delete(packKey(where.pack));
    await store.close();

    const report = await checkAt(store.root, { readData: false });
    expect(report.damagedBackups).toEqual([B, C]);
    expect(report.problems).toContainEqual({
      backup: null,
      message: `pack ${where.pack}, which the index names, is missing`,
    });
    const forC = report.problems.filter((p) => p.backup === C).map((p) => p.message);
    expect(forC.some((m) => m.includes('common.bin') && m.includes(`pack ${where.pack} is missing`))).toBe(
      true,
    );
    expect(forC.join('\n')).not.toContain('only-c.bin');
    expect(report.problems.some((p) => p.backup === A)).toBe(false);
  });

  it('names the backup whose tree is damaged, without reading the data', async () => {
    const store = await freshCopy();
    const tree = await rootTreeOf(store, C);
    await store.close();
    await flipByte(store, tree.pack, tree.offset + 1);
    const report = await checkAt(store.root, { readData: false });
    expect(report.damagedBackups).toContain(C);
    expect(report.problems.find((p) => p.backup === C)?.message).toMatch(/root directory.*damaged/);
  });

  it('names the backup whose snapshot record is damaged', async () => {
    const store = await freshCopy();
    await store.put(`snapshots/${B}`, [Buffer.from('{"v":1,"backup":')]);
    const report = await checkRepository(store, { readData: true });
    expect(report.damagedBackups).toEqual([B]);
    expect(report.problems).toEqual([
      { backup: B, message: expect.stringContaining(`the snapshot of backup ${B} is damaged`) as string },
    ]);
    await store.close();
  });
});
