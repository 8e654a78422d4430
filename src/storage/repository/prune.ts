/**
 * Prune: removes from a snapshot repository what no snapshot needs any more, after backups were
 * deleted (their snapshot records removed) or a backup was killed mid-way (packs no index names).
 *
 * Every snapshot's trees are walked (each tree once) to find the blobs in use. A pack none of
 * whose blobs is used is deleted; a pack whose used blobs take less than `repackBelow` of its
 * content is rewritten: its used blobs are copied, checked, into new packs, and it is deleted.
 * Packs no index names are deleted; a blob stored twice keeps one copy.
 *
 * A snapshot that cannot be read (its record, a tree, a chunk the index does not know) makes
 * prune refuse (PruneRefused, naming the backup) before it changes anything: what a damaged
 * snapshot needs cannot be known, so nothing may be deleted.
 *
 * Crash safety. The caller's lock keeps backups out meanwhile; a prune killed at any point
 * leaves every snapshot readable, because objects are written before anything that names them
 * goes away:
 *
 *   1. new packs are written (nothing names them yet: a killed prune leaves garbage);
 *   2. ONE new index is written naming every used blob in its pack (new or kept); the old index
 *      objects still name the old packs, which are all there, so each blob is findable either way
 *      (Repository.open takes either copy of a blob two indexes name);
 *   3. the old index objects are deleted: only the new one is left;
 *   4. the packs no longer named are deleted;
 *   5. temporary files of writers killed mid-object, older than an hour, are removed.
 *
 * A later prune finishes the job: packs left by step 1 or 4 are named by no index, and copies a
 * kill between 2 and 3 leaves twice are resolved in favour of the new (fully used) packs.
 *
 * Memory: the set of used blob ids, the index, and one pack being written (blobs are read range
 * by range from the packs being rewritten, never a whole pack at once).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { syncDirectory } from '../directory-root.ts';
import {
  checkBlob,
  PACK_TARGET,
  PackBuilder,
  packKey,
  parseIndex,
  parseSnapshot,
  writeIndex,
  type BlobKind,
  type BlobLine,
  type BlobLocation,
  type PackEntry,
} from './repository.ts';
import {
  LocalRepositoryStore,
  RepositoryMissing,
  type RepositoryStore,
  type StoredObject,
} from './repository-store.ts';
import { DamagedRepository, decodeTree } from './tree.ts';

/** The steps of a prune, in order (progress reports name them). */
export type PruneStep =
  'index' | 'walk' | 'write-packs' | 'write-index' | 'delete-index' | 'delete-packs' | 'leftovers' | 'done';

/**
 * Where a prune is: reported as each step begins (`done` 0) and after each object it writes or
 * deletes (and each snapshot walked), so every report is a point where it may be killed safely.
 */
export interface PruneProgress {
  step: PruneStep;
  done: number;
  total: number;
}

export interface PruneOptions {
  /** A pack whose used blobs take less than this share of its content is rewritten (default 0.5). */
  repackBelow?: number;
  onProgress?: (progress: PruneProgress) => void;
  /** Temporary files older than this are removed (default an hour): a writer may still be on them. */
  leftoverAgeMs?: number;
}

/** What the repository's objects take: packs, index objects and snapshot records. */
export interface StorageUse {
  objects: number;
  bytes: number;
  packs: number;
  indexes: number;
  snapshots: number;
}

export interface PruneReport {
  /** Snapshots walked (all those in the repository). */
  snapshots: number;
  before: StorageUse;
  after: StorageUse;
  /** Packs deleted whole: none of their blobs used, or named by no index (`strayPacks` of them). */
  packsDeleted: number;
  strayPacks: number;
  /** Packs whose used blobs were copied into new packs, then deleted. */
  packsRewritten: number;
  /** New packs written (what the rewritten packs' used blobs went into). */
  packsWritten: number;
  /** Index objects deleted (replaced by the one written, if any). */
  indexesDeleted: number;
  /** The index object written; null when the index did not change, or no snapshot is left. */
  indexWritten: string | null;
  /** Distinct blobs in use, all kept. */
  blobsKept: number;
  /** Distinct blobs the index named that no snapshot uses, no longer named. */
  blobsRemoved: number;
  /** Second copies of used blobs (in two packs) no longer named. */
  duplicatesDropped: number;
  /** Stored bytes copied into new packs. */
  bytesRepacked: number;
  /** `before.bytes - after.bytes`. */
  bytesReclaimed: number;
  /** Temporary files of killed writers removed. */
  leftoversRemoved: number;
}

/** Prune would delete what a snapshot it cannot read may need: it changed nothing. */
export class PruneRefused extends Error {
  constructor(
    /** The backup whose snapshot is damaged, by UUID. */
    readonly backup: string,
    message: string,
  ) {
    super(message);
    this.name = 'PruneRefused';
  }
}

const DEFAULT_REPACK_BELOW = 0.5;
const HOUR_MS = 60 * 60 * 1000;
/** Trees read at once while walking a snapshot. */
const TREE_READS = 8;
/** Neighbouring blobs of a pack being rewritten are fetched together, up to this many bytes. */
const RANGE_BYTES = 4 * 1024 * 1024;
/** Unused bytes between two blobs that a joint fetch may take along. */
const RANGE_GAP = 64 * 1024;
/** A pack ends with its header's length (u32 LE) and this magic (repository.ts). */
const PACK_MAGIC = 'AERIEPK1';
const PACK_TRAILER = 4 + PACK_MAGIC.length;

interface Copy {
  pack: string;
  line: BlobLine;
}

interface PackState {
  id: string;
  /** Bytes as listed in the store; null when an index names it but it is not there. */
  stored: number | null;
  /** Bytes the index says it has. */
  indexed: number | null;
  /** Used blobs assigned to this copy of theirs. */
  assigned: BlobLine[];
  liveBytes: number;
}

export async function prune(store: RepositoryStore, options: PruneOptions = {}): Promise<PruneReport> {
  const repackBelow = options.repackBelow ?? DEFAULT_REPACK_BELOW;
  if (!(repackBelow >= 0 && repackBelow <= 1)) throw new RangeError('repackBelow must be between 0 and 1');
  const progress = (step: PruneStep, done: number, total: number) =>
    options.onProgress?.({ step, done, total });

  // The repository as it is: objects listed, index loaded with every copy of every blob.
  progress('index', 0, 1);
  const listed = await listAll(store);
  const before = usage(listed);
  const packs = new Map<string, PackState>();
  for (const object of listed.packs) {
    const id = object.key.slice(object.key.lastIndexOf('/') + 1);
    packs.set(id, { id, stored: object.bytes, indexed: null, assigned: [], liveBytes: 0 });
  }
  const copies = new Map<string, Copy[]>();
  const indexKeys: string[] = [];
  /** For each index object (by position in indexKeys), the copies it names, as `blob@pack`. */
  const indexCopies: string[][] = [];
  for (const object of listed.indexes) {
    let bytes: Buffer;
    try {
      bytes = await store.get(object.key);
    } catch (error) {
      if (error instanceof RepositoryMissing) continue;
      throw error;
    }
    // A damaged index hides which packs hold what: nothing can be judged unused.
    const entries = parseIndex(object.key, bytes);
    indexKeys.push(object.key);
    indexCopies.push(entries.flatMap((entry) => entry.blobs.map((line) => `${line[0]}@${entry.id}`)));
    for (const entry of entries) addEntry(packs, copies, entry);
  }
  progress('index', 1, 1);

  // Every blob a snapshot uses, each tree read (and checked) once.
  const snapshots = listed.snapshots.map((o) => o.key.slice('snapshots/'.length)).sort();
  const reader = new CopyReader(store, packs, copies);
  const used = new Map<string, number>(); // blob id → the first snapshot (index) using it
  const seenTrees = new Set<string>();
  progress('walk', 0, snapshots.length);
  for (const [n, backup] of snapshots.entries()) {
    try {
      await walkSnapshot(store, backup, n, reader, copies, packs, used, seenTrees);
    } catch (error) {
      if (!(error instanceof DamagedRepository || error instanceof RepositoryMissing)) throw error;
      throw new PruneRefused(
        backup,
        `prune refused: the snapshot of backup ${backup} cannot be read (${error.message}); ` +
          'nothing was deleted (check the repository, and delete the backup if it cannot be repaired)',
      );
    }
    progress('walk', n + 1, snapshots.length);
  }

  // Each used blob keeps one copy: in a pack that is there, preferably one the index sizes
  // rightly, then the one most of whose content is used (a pack a killed prune wrote).
  const grossLive = new Map<string, number>();
  for (const id of used.keys())
    for (const copy of copies.get(id)!)
      if (present(packs, copy.pack)) grossLive.set(copy.pack, (grossLive.get(copy.pack) ?? 0) + copy.line[3]);
  const rank = (copy: Copy): [number, number] => {
    const pack = packs.get(copy.pack)!;
    return [
      pack.indexed === pack.stored ? 1 : 0,
      (grossLive.get(copy.pack) ?? 0) / Math.max(pack.stored!, 1),
    ];
  };
  let duplicatesDropped = 0;
  for (const id of used.keys()) {
    const candidates = copies.get(id)!.filter((copy) => present(packs, copy.pack));
    candidates.sort((a, b) => {
      const [ra, rb] = [rank(a), rank(b)];
      return rb[0] - ra[0] || rb[1] - ra[1] || (a.pack < b.pack ? -1 : a.pack > b.pack ? 1 : 0);
    });
    let chosen = candidates[0]!;
    const verified = reader.verified.get(id);
    if (verified !== undefined && verified !== chosen.pack) {
      // A tree read from another copy: keep the preferred copy only if it reads as well.
      if (!(await reader.readsFrom(id, chosen))) chosen = candidates.find((c) => c.pack === verified)!;
    }
    duplicatesDropped += candidates.length - 1;
    const pack = packs.get(chosen.pack)!;
    pack.assigned.push(chosen.line);
    pack.liveBytes += chosen.line[3];
  }
  let indexedBlobs = 0;
  let indexedCopies = 0;
  for (const list of copies.values()) {
    indexedBlobs += 1;
    indexedCopies += list.length;
  }

  // What becomes of each pack.
  const unused: string[] = [];
  const stray: string[] = [];
  const rewrite: PackState[] = [];
  const kept: PackState[] = [];
  for (const pack of [...packs.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (pack.stored === null) continue; // named, not there: only its index entries go
    if (pack.indexed === null) stray.push(pack.id);
    else if (pack.assigned.length === 0) unused.push(pack.id);
    else if (
      pack.liveBytes < repackBelow * pack.stored && // content ≤ size: most packs need no read
      pack.liveBytes < repackBelow * (await contentBytes(store, pack))
    )
      rewrite.push(pack);
    else kept.push(pack);
  }
  const assignedCount = used.size;
  const indexChanges = unused.length > 0 || rewrite.length > 0 || indexedCopies !== assignedCount;

  // 1. New packs: the rewritten packs' used blobs, copied and checked.
  const written: PackEntry[] = [];
  let bytesRepacked = 0;
  if (rewrite.length > 0) {
    const total = rewrite.reduce((sum, pack) => sum + pack.liveBytes, 0);
    progress('write-packs', 0, total);
    for (const kind of ['data', 'tree'] as const) {
      let builder = new PackBuilder();
      const seal = async () => {
        if (builder.lines.length === 0) return;
        const sealed = builder.seal();
        await store.put(packKey(sealed.id), sealed.parts);
        written.push({ id: sealed.id, bytes: sealed.bytes, blobs: builder.lines });
        builder = new PackBuilder();
        progress('write-packs', bytesRepacked, total);
      };
      for (const pack of rewrite) {
        for await (const { lines, range } of readRanges(store, pack, kind)) {
          for (const line of lines) {
            const [id, code, offset, length, raw, compression] = line;
            const stored = range.data.subarray(offset - range.offset, offset - range.offset + length);
            try {
              await checkBlob(id, locationOf(pack.id, line), stored);
            } catch (error) {
              if (!(error instanceof DamagedRepository)) throw error;
              const backup = snapshots[used.get(id)!]!;
              throw new PruneRefused(
                backup,
                `prune refused: ${error.message} (backup ${backup} uses it); nothing was deleted`,
              );
            }
            builder.add([id, code, builder.bytes, length, raw, compression], stored);
            bytesRepacked += length;
            if (builder.bytes >= PACK_TARGET) await seal();
          }
        }
      }
      await seal();
    }
  }

  // 2. One index naming every used blob where it is now (none when no snapshot is left).
  let indexWritten: string | null = null;
  if (indexChanges && used.size > 0) {
    progress('write-index', 0, 1);
    const entries: PackEntry[] = [
      ...kept.map((pack) => ({
        id: pack.id,
        bytes: pack.stored!,
        blobs: [...pack.assigned].sort((a, b) => a[2] - b[2]),
      })),
      ...written,
    ].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    await store.sync(); // the new packs are on disk before an index names them
    indexWritten = await writeIndex(store, entries);
    await store.sync();
    progress('write-index', 1, 1);
  }
  const named = new Set([...kept.map((p) => p.id), ...written.map((p) => p.id)]);

  // 3. The old index objects: all of them once a new one is written; otherwise those that name
  // nothing the others do not (a prune killed in this step left them).
  let indexesDeleted = 0;
  const old = indexChanges
    ? indexKeys.filter((key) => key !== indexWritten)
    : redundantIndexes(indexKeys, indexCopies);
  if (old.length > 0) {
    progress('delete-index', 0, old.length);
    for (const key of old) {
      await store.delete(key);
      indexesDeleted += 1;
      progress('delete-index', indexesDeleted, old.length);
    }
    // The deletions are on disk before the packs they named go: an index coming back after a
    // power cut could otherwise name a deleted pack.
    if (store instanceof LocalRepositoryStore && old.length > 0)
      await syncDirectory(path.join(store.root, 'index'));
  }

  // 4. Packs no index names any more.
  const doomed = [...(indexChanges ? [...unused, ...rewrite.map((p) => p.id)] : []), ...stray].filter(
    (id) => !named.has(id),
  );
  progress('delete-packs', 0, doomed.length);
  for (const [n, id] of doomed.entries()) {
    await store.delete(packKey(id));
    progress('delete-packs', n + 1, doomed.length);
  }

  // 5. Temporary files of writers killed mid-object.
  let leftoversRemoved = 0;
  if (store instanceof LocalRepositoryStore) {
    const old = await store.leftovers(new Date(Date.now() - (options.leftoverAgeMs ?? HOUR_MS)));
    progress('leftovers', 0, old.length);
    for (const file of old) {
      await rm(file, { force: true });
      leftoversRemoved += 1;
      progress('leftovers', leftoversRemoved, old.length);
    }
  }

  const after = usage(await listAll(store));
  progress('done', 1, 1);
  const rewritten = rewrite.filter((pack) => doomed.includes(pack.id)).length;
  return {
    snapshots: snapshots.length,
    before,
    after,
    packsDeleted: doomed.length - rewritten,
    strayPacks: stray.length,
    packsRewritten: rewritten,
    packsWritten: written.length,
    indexesDeleted,
    indexWritten,
    blobsKept: used.size,
    blobsRemoved: indexedBlobs - used.size,
    duplicatesDropped,
    bytesRepacked,
    bytesReclaimed: before.bytes - after.bytes,
    leftoversRemoved,
  };
}

async function listAll(
  store: RepositoryStore,
): Promise<{ packs: StoredObject[]; indexes: StoredObject[]; snapshots: StoredObject[] }> {
  const [packs, indexes, snapshots] = await Promise.all([
    store.list('packs/'),
    store.list('index/'),
    store.list('snapshots/'),
  ]);
  return { packs, indexes, snapshots };
}

function usage(listed: {
  packs: StoredObject[];
  indexes: StoredObject[];
  snapshots: StoredObject[];
}): StorageUse {
  const all = [...listed.packs, ...listed.indexes, ...listed.snapshots];
  return {
    objects: all.length,
    bytes: all.reduce((sum, o) => sum + o.bytes, 0),
    packs: listed.packs.length,
    indexes: listed.indexes.length,
    snapshots: listed.snapshots.length,
  };
}

function addEntry(packs: Map<string, PackState>, copies: Map<string, Copy[]>, entry: PackEntry): void {
  let pack = packs.get(entry.id);
  if (pack === undefined) {
    pack = { id: entry.id, stored: null, indexed: entry.bytes, assigned: [], liveBytes: 0 };
    packs.set(entry.id, pack);
  } else if (pack.indexed === null) pack.indexed = entry.bytes;
  for (const line of entry.blobs) {
    const list = copies.get(line[0]);
    if (list === undefined) copies.set(line[0], [{ pack: entry.id, line }]);
    else if (!list.some((copy) => copy.pack === entry.id)) list.push({ pack: entry.id, line });
  }
}

function present(packs: Map<string, PackState>, id: string): boolean {
  return packs.get(id)?.stored != null;
}

function locationOf(pack: string, line: BlobLine): BlobLocation {
  const [, kind, offset, length, raw, compression] = line;
  return { pack, kind: kind === 1 ? 'tree' : 'data', offset, length, raw, compressed: compression === 1 };
}

/** Reads blobs from whichever of their copies is there and intact (each read checked). */
class CopyReader {
  /** The pack a blob was read from intact. */
  readonly verified = new Map<string, string>();

  constructor(
    private readonly store: RepositoryStore,
    private readonly packs: Map<string, PackState>,
    private readonly copies: Map<string, Copy[]>,
  ) {}

  async read(id: string, kind: BlobKind): Promise<Buffer> {
    const candidates = (this.copies.get(id) ?? []).filter((c) => locationOf(c.pack, c.line).kind === kind);
    if (candidates.length === 0)
      throw new DamagedRepository(`${kind} blob ${id} is in no pack of the index`, id);
    let failure: Error | null = null;
    for (const copy of candidates) {
      if (!present(this.packs, copy.pack)) {
        failure ??= new DamagedRepository(`pack ${copy.pack} is missing (it holds blob ${id})`, copy.pack);
        continue;
      }
      try {
        const content = await this.fetch(id, copy);
        this.verified.set(id, copy.pack);
        return content;
      } catch (error) {
        if (!(error instanceof DamagedRepository || error instanceof RepositoryMissing)) throw error;
        failure = error;
      }
    }
    throw failure instanceof DamagedRepository ? failure : new DamagedRepository(failure!.message, id);
  }

  async readsFrom(id: string, copy: Copy): Promise<boolean> {
    try {
      await this.fetch(id, copy);
      return true;
    } catch (error) {
      if (error instanceof DamagedRepository || error instanceof RepositoryMissing) return false;
      throw error;
    }
  }

  private async fetch(id: string, copy: Copy): Promise<Buffer> {
    const where = locationOf(copy.pack, copy.line);
    return checkBlob(id, where, await this.store.getRange(packKey(copy.pack), where.offset, where.length));
  }
}

/** Collects every blob snapshot `backup` uses into `used`; throws if any of it is not there. */
async function walkSnapshot(
  store: RepositoryStore,
  backup: string,
  n: number,
  reader: CopyReader,
  copies: Map<string, Copy[]>,
  packs: Map<string, PackState>,
  used: Map<string, number>,
  seenTrees: Set<string>,
): Promise<void> {
  const record = parseSnapshot(backup, await store.get(`snapshots/${backup}`));
  const use = (id: string) => {
    if (!used.has(id)) used.set(id, n);
  };
  await concurrently([{ id: record.tree, rel: '' }], TREE_READS, async ({ id, rel }, more) => {
    if (seenTrees.has(id)) return;
    seenTrees.add(id);
    const tree = decodeTree(id, await reader.read(id, 'tree'));
    use(id);
    for (const node of tree.entries) {
      const path = rel + node.name;
      if (node.type === 'dir') {
        more({ id: node.tree, rel: `${path}/` });
        continue;
      }
      let total = 0;
      for (const chunk of node.chunks) {
        const there = (copies.get(chunk) ?? []).filter((c) => c.line[1] === 0);
        if (there.length === 0)
          throw new DamagedRepository(`${path}: chunk ${chunk} is in no pack of the index`, chunk);
        if (!there.some((c) => present(packs, c.pack)))
          throw new DamagedRepository(
            `${path}: pack ${there[0]!.pack} is missing (it holds chunk ${chunk})`,
            chunk,
          );
        total += there[0]!.line[4];
        use(chunk);
      }
      if (total !== node.size)
        throw new DamagedRepository(
          `${path}: its chunks hold ${total} bytes, not the ${node.size} it should`,
          path,
        );
    }
  });
}

/**
 * Index objects every copy of which another index object that stays names too: deleting them
 * changes nothing a reader sees. The smaller go first, each judged against those still left.
 */
function redundantIndexes(keys: string[], named: string[][]): string[] {
  const listers = new Map<string, number>();
  for (const list of named) for (const copy of new Set(list)) listers.set(copy, (listers.get(copy) ?? 0) + 1);
  const redundant: string[] = [];
  const order = keys.map((_, n) => n).sort((a, b) => named[a]!.length - named[b]!.length);
  for (const n of order) {
    const own = new Set(named[n]);
    if (![...own].every((copy) => listers.get(copy)! > 1)) continue;
    for (const copy of own) listers.set(copy, listers.get(copy)! - 1);
    redundant.push(keys[n]!);
  }
  return redundant.sort();
}

/** Runs `work` on every item, and on every item it adds, `limit` at a time; the first failure wins. */
async function concurrently<T>(
  first: T[],
  limit: number,
  work: (item: T, more: (item: T) => void) => Promise<void>,
): Promise<void> {
  const queue = [...first];
  let running = 0;
  let failed = false;
  await new Promise<void>((resolve, reject) => {
    const pump = () => {
      if (failed) return;
      if (queue.length === 0 && running === 0) return resolve();
      while (running < limit && queue.length > 0) {
        const item = queue.pop()!;
        running += 1;
        work(item, (next) => queue.push(next)).then(
          () => {
            running -= 1;
            pump();
          },
          (error: unknown) => {
            failed = true;
            reject(error instanceof Error ? error : new Error(String(error)));
          },
        );
      }
    };
    pump();
  });
}

/**
 * Bytes of blobs a pack holds: its size less its header and trailer (read from its end), so
 * that a pack all of whose blobs are used counts as wholly used however small.
 */
async function contentBytes(store: RepositoryStore, pack: PackState): Promise<number> {
  const size = pack.stored!;
  if (size < PACK_TRAILER) return size;
  try {
    const tail = await store.getRange(packKey(pack.id), size - PACK_TRAILER, PACK_TRAILER);
    if (tail.length === PACK_TRAILER && tail.subarray(4).toString('latin1') === PACK_MAGIC) {
      const header = tail.readUInt32LE(0);
      if (header <= size - PACK_TRAILER) return size - PACK_TRAILER - header;
    }
  } catch (error) {
    if (!(error instanceof RepositoryMissing)) throw error;
  }
  return size;
}

/** The used blobs of `kind` a pack holds, in order, fetched a range of neighbours at a time. */
async function* readRanges(
  store: RepositoryStore,
  pack: PackState,
  kind: BlobKind,
): AsyncGenerator<{ lines: BlobLine[]; range: { offset: number; data: Buffer } }> {
  const code = kind === 'tree' ? 1 : 0;
  const lines = pack.assigned.filter((line) => line[1] === code).sort((a, b) => a[2] - b[2]);
  let index = 0;
  while (index < lines.length) {
    const start = lines[index]![2];
    let end = start + lines[index]![3];
    const group = [lines[index++]!];
    while (index < lines.length) {
      const [, , offset, length] = lines[index]!;
      if (offset - end > RANGE_GAP || offset + length - start > RANGE_BYTES) break;
      end = Math.max(end, offset + length);
      group.push(lines[index++]!);
    }
    const data = await store.getRange(packKey(pack.id), start, end - start);
    yield { lines: group, range: { offset: start, data } };
  }
}
