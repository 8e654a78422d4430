/**
 * Checks a snapshot repository, and names the backups whatever is wrong makes unrestorable.
 *
 * Structure (always): every index object parses; every pack the index names is in the store,
 * the size the index says; every snapshot record parses; every tree of every snapshot reads
 * (checked against its hash) and decodes; every chunk a file names is in the index, and the
 * chunks add up to the file's size.
 *
 * Data (`readData`): every pack the index names is read whole, one at a time: its SHA-256 must
 * be its id, its own header must parse and agree with the index, and every blob the index puts
 * in it must decompress to the content its id is the hash of.
 *
 * Whatever is found damaged or missing (a pack, a blob, a tree) is traced to the snapshots that
 * use it: the report names each damaged backup by UUID, with what is wrong in it. A problem that
 * harms no backup (a pack's header, a second copy of a blob) is reported with `backup: null`.
 */
import { createHash } from 'node:crypto';
import {
  checkBlob,
  packKey,
  parseIndex,
  parsePackHeader,
  parseSnapshot,
  snapshotKey,
  type BlobKind,
  type BlobLine,
  type BlobLocation,
} from './repository.ts';
import { RepositoryMissing, type RepositoryStore } from './repository-store.ts';
import { DamagedRepository, decodeTree } from './tree.ts';

export type CheckStep = 'index' | 'packs' | 'data' | 'snapshots';

export interface CheckProgress {
  step: CheckStep;
  done: number;
  total: number;
}

export interface CheckOptions {
  /** Read every pack whole and check every blob in it (slow: reads the whole repository). */
  readData: boolean;
  onProgress?: (progress: CheckProgress) => void;
}

export interface CheckProblem {
  /** The backup it makes unrestorable, by UUID; null for one that harms no backup by itself. */
  backup: string | null;
  message: string;
}

export interface CheckReport {
  /** Snapshot records in the repository. */
  snapshots: number;
  /** Packs the index names. */
  packs: number;
  /** Distinct blobs the index names. */
  blobs: number;
  problems: CheckProblem[];
  /** Backups that cannot be restored in full, by UUID, sorted. */
  damagedBackups: string[];
  /** Packs in the store that no index names (a killed backup's; prune removes them): no problem. */
  strayPacks: number;
  /** Bytes of packs read (with `readData`). */
  bytesRead: number;
}

/** What is wrong under one tree, at most this many things (each backup's report stays short). */
const REASONS_PER_TREE = 20;

interface Copy {
  pack: string;
  line: BlobLine;
}

export async function checkRepository(store: RepositoryStore, options: CheckOptions): Promise<CheckReport> {
  const progress = (step: CheckStep, done: number, total: number) =>
    options.onProgress?.({ step, done, total });
  const problems: CheckProblem[] = [];
  const general = (message: string) => problems.push({ backup: null, message });

  const [packObjects, indexObjects, snapshotObjects] = await Promise.all([
    store.list('packs/'),
    store.list('index/'),
    store.list('snapshots/'),
  ]);
  const listed = new Map(packObjects.map((o) => [o.key.slice(o.key.lastIndexOf('/') + 1), o.bytes]));

  // The index: every copy of every blob, every pack with the size it should have.
  const copies = new Map<string, Copy[]>();
  const packs = new Map<string, number>();
  const damagedIndexes: string[] = [];
  progress('index', 0, indexObjects.length);
  for (const [n, object] of indexObjects.entries()) {
    try {
      for (const entry of parseIndex(object.key, await store.get(object.key))) {
        const bytes = packs.get(entry.id);
        if (bytes === undefined) packs.set(entry.id, entry.bytes);
        else if (bytes !== entry.bytes)
          general(`the index gives pack ${entry.id} two sizes (${bytes} and ${entry.bytes} bytes)`);
        for (const line of entry.blobs) {
          const list = copies.get(line[0]);
          if (list === undefined) copies.set(line[0], [{ pack: entry.id, line }]);
          else if (!list.some((copy) => copy.pack === entry.id)) list.push({ pack: entry.id, line });
        }
      }
    } catch (error) {
      if (error instanceof RepositoryMissing) continue; // replaced by a prune meanwhile
      if (!(error instanceof DamagedRepository)) throw error;
      damagedIndexes.push(object.key);
      general(`${error.message}: the repository cannot be opened until it is repaired`);
    }
    progress('index', n + 1, indexObjects.length);
  }

  // Packs: there, and the size the index says.
  const badPacks = new Map<string, string>();
  const packIds = [...packs.keys()].sort();
  progress('packs', 0, packIds.length);
  for (const [n, id] of packIds.entries()) {
    const stored = listed.get(id);
    const indexed = packs.get(id)!;
    if (stored === undefined) {
      badPacks.set(id, `pack ${id} is missing`);
      general(`pack ${id}, which the index names, is missing`);
    } else if (stored !== indexed) {
      general(`pack ${id} holds ${stored} bytes, not the ${indexed} the index says`);
      if (!options.readData) badPacks.set(id, `pack ${id} has the wrong size`);
    }
    progress('packs', n + 1, packIds.length);
  }
  const strayPacks = [...listed.keys()].filter((id) => !packs.has(id)).length;

  // Data: each pack read whole, one at a time; every blob in it checked.
  const badCopies = new Map<string, string>(); // `${blob}@${pack}` → what is wrong with it
  let bytesRead = 0;
  if (options.readData) {
    const inPack = new Map<string, BlobLine[]>();
    for (const list of copies.values())
      for (const copy of list) {
        const lines = inPack.get(copy.pack);
        if (lines === undefined) inPack.set(copy.pack, [copy.line]);
        else lines.push(copy.line);
      }
    const present = packIds.filter((id) => !badPacks.has(id));
    progress('data', 0, present.length);
    for (const [n, id] of present.entries()) {
      const data = await store.get(packKey(id)).catch((error: unknown) => {
        if (!(error instanceof RepositoryMissing)) throw error;
        badPacks.set(id, `pack ${id} is missing`);
        general(`pack ${id}, which the index names, is missing`);
        return null;
      });
      if (data !== null) {
        bytesRead += data.length;
        await checkPack(id, data, inPack.get(id) ?? [], general, badCopies);
      }
      progress('data', n + 1, present.length);
    }
  }

  // What each copy of a blob is worth: null when intact (or not read), else what is wrong.
  const fault = (id: string, copy: Copy): string | null =>
    badPacks.get(copy.pack) ?? badCopies.get(`${id}@${copy.pack}`) ?? null;
  for (const [id, list] of copies) {
    if (list.length < 2) continue;
    const faults = list.map((copy) => fault(id, copy));
    if (faults.some((f) => f === null))
      for (const [i, f] of faults.entries())
        if (f !== null)
          general(`blob ${id} has an intact copy, but not in pack ${list[i]!.pack} (${f}); prune drops one`);
  }

  // Snapshots: each record, each tree once; what is wrong under a tree is traced to every
  // snapshot that holds it.
  const trees = new TreeChecker(store, copies, fault);
  const backups = snapshotObjects.map((o) => o.key.slice('snapshots/'.length)).sort();
  const damaged = new Set<string>();
  progress('snapshots', 0, backups.length);
  for (const [n, backup] of backups.entries()) {
    const reasons: string[] = [];
    try {
      const record = parseSnapshot(backup, await store.get(snapshotKey(backup)));
      reasons.push(...(await trees.damageOf(record.tree, '')));
    } catch (error) {
      if (!(error instanceof DamagedRepository || error instanceof RepositoryMissing)) throw error;
      reasons.push(error.message);
    }
    if (damagedIndexes.length > 0)
      reasons.push(`the index is damaged (${damagedIndexes.join(', ')}): the repository cannot be opened`);
    if (reasons.length > 0) {
      damaged.add(backup);
      for (const reason of reasons) problems.push({ backup, message: reason });
    }
    progress('snapshots', n + 1, backups.length);
  }

  return {
    snapshots: backups.length,
    packs: packs.size,
    blobs: copies.size,
    problems,
    damagedBackups: [...damaged].sort(),
    strayPacks,
    bytesRead,
  };
}

/** Checks one pack's bytes: its id, its header against the index, every blob the index puts in it. */
async function checkPack(
  id: string,
  data: Buffer,
  indexed: BlobLine[],
  general: (message: string) => void,
  badCopies: Map<string, string>,
): Promise<void> {
  if (createHash('sha256').update(data).digest('hex') !== id)
    general(`pack ${id} is damaged: its content does not match its id`);
  let header: Map<string, BlobLine> | null = null;
  try {
    header = new Map(parsePackHeader(id, data).map((line) => [line[0], line]));
  } catch (error) {
    if (!(error instanceof DamagedRepository)) throw error;
    general(error.message);
  }
  for (const line of indexed) {
    const [blob, , offset, length] = line;
    if (header !== null) {
      const own = header.get(blob);
      if (own === undefined)
        general(`pack ${id}'s own header does not list blob ${blob}, which the index puts in it`);
      else if (own.some((value, i) => value !== line[i]))
        general(`pack ${id}'s own header and the index disagree on blob ${blob}`);
    }
    try {
      await checkBlob(blob, locationOf(id, line), data.subarray(offset, offset + length));
    } catch (error) {
      if (!(error instanceof DamagedRepository)) throw error;
      badCopies.set(`${blob}@${id}`, error.message);
    }
  }
}

function locationOf(pack: string, line: BlobLine): BlobLocation {
  const [, kind, offset, length, raw, compression] = line;
  return { pack, kind: kind === 1 ? 'tree' : 'data', offset, length, raw, compressed: compression === 1 };
}

function kindOf(line: BlobLine): BlobKind {
  return line[1] === 1 ? 'tree' : 'data';
}

/** Reads each tree once, and says what is wrong under it (itself, its files, its subtrees). */
class TreeChecker {
  private readonly seen = new Map<string, Promise<string[]>>();

  constructor(
    private readonly store: RepositoryStore,
    private readonly copies: Map<string, Copy[]>,
    private readonly fault: (id: string, copy: Copy) => string | null,
  ) {}

  /** What is wrong under tree `id` (reached at `rel` the first time), at most REASONS_PER_TREE. */
  damageOf(id: string, rel: string): Promise<string[]> {
    let damage = this.seen.get(id);
    if (damage === undefined) {
      damage = this.walk(id, rel);
      this.seen.set(id, damage);
    }
    return damage;
  }

  private async walk(id: string, rel: string): Promise<string[]> {
    const where = rel === '' ? 'the root directory' : rel.slice(0, -1);
    const reasons = new Set<string>();
    const add = (reason: string) => {
      if (reasons.size < REASONS_PER_TREE) reasons.add(reason);
    };
    let content: Buffer;
    try {
      content = await this.read(id);
    } catch (error) {
      if (!(error instanceof DamagedRepository)) throw error;
      return [`${where}: ${error.message}`];
    }
    let entries;
    try {
      entries = decodeTree(id, content).entries;
    } catch (error) {
      if (!(error instanceof DamagedRepository)) throw error;
      return [`${where}: ${error.message}`];
    }
    for (const node of entries) {
      const path = rel + node.name;
      if (node.type === 'dir') {
        for (const reason of await this.damageOf(node.tree, `${path}/`)) add(reason);
        continue;
      }
      let total = 0;
      let known = true;
      for (const chunk of node.chunks) {
        const there = (this.copies.get(chunk) ?? []).filter((copy) => kindOf(copy.line) === 'data');
        if (there.length === 0) {
          add(`${path}: chunk ${chunk} is in no pack of the index`);
          known = false;
          continue;
        }
        total += there[0]!.line[4];
        const faults = there.map((copy) => this.fault(chunk, copy));
        if (!faults.includes(null)) add(`${path}: chunk ${chunk}: ${faults[0]!}`);
      }
      if (known && total !== node.size)
        add(`${path}: its chunks hold ${total} bytes, not the ${node.size} it should`);
    }
    return [...reasons];
  }

  /** A tree blob's content from a copy that reads intact. */
  private async read(id: string): Promise<Buffer> {
    const there = (this.copies.get(id) ?? []).filter((copy) => kindOf(copy.line) === 'tree');
    if (there.length === 0) throw new DamagedRepository(`tree ${id} is in no pack of the index`, id);
    let failure = '';
    for (const copy of there) {
      const fault = this.fault(id, copy);
      if (fault !== null) {
        failure = fault;
        continue;
      }
      const where = locationOf(copy.pack, copy.line);
      try {
        return await checkBlob(
          id,
          where,
          await this.store.getRange(packKey(copy.pack), where.offset, where.length),
        );
      } catch (error) {
        if (error instanceof RepositoryMissing) failure = `pack ${copy.pack} is missing`;
        else if (error instanceof DamagedRepository) failure = error.message;
        else throw error;
      }
    }
    throw new DamagedRepository(`tree ${id}: ${failure}`, id);
  }
}
