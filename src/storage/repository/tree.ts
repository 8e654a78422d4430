/**
 * A snapshot's file tree: one tree blob per directory, listing its entries by name with their
 * metadata; a file names its content as a list of chunk ids, a directory names its own tree blob
 * by id. A tree's id is the SHA-256 of its bytes, so an unchanged directory is stored once, and a
 * snapshot's root tree id commits to every byte of the backup.
 *
 * Trees are read from storage, which an attacker who can write to it may have shaped: every tree
 * is checked here before anything uses it (names, kinds, sizes, ids), and a restore judges each
 * path again as it judges an archive's.
 */
import { compareNames } from '../../shared/compare-names.ts';

export interface FileNode {
  name: string;
  type: 'file';
  /** Permission bits (0o7777 at most). */
  mode: number;
  /** Last modification, milliseconds since the epoch (fractional). */
  mtime: number;
  size: number;
  /** The inode it had when read: with size and mtime, how a later backup knows it is unchanged. */
  inode: number;
  /** Chunk ids (SHA-256, hex), in order; their raw lengths add up to `size`. */
  chunks: string[];
}

export interface DirectoryNode {
  name: string;
  type: 'dir';
  mode: number;
  mtime: number;
  /** The id of the directory's own tree blob. */
  tree: string;
}

export type TreeNode = FileNode | DirectoryNode;

export interface Tree {
  /** Sorted by name (byte order of UTF-8), no two alike. */
  entries: TreeNode[];
}

/** Something stored in a repository is not what Aerie wrote: damaged, or made by someone else. */
export class DamagedRepository extends Error {
  constructor(
    message: string,
    /** The object at fault (a pack key, a blob id, a snapshot). */
    readonly object: string,
  ) {
    super(message);
    this.name = 'DamagedRepository';
  }
}

const ID = /^[0-9a-f]{64}$/;
const MAX_NAME_BYTES = 255;

export function isId(value: unknown): value is string {
  return typeof value === 'string' && ID.test(value);
}

/** Sorts entries as trees keep them: by the bytes of their names. */
export function byName(a: { name: string }, b: { name: string }): number {
  return compareNames(a.name, b.name);
}

export function encodeTree(tree: Tree): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, entries: tree.entries }));
}

/**
 * Parses and checks a tree blob: every name a single path component (no `/`, NUL, `.` or `..`,
 * at most 255 bytes), sorted and unique; known kinds only; numbers that are numbers; ids that are
 * ids. What fails is a DamagedRepository naming the tree.
 */
export function decodeTree(id: string, bytes: Buffer): Tree {
  const damaged = (why: string) => new DamagedRepository(`tree ${id} is damaged: ${why}`, id);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw damaged('it is not JSON');
  }
  const entries = (parsed as { entries?: unknown } | null)?.entries;
  if (!Array.isArray(entries)) throw damaged('it has no entries');
  let previous: string | null = null;
  for (const entry of entries as unknown[]) {
    const node = (entry ?? {}) as Record<string, unknown>;
    const name = node.name;
    if (typeof name !== 'string' || !validName(name)) throw damaged(`an entry has an unusable name`);
    if (previous !== null && byName({ name: previous }, { name }) >= 0)
      throw damaged('its entries are not sorted, or repeat a name');
    previous = name;
    if (!naturalNumber(node.mode) || node.mode > 0o7777) throw damaged(`${name} has an invalid mode`);
    if (typeof node.mtime !== 'number' || !Number.isFinite(node.mtime))
      throw damaged(`${name} has an invalid time`);
    if (node.type === 'file') {
      if (!naturalNumber(node.size) || !naturalNumber(node.inode))
        throw damaged(`${name} has an invalid size`);
      if (!Array.isArray(node.chunks) || !(node.chunks as unknown[]).every(isId))
        throw damaged(`${name} has invalid chunks`);
    } else if (node.type === 'dir') {
      if (!isId(node.tree)) throw damaged(`${name} names no tree`);
    } else {
      throw damaged(`${name} is of an unknown kind`);
    }
  }
  return { entries: entries as TreeNode[] };
}

function validName(name: string): boolean {
  return (
    name !== '' &&
    name !== '.' &&
    name !== '..' &&
    !name.includes('/') &&
    !name.includes('\0') &&
    Buffer.byteLength(name) <= MAX_NAME_BYTES
  );
}

function naturalNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
