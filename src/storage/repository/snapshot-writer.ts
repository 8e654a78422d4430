/**
 * Takes a snapshot of a server volume into a repository: walks the volume as the archive writer
 * does (regular files and directories only, every entry reached through its open parent without
 * following a symlink, what the ignore rules name left out), cuts each file into chunks, stores
 * the chunks the repository lacks, and writes one tree blob per directory and the snapshot record.
 *
 * Incremental: a file whose size, mtime and inode are those it had in the parent snapshot is not
 * read again; its chunk list is taken from the parent's tree (or from the tree the server's last
 * restore wrote, when that came after the parent). `full` reads every file regardless
 * (a change that kept the metadata is then found too). Runs in a worker thread
 * (snapshot-backup-work.ts): reads and chunking are synchronous there, compression and
 * uploads run on libuv's pool meanwhile.
 */
import { closeSync, fstatSync, lstatSync, openSync, readSync, constants as fsc, type Stats } from 'node:fs';
import { PROGRESS_INTERVAL_MS, type Progress } from '../archive/archive.types.ts';
import { ReadWarmer } from '../read-warmer.ts';
import { isGone, VolumeDir } from '../volume-dir.ts';
import { Chunker } from './chunker.ts';
import { loadRestoreBase } from './restored-tree.ts';
import { blobId, type BlobWriter, type Repository, type SnapshotRecord } from './repository.ts';
import { byName, type DirectoryNode, type FileNode, type Tree, type TreeNode } from './tree.ts';

const FILE_FLAGS = fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK;
/** How far the warmer reads ahead of the walk (page cache, not this process's memory). */
const WARM_AHEAD = 32 * 1024 * 1024;

export interface SnapshotOptions {
  /** The backup the snapshot is of (its record is stored under this UUID). */
  backupId: string;
  /** The server's last successful snapshot, to skip unchanged files; null for none. */
  parent: string | null;
  /** Read every file, even those the parent says are unchanged. */
  full?: boolean;
  /** Whether a path (relative, `/`-separated) is left out. */
  exclude?: (relativePath: string, isDirectory: boolean) => boolean;
  onProgress?: (progress: Progress) => void;
  progressIntervalMs?: number;
  signal?: AbortSignal;
  /** The time the record gives (now, unless set). */
  now?: () => Date;
}

export interface SnapshotResult {
  record: SnapshotRecord;
  /** SHA-256 of the stored record: the backup's checksum. */
  sha256: string;
}

/** Walks `volume` into a new snapshot of `repository`. */
export async function takeSnapshot(
  volume: string,
  repository: Repository,
  options: SnapshotOptions,
): Promise<SnapshotResult> {
  const parent = options.parent === null ? null : await loadParent(repository, options.parent);
  // A full read compares with nothing: the restore base is not even asked for.
  const compared = options.full === true ? null : await comparedTree(repository, parent);
  const writer = repository.writer();
  const walk = new SnapshotWalk(repository, writer, options);
  const root = await VolumeDir.open(volume);
  let tree: string;
  try {
    const rootTree = compared === null ? null : await repository.readTree(compared).catch(() => null);
    tree = await walk.directory(root, '', rootTree);
  } catch (error) {
    await writer.abandon();
    throw error;
  } finally {
    await root.close();
  }
  const totals = await writer.finish();
  walk.report(true);
  const record: SnapshotRecord = {
    v: 1,
    backup: options.backupId,
    time: (options.now?.() ?? new Date()).toISOString(),
    tree,
    parent: parent === null ? null : options.parent,
    files: walk.files,
    directories: walk.directories,
    bytes: walk.bytes,
    added: { blobs: totals.blobs, bytes: totals.storedBytes },
  };
  const sha256 = await repository.saveSnapshot(record);
  return { record, sha256 };
}

/**
 * The tree the volume is compared with: the parent's, or the restore base's when a restore has
 * written the volume since the parent was taken (restored-tree.ts).
 */
async function comparedTree(repository: Repository, parent: SnapshotRecord | null): Promise<string | null> {
  const base = await loadRestoreBase(repository.store).catch(() => null);
  if (base !== null && (parent === null || Date.parse(base.time) > Date.parse(parent.time))) return base.tree;
  return parent?.tree ?? null;
}

/** The parent's record, or null when it cannot be read (the backup then reads every file). */
async function loadParent(repository: Repository, backupId: string): Promise<SnapshotRecord | null> {
  try {
    return (await repository.loadSnapshot(backupId)).record;
  } catch {
    return null;
  }
}

class SnapshotWalk {
  files = 0;
  directories = 0;
  bytes = 0;
  private readonly chunker = new Chunker();
  /** One read window for the whole walk: twice the largest chunk. */
  private readonly window: Buffer;
  private readonly warmer: ReadWarmer;
  private readonly exclude: (relativePath: string, isDirectory: boolean) => boolean;
  private last = Date.now();

  constructor(
    private readonly repository: Repository,
    private readonly writer: BlobWriter,
    private readonly options: SnapshotOptions,
  ) {
    this.window = this.chunker.window(2 * this.chunker.sizes.max);
    this.warmer = new ReadWarmer({ aheadBytes: WARM_AHEAD, reading: 2 });
    this.exclude = options.exclude ?? (() => false);
  }

  /** Stores the tree of `dir` (and everything under it); returns its id. */
  async directory(dir: VolumeDir, prefix: string, previous: Tree | null): Promise<string> {
    const listed: { name: string; isDirectory: boolean }[] = [];
    for await (const entry of dir.entries()) {
      const isDirectory = entry.isDirectory();
      if (!isDirectory && !entry.isFile() && !isUnknownType(entry)) continue; // links, sockets, devices
      if (this.exclude(prefix + entry.name, isDirectory)) continue;
      listed.push({ name: entry.name, isDirectory });
    }
    listed.sort(byName);
    const before = new Map((previous?.entries ?? []).map((node) => [node.name, node]));
    // Files the parent holds unchanged are known before any is read: the warmer skips them.
    const kept = listed.map(({ name, isDirectory }) =>
      isDirectory ? null : this.unchangedNode(dir, name, before),
    );
    const frame = this.warmer.enter(dir, {
      length: listed.length,
      name: (i) => listed[i]!.name,
      step: (i) => (listed[i]!.isDirectory ? 'directory' : kept[i] === null ? 'read' : 'skip'),
    });
    const nodes: TreeNode[] = [];
    try {
      for (const [i, { name, isDirectory }] of listed.entries()) {
        this.options.signal?.throwIfAborted();
        frame.reached(i);
        const unchanged = kept[i];
        if (unchanged != null) {
          this.counted(unchanged.size);
          nodes.push(unchanged);
          continue;
        }
        const node = isDirectory
          ? await this.subdirectory(dir, name, prefix, before.get(name))
          : await this.file(dir, name, prefix, before.get(name));
        if (node !== null) nodes.push(node);
      }
    } finally {
      frame.close();
    }
    return this.writer.addTree({ entries: nodes });
  }

  /**
   * The node of a file the parent snapshot holds as it is now (size, mtime, inode, every chunk
   * still stored), with its mode as it is now; null when it must be read (or is gone, or is no
   * longer a file: reading finds that out).
   */
  private unchangedNode(dir: VolumeDir, name: string, before: Map<string, TreeNode>): FileNode | null {
    const previous = before.get(name);
    if (previous?.type !== 'file' || this.options.full === true) return null;
    const stats = ignoreGone(() => lstatSync(dir.child(name)));
    if (stats === null || !stats.isFile() || !this.unchanged(previous, stats)) return null;
    return { ...previous, name, mode: stats.mode & 0o7777 };
  }

  private async subdirectory(
    parent: VolumeDir,
    name: string,
    prefix: string,
    previous: TreeNode | undefined,
  ): Promise<DirectoryNode | null> {
    const dir = await parent.subdirectory(name);
    if (dir === null) return null; // removed, or replaced by something else, while we walked
    try {
      const stats = await dir.stat();
      const previousTree =
        previous?.type === 'dir' ? await this.repository.readTree(previous.tree).catch(() => null) : null;
      const tree = await this.directory(dir, `${prefix}${name}/`, previousTree);
      this.directories += 1;
      return { name, type: 'dir', mode: stats.mode & 0o7777, mtime: stats.mtimeMs, tree };
    } finally {
      await dir.close();
    }
  }

  private async file(
    parent: VolumeDir,
    name: string,
    prefix: string,
    previous: TreeNode | undefined,
  ): Promise<TreeNode | null> {
    const target = parent.child(name);
    const fd = ignoreGone(() => openSync(target, FILE_FLAGS));
    if (fd === null) return null;
    let stats: Stats;
    let chunks: string[] = [];
    let size = 0;
    try {
      stats = fstatSync(fd);
      if (stats.isFile()) ({ chunks, size } = await this.chunks(fd, stats.size));
    } finally {
      closeSync(fd);
    }
    // The listing did not give the type (or it changed since): a directory is walked as one.
    if (stats.isDirectory()) return this.subdirectory(parent, name, prefix, previous);
    if (!stats.isFile()) return null;
    this.files += 1;
    this.report();
    return {
      name,
      type: 'file',
      mode: stats.mode & 0o7777,
      mtime: stats.mtimeMs,
      size,
      inode: stats.ino,
      chunks,
    };
  }

  /** Whether the file is the one the parent snapshot holds, and every chunk of it is still stored. */
  private unchanged(previous: FileNode, stats: Stats): boolean {
    return (
      previous.size === stats.size &&
      previous.mtime === stats.mtimeMs &&
      previous.inode === stats.ino &&
      previous.chunks.every((id) => this.repository.has(id))
    );
  }

  private counted(size: number): void {
    this.files += 1;
    this.bytes += size;
    this.report();
  }

  /**
   * Reads a file to its end, cutting and storing its chunks. The size recorded is what was read:
   * a file written to while we read it is kept as it was read, and its new mtime makes the next
   * backup read it again. A read that comes short once the file's size as `fstat` gave it
   * (`statSize`) is read is taken as the end, without the read that would return nothing: one
   * system call fewer a file (a million small files: 2.5 s); a file that grew is read on.
   */
  private async chunks(fd: number, statSize: number): Promise<{ chunks: string[]; size: number }> {
    const window = this.window;
    const chunks: string[] = [];
    let start = 0;
    let end = 0;
    let size = 0;
    let readTotal = 0;
    let eof = false;
    for (;;) {
      while (!eof && end < window.length) {
        const wanted = window.length - end;
        const read = readSync(fd, window, end, wanted, null);
        end += read;
        readTotal += read;
        if (read === 0 || (read < wanted && readTotal === statSize)) eof = true;
      }
      while (start < end) {
        const length = this.chunker.cut(window, start, end, eof);
        if (length < 0) break;
        const chunk = window.subarray(start, start + length);
        const id = blobId(chunk);
        chunks.push(id);
        await this.writer.add('data', chunk, id);
        start += length;
        size += length;
        this.bytes += length;
        this.report();
      }
      if (eof && start === end) return { chunks, size };
      window.copyWithin(0, start, end);
      end -= start;
      start = 0;
    }
  }

  report(final = false): void {
    const { onProgress } = this.options;
    if (onProgress === undefined) return;
    const now = Date.now();
    if (!final && now - this.last < (this.options.progressIntervalMs ?? PROGRESS_INTERVAL_MS)) return;
    this.last = now;
    onProgress({ files: this.files, bytes: this.bytes });
  }
}

function isUnknownType(entry: {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}): boolean {
  const e = entry as unknown as Record<string, () => boolean>;
  return !(
    entry.isFile() ||
    entry.isDirectory() ||
    entry.isSymbolicLink() ||
    e.isSocket!() ||
    e.isFIFO!() ||
    e.isCharacterDevice!() ||
    e.isBlockDevice!()
  );
}

function ignoreGone<T>(call: () => T): T | null {
  try {
    return call();
  } catch (error) {
    if (isGone(error)) return null;
    throw error;
  }
}
