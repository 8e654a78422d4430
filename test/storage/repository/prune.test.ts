import { execFile } from 'node:child_process';
import { readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../support/archives.ts';
import { checkRepository } from '../../../src/storage/repository/check.ts';
import { prune, PruneRefused, type PruneReport } from '../../../src/storage/repository/prune.ts';
import { LocalRepositoryStore } from '../../../src/storage/repository/repository-store.ts';
import { PackBuilder, packKey, Repository } from '../../../src/storage/repository/repository.ts';
import { walkTree } from '../../../src/storage/repository/snapshot-reader.ts';
import {
  backUp,
  copyRepository,
  objectsOf,
  randomContent,
  readBack,
  textContent,
  volumeContents,
  writeVolume,
  type VolumeSpec,
} from './fixtures/volumes.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const CHILD = fileURLToPath(new URL('./fixtures/prune-child.ts', import.meta.url));

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

/** Six files of 600 KiB (one chunk each), text, a nested directory: about 4 MiB. */
function firstVolume(): VolumeSpec {
  const spec: VolumeSpec = {};
  for (let i = 0; i < 6; i++) spec[`world/region-${i}.mca`] = randomContent(100 + i, 600 * 1024);
  spec['logs/latest.log'] = textContent(1, 300 * 1024);
  spec['config/server.properties'] = textContent(2, 2000);
  spec['config/plugins/'] = null;
  return spec;
}

/** Keeps one region of the first and its config; adds a new region and a new log. */
function secondVolume(): VolumeSpec {
  const first = firstVolume();
  return {
    'world/region-0.mca': first['world/region-0.mca']!,
    'world/region-9.mca': randomContent(900, 700 * 1024),
    'logs/latest.log': textContent(3, 200 * 1024),
    'config/server.properties': first['config/server.properties']!,
  };
}

function thirdVolume(): VolumeSpec {
  return { 'world/region-9.mca': secondVolume()['world/region-9.mca']!, 'notes.txt': textContent(4, 5000) };
}

/** The figures of a report add up, and agree with the repository as it is now. */
async function expectConsistent(report: PruneReport, store: LocalRepositoryStore): Promise<void> {
  const { before, after } = report;
  expect(after.packs).toBe(before.packs - report.packsDeleted - report.packsRewritten + report.packsWritten);
  expect(after.indexes).toBe(report.indexWritten !== null ? 1 : before.indexes - report.indexesDeleted);
  expect(after.snapshots).toBe(before.snapshots);
  expect(after.objects).toBe(after.packs + after.indexes + after.snapshots);
  expect(report.bytesReclaimed).toBe(before.bytes - after.bytes);
  const listed = await objectsOf(store);
  expect(Object.keys(listed)).toHaveLength(after.objects);
  const repository = await Repository.open(store);
  expect([...repository.entries()]).toHaveLength(report.blobsKept);
}

describe('prune', () => {
  let work: string;
  let sources: Record<string, string>;
  /** A repository with backups A, B and C, each of its own volume: never changed, only copied. */
  let template: LocalRepositoryStore;
  let copies = 0;

  const freshCopy = () => copyRepository(template, path.join(work, `repo-${++copies}`));

  beforeAll(async () => {
    work = await tempDir('aerie-prune-');
    sources = {
      [A]: await writeVolume(path.join(work, 'volume-a'), firstVolume()),
      [B]: await writeVolume(path.join(work, 'volume-b'), secondVolume()),
      [C]: await writeVolume(path.join(work, 'volume-c'), thirdVolume()),
    };
    template = new LocalRepositoryStore(path.join(work, 'template'));
    for (const backup of [A, B, C]) await backUp(template, sources[backup]!, backup);
    await template.close();
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  async function expectReadsBack(store: LocalRepositoryStore, backups: string[]): Promise<void> {
    for (const backup of backups)
      expect(await readBack(store, backup)).toEqual(await volumeContents(sources[backup]!));
  }

  it('keeps what the remaining snapshots use, byte for byte, and frees the rest', async () => {
    const store = await freshCopy();
    const indexed = [...(await Repository.open(store)).entries()].length;
    await (await Repository.open(store)).deleteSnapshot(A);

    const report = await prune(store);
    expect(report.snapshots).toBe(2);
    await expectReadsBack(store, [B, C]);
    expect(report.after.bytes).toBeLessThan(report.before.bytes);
    expect(report.bytesReclaimed).toBeGreaterThan(5 * 600 * 1024); // the five regions only A had
    expect(report.blobsKept + report.blobsRemoved).toBe(indexed);
    expect(report.blobsRemoved).toBeGreaterThanOrEqual(7); // 5 regions, A's log, A's trees
    expect(report.after.indexes).toBe(1);
    expect(report.indexWritten).not.toBeNull();
    await expectConsistent(report, store);
    const check = await checkRepository(store, { readData: true });
    expect(check.problems).toEqual([]);
    expect(check.snapshots).toBe(2);

    // A second prune finds nothing to do.
    const before = await objectsOf(store);
    const again = await prune(store);
    expect(again).toMatchObject({
      packsDeleted: 0,
      packsRewritten: 0,
      packsWritten: 0,
      indexesDeleted: 0,
      indexWritten: null,
      blobsRemoved: 0,
      bytesReclaimed: 0,
      blobsKept: report.blobsKept,
    });
    expect(await objectsOf(store)).toEqual(before);
    await store.close();
  });

  it('changes nothing when every blob is in use', async () => {
    const store = await freshCopy();
    const before = await objectsOf(store);
    const report = await prune(store);
    expect(report).toMatchObject({
      snapshots: 3,
      packsDeleted: 0,
      strayPacks: 0,
      packsRewritten: 0,
      packsWritten: 0,
      indexesDeleted: 0,
      indexWritten: null,
      blobsRemoved: 0,
      duplicatesDropped: 0,
      bytesReclaimed: 0,
      leftoversRemoved: 0,
    });
    expect(report.after).toEqual(report.before);
    expect(report.before).toMatchObject({ indexes: 3, snapshots: 3 });
    expect(await objectsOf(store)).toEqual(before);
    await expectReadsBack(store, [A, B, C]);
    await store.close();
  });

  it('deletes a pack no index names (a killed backup), and old temporary files', async () => {
    const store = await freshCopy();
    const builder = new PackBuilder();
    builder.add(['f'.repeat(63) + '0', 0, 0, 5, 5, 0], Buffer.from('hello'));
    const pack = builder.seal();
    await store.put(packKey(pack.id), pack.parts);
    const dir = path.join(store.root, 'packs', pack.id.slice(0, 2));
    const oldTmp = path.join(dir, `${pack.id}.0123456789ab.tmp`);
    const newTmp = path.join(dir, `${pack.id}.ba9876543210.tmp`);
    await writeFile(oldTmp, 'half a pack');
    await writeFile(newTmp, 'a pack being written');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(oldTmp, twoHoursAgo, twoHoursAgo);

    const report = await prune(store);
    expect(report).toMatchObject({
      packsDeleted: 1,
      strayPacks: 1,
      packsRewritten: 0,
      indexWritten: null,
      leftoversRemoved: 1,
      bytesReclaimed: pack.bytes,
    });
    expect((await store.list('packs/')).map((o) => o.key)).not.toContain(packKey(pack.id));
    expect((await readdir(dir)).filter((name) => name.endsWith('.tmp'))).toEqual([path.basename(newTmp)]);
    await expectConsistent(report, store);
    await expectReadsBack(store, [A, B, C]);
    await store.close();
  });

  it('rewrites a pack mostly of unused blobs, and keeps it whole below repackBelow', async () => {
    // A's data pack: six regions and a log; once A is gone B still uses one region of it.
    const kept = await freshCopy();
    await (await Repository.open(kept)).deleteSnapshot(A);
    const keptReport = await prune(kept, { repackBelow: 0 });
    expect(keptReport.packsRewritten).toBe(0);
    expect(keptReport.packsWritten).toBe(0);
    await expectReadsBack(kept, [B, C]);
    await expectConsistent(keptReport, kept);

    const store = await freshCopy();
    await (await Repository.open(store)).deleteSnapshot(A);
    const report = await prune(store);
    expect(report.packsRewritten).toBeGreaterThanOrEqual(1);
    expect(report.packsWritten).toBeGreaterThanOrEqual(1);
    expect(report.bytesRepacked).toBeGreaterThanOrEqual(600 * 1024); // region-0, still B's
    expect(report.bytesRepacked).toBeLessThan(2 * 1024 * 1024);
    expect(report.after.bytes).toBeLessThan(keptReport.after.bytes - 4 * 600 * 1024);
    await expectConsistent(report, store);
    await expectReadsBack(store, [B, C]);
    expect((await checkRepository(store, { readData: true })).problems).toEqual([]);

    // The repacked repository is stable: pruning again rewrites nothing.
    const again = await prune(store);
    expect(again).toMatchObject({
      packsRewritten: 0,
      packsDeleted: 0,
      indexWritten: null,
      bytesReclaimed: 0,
    });
    await Promise.all([kept.close(), store.close()]);
  });

  it('empties a repository none of whose snapshots is left', async () => {
    const store = await freshCopy();
    const repository = await Repository.open(store);
    for (const backup of [A, B, C]) await repository.deleteSnapshot(backup);
    const report = await prune(store);
    expect(report).toMatchObject({ snapshots: 0, blobsKept: 0, indexWritten: null, packsWritten: 0 });
    expect(report.after).toEqual({ objects: 0, bytes: 0, packs: 0, indexes: 0, snapshots: 0 });
    expect(report.packsDeleted).toBe(report.before.packs);
    expect(report.indexesDeleted).toBe(3);
    await expectConsistent(report, store);
    expect(await prune(store)).toMatchObject({ packsDeleted: 0, indexesDeleted: 0, bytesReclaimed: 0 });
    await store.close();
  });

  it('refuses to delete anything while a snapshot cannot be read, naming its backup', async () => {
    const store = await freshCopy();
    await (await Repository.open(store)).deleteSnapshot(A);
    const damaged = '00000000-0000-4000-8000-0000000000dd';
    await store.put(`snapshots/${damaged}`, [Buffer.from('{"v":1,')]);
    const before = await objectsOf(store);
    const error = await prune(store).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PruneRefused);
    expect((error as PruneRefused).backup).toBe(damaged);
    expect((error as Error).message).toContain(damaged);
    expect(await objectsOf(store)).toEqual(before);

    // A snapshot whose data is gone: the pack of C's region-9 (B's data pack) is deleted.
    await store.delete(`snapshots/${damaged}`);
    const repository = await Repository.open(store);
    const { record } = await repository.loadSnapshot(C);
    let chunk: string | undefined;
    for await (const { node } of walkTree(repository, record.tree))
      if (node.type === 'file' && node.name === 'region-9.mca') chunk = node.chunks[0];
    await store.delete(packKey(repository.location(chunk!)!.pack));
    const withoutPack = await objectsOf(store);
    const refused = await prune(store).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PruneRefused);
    expect([B, C]).toContain((refused as PruneRefused).backup);
    expect(await objectsOf(store)).toEqual(withoutPack);
    await store.close();
  });

  it('leaves every snapshot readable when killed at any point, and a later prune finishes', async () => {
    // What an uninterrupted prune leaves.
    const reference = await freshCopy();
    await (await Repository.open(reference)).deleteSnapshot(A);
    const referenceReport = await prune(reference);
    expect(referenceReport.packsRewritten).toBeGreaterThanOrEqual(1);
    const finalPacks = (await reference.list('packs/')).map((o) => o.key).sort();
    await reference.close();

    const run = promisify(execFile);
    const reached = new Set<string>();
    let finished = false;
    for (let killAt = 1; !finished && killAt < 100; killAt++) {
      const store = await freshCopy();
      await (await Repository.open(store)).deleteSnapshot(A);
      await store.close();
      const outcome = await run(process.execPath, ['--import', TSX, CHILD, store.root, String(killAt)], {
        cwd: ROOT,
      }).then(
        (done) => done.stdout,
        (error: Error & { signal?: string; stdout?: string; stderr?: string }) => {
          if (error.signal !== 'SIGKILL') throw new Error(`prune failed: ${error.stderr ?? error.message}`);
          return error.stdout ?? '';
        },
      );
      finished = outcome.startsWith('finished');
      if (!finished) reached.add(outcome.trim().split(' ')[2]!);

      // Whatever the point, the remaining snapshots read back whole.
      const after = new LocalRepositoryStore(store.root);
      await expectReadsBack(after, [B, C]);
      // A later prune finishes the job: the repository ends as an uninterrupted prune leaves it.
      await prune(after);
      await expectReadsBack(after, [B, C]);
      expect((await after.list('packs/')).map((o) => o.key).sort()).toEqual(finalPacks);
      expect(await after.list('index/')).toHaveLength(1);
      const check = await checkRepository(after, { readData: true });
      expect(check.problems).toEqual([]);
      expect(check.strayPacks).toBe(0);
      await after.close();
      await rm(store.root, { recursive: true, force: true });
    }
    expect(finished).toBe(true);
    // Killed within every step that changes the repository.
    for (const step of ['write-packs', 'write-index', 'delete-index', 'delete-packs'])
      expect(reached).toContain(step);
  }, 240_000);
});
