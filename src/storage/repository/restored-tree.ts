/**
 * The tree a restore wrote, kept so that the server's next snapshot need not read it again.
 *
 * A restore writes every file anew: new inodes, and the mtime the backup gave, as the filesystem
 * stores it. Against the server's last snapshot (the undo backup, say) none of them looks
 * unchanged, so the next snapshot would read the whole volume although it holds exactly the
 * backup's content. While a restore writes a snapshot's files, RestoredTree builds the backup's
 * tree again with each file's inode and mtime as written (its chunks are the backup's), one
 * directory at a time as the walk leaves it; the restore job stores it as the repository's
 * restore base once the swap has put it in place (saveRestoreBase), and the next
 * snapshot compares the volume with it when it is newer than the snapshot's parent.
 *
 * Nothing here is trusted more than a parent snapshot is: a file counts as unchanged only when
 * its size, mtime and inode are those recorded and every chunk is still stored; a base whose
 * trees a prune reclaimed (no snapshot names them) reads as none, and every file is read.
 */
import type { BlobWriter } from './repository.ts';
import { RepositoryMissing, type RepositoryStore } from './repository-store.ts';
import { isId, type DirectoryNode, type FileNode, type TreeNode } from './tree.ts';

const RESTORE_BASE_KEY = 'restore-base';

/** What a restore stored for the next snapshot to compare with (the object `restore-base`). */
export interface RestoreBase {
  v: 1;
  /** The backup the restore wrote. */
  backup: string;
  /** When the restored tree was swapped in. */
  time: string;
  /** Root tree id: the backup's tree, with the inodes and mtimes the restore left. */
  tree: string;
}

interface OpenDirectory {
  /** Its path with a trailing `/` ('' for the root). */
  prefix: string;
  node: DirectoryNode | null;
  entries: TreeNode[];
}

export class RestoredTree {
  /** The directories the walk is inside, the root first. */
  private readonly open: OpenDirectory[] = [{ prefix: '', node: null, entries: [] }];

  constructor(private readonly writer: BlobWriter) {}

  /**
   * Tells of the next entry of the snapshot, in the order its trees are walked (a directory, then
   * what it holds). Directories the walk has left are closed (their trees stored) first.
   */
  async entered(rel: string, node: TreeNode): Promise<void> {
    await this.closeUntil(rel);
    if (node.type === 'dir') this.open.push({ prefix: `${rel}/`, node, entries: [] });
  }

  /** The file at `rel` (the last entry told of) was written with this inode and mtime. */
  written(node: FileNode, inode: number, mtime: number): void {
    this.open[this.open.length - 1]!.entries.push({ ...node, inode, mtime });
  }

  /** Stores the trees still open; returns the root tree's id. Then `writer.finish()` stores them. */
  async finish(): Promise<string> {
    await this.closeUntil(null);
    return this.store(this.open[0]!.entries);
  }

  /** Closes every open directory `rel` is not inside (all but the root, for null). */
  private async closeUntil(rel: string | null): Promise<void> {
    for (;;) {
      const top = this.open[this.open.length - 1]!;
      if (top.node === null || (rel !== null && rel.startsWith(top.prefix))) return;
      this.open.pop();
      const tree = await this.store(top.entries);
      this.open[this.open.length - 1]!.entries.push({ ...top.node, tree });
    }
  }

  private store(entries: TreeNode[]): Promise<string> {
    return this.writer.addTree({ entries });
  }
}

/** Stores what a restore wrote as the repository's restore base, replacing the last one. */
export async function saveRestoreBase(store: RepositoryStore, base: RestoreBase): Promise<void> {
  await store.sync();
  await store.put(RESTORE_BASE_KEY, [Buffer.from(JSON.stringify(base))]);
  await store.sync();
}

/**
 * The repository's restore base, or null when there is none or it cannot be used: it only spares
 * reads, so one that is not what Aerie wrote is ignored (the snapshot then reads every file).
 */
export async function loadRestoreBase(store: RepositoryStore): Promise<RestoreBase | null> {
  let bytes: Buffer;
  try {
    bytes = await store.get(RESTORE_BASE_KEY);
  } catch (error) {
    if (error instanceof RepositoryMissing) return null;
    throw error;
  }
  try {
    const base = JSON.parse(bytes.toString('utf8')) as Partial<RestoreBase> | null;
    const usable =
      base?.v === 1 &&
      isId(base.tree) &&
      typeof base.backup === 'string' &&
      typeof base.time === 'string' &&
      Number.isFinite(Date.parse(base.time));
    return usable ? (base as RestoreBase) : null;
  } catch {
    return null;
  }
}
