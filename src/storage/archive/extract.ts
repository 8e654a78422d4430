/**
 * Extracts a backup into a fresh, empty directory: a .tar.gz (extractArchive), or entries handed on
 * one at a time by any other source (extractEntries), such as a snapshot's tree.
 *
 * Only regular files and directories are ever created; links, devices and other kinds are reported
 * in `skipped`. An archive is read by archive-reader.ts, which refuses unsafe or too long paths,
 * contradictory entries and damaged data exactly as `aerie backup import` does; another source
 * judges its paths with the same checkEntryPath and EntryPaths. This file writes what it is handed,
 * within the disk limit and the free space, enforced while data streams in. Files are written with
 * synchronous calls: a restore extracts in a worker thread of its own (stageRestoreInThread),
 * never on the thread that answers HTTP.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fstatSync,
  futimesSync,
  lstatSync,
  openSync,
  unlinkSync,
  writeSync,
  constants as fsc,
} from 'node:fs';
import { open, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { checkEntryPath, readArchive, type ArchiveEntry, type EntryKind } from './archive-reader.ts';
import {
  ArchiveError,
  type ArchiveFailure,
  type ExtractLimits,
  type ExtractReport,
  type Progress,
  type SkippedEntry,
  PROGRESS_INTERVAL_MS,
  shownPath,
} from './archive.types.ts';
import { DirectoryRoot } from '../directory-root.ts';

/** Bytes charged for every created file or directory, on top of its content. */
export const ENTRY_COST = 4096;
const FREE_SPACE_RESERVE = 64 * 1024 * 1024;
const MAX_SKIPPED_LISTED = 1000;
const WRITE_FLAGS = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW;
const DIR_FLAGS = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;

/** One entry to extract, whatever it was read from. */
export interface ExtractEntry {
  /**
   * Path inside the volume, as checkEntryPath returns it ('' is the volume itself), and already
   * told to the source's EntryPaths when it is a file or a directory.
   */
  readonly rel: string;
  readonly kind: EntryKind;
  /** Declared size of the content, charged to the disk budget before any of it is written. */
  readonly size: number;
  /** Permission bits (only 0o777 are applied); undefined: 0o644 for a file, 0o755 for a directory. */
  readonly mode: number | undefined;
  /** Left as the clock has it when undefined (or not a valid date). */
  readonly mtime: Date | undefined;
  /** The mtime when undefined. */
  readonly atime: Date | undefined;
  /**
   * Hands the content to `onChunk` one chunk at a time, waiting for each chunk to be handled (for
   * its promise to settle, when it returns one); rejects, and hands on no further chunk, when
   * `onChunk` fails. Content longer than `size` is charged as it comes, and refused once over the
   * budget; content shorter than `size` is for the source to refuse.
   */
  readonly readBody: (onChunk: (chunk: Buffer) => Promise<void> | void) => Promise<void>;
  /** Skips content that will not be written (of a directory, or of an entry not restored). */
  readonly discard: () => void;
  /** For kind 'other': what the entry was, named in the reason it was skipped. */
  readonly typeLabel?: string;
  /** The path as the source wrote it, when it differs from `rel`: shown for a skipped entry at ''. */
  readonly sourcePath?: string;
  /** Told, for a file written, the inode and mtime (ms) it has once its content and time are set. */
  readonly written?: (inode: number, mtimeMs: number) => void;
}

/**
 * What a source of entries is given: `onEntry` writes one entry (or reports it skipped), and the
 * source waits for its promise before handing on the next; `onRead` counts bytes the source read
 * from storage (archive bytes, compressed chunks), reported as `archiveBytes` in the progress.
 */
export type EntryFeed = (
  onEntry: (entry: ExtractEntry) => Promise<void>,
  onRead: (bytes: number) => void,
) => Promise<void>;

/**
 * Extracts into `destination` (an empty directory) every entry `feed` hands on, within `limits`:
 * resolves with the report once `feed` has resolved and every directory has its mode and mtime;
 * rejects with the first failure (an ArchiveError when an entry is at fault, or whatever `feed`
 * threw). What was already written stays: the caller removes `destination`. The source honours
 * `limits.signal` itself (this only checks it between entries and chunks).
 */
export async function extractEntries(
  feed: EntryFeed,
  destination: string,
  limits: ExtractLimits,
  onProgress?: (p: Progress) => void,
): Promise<ExtractReport> {
  const budget = await diskBudget(destination, limits.maxBytes);
  limits.signal?.throwIfAborted();
  const root = await DirectoryRoot.open(destination);
  try {
    const extraction = new Extraction(
      root,
      budget,
      limits.signal,
      onProgress,
      limits.progressIntervalMs,
      limits.only,
    );
    await feed(
      (entry) => extraction.entry(entry),
      (bytes) => extraction.read(bytes),
    );
    return await extraction.finish();
  } finally {
    await root.close();
  }
}

/**
 * Extracts the archive `archive` (a file path, or a stream of its bytes) as extractEntries does,
 * its entries read and checked by readArchive; the report adds the archive's SHA-256.
 */
export async function extractArchive(
  archive: string | Readable,
  destination: string,
  limits: ExtractLimits,
  onProgress?: (p: Progress) => void,
): Promise<ExtractReport> {
  // The archive's checksum is taken on the same read: one pass over the file, not two.
  const hash = createHash('sha256');
  const report = await extractEntries(
    (onEntry, onRead) =>
      readArchive(archive, (entry) => onEntry(fromArchive(entry)), {
        ...(limits.signal ? { signal: limits.signal } : {}),
        onFileData: (chunk) => {
          hash.update(chunk);
          onRead(chunk.length);
        },
      }),
    destination,
    limits,
    onProgress,
  );
  return { ...report, archiveSha256: hash.digest('hex') };
}

/** An archive's entry as extraction takes it: node-tar's fields, its body read through the reader. */
export function fromArchive({ rel, kind, tar, readBody }: ArchiveEntry): ExtractEntry {
  return {
    rel,
    kind,
    size: tar.size,
    mode: tar.mode,
    mtime: tar.mtime,
    atime: tar.atime,
    readBody,
    discard: () => tar.resume(),
    typeLabel: tar.type,
    sourcePath: tar.path,
  };
}

interface Budget {
  limit: number;
  why: string;
}

async function diskBudget(destination: string, maxBytes: number | null): Promise<Budget> {
  const fsStats = await statfs(destination);
  const free = fsStats.bavail * fsStats.bsize - FREE_SPACE_RESERVE;
  if (maxBytes !== null && maxBytes <= free)
    return { limit: maxBytes, why: `the disk limit of ${maxBytes} bytes` };
  return { limit: free, why: `the free space (${Math.max(free, 0)} bytes usable)` };
}

/** The state of one extraction: what has been created, charged and skipped so far. */
class Extraction {
  private readonly report: ExtractReport = { files: 0, directories: 0, bytes: 0, skipped: [] };
  private readonly directoryMeta = new Map<string, { mode: number; mtime: Date | undefined }>();
  private used = 0;
  private archiveBytes = 0;
  private lastProgress = Date.now();
  private lastParent: string | null = null;

  constructor(
    private readonly root: DirectoryRoot,
    private readonly budget: Budget,
    private readonly signal: AbortSignal | undefined,
    private readonly onProgress?: (p: Progress) => void,
    private readonly progressIntervalMs = PROGRESS_INTERVAL_MS,
    private readonly only?: (rel: string) => boolean,
  ) {}

  /** Bytes the source read from storage so far (the archive's, compressed). */
  read(bytes: number): void {
    this.archiveBytes += bytes;
    this.progress();
  }

  /** Writes one entry the source has checked, or reports it skipped. */
  async entry(entry: ExtractEntry): Promise<void> {
    this.signal?.throwIfAborted();
    const { rel, kind } = entry;
    // Every path reaches the filesystem as it is, relative to the staging tree: one a source did
    // not normalize (a `..` above all) is refused here too, not only by the source's own checks.
    if (checkEntryPath(rel) !== rel)
      throw new ArchiveError('unsafe-path', `entry path ${shownPath(rel)} is not normalized`, rel);
    if (this.only !== undefined && rel !== '' && !this.only(rel)) return entry.discard(); // not chosen
    if (kind === 'file' && rel !== '') return this.writeFile(rel, entry);
    entry.discard(); // whatever body the entry has is never written
    if (kind === 'directory') return rel === '' ? undefined : this.makeDirectory(rel, entry);
    this.charge(entry.size);
    const reason =
      rel === ''
        ? 'targets the volume root'
        : kind === 'other' && entry.typeLabel !== undefined
          ? `unsupported type ${entry.typeLabel}`
          : undefined;
    this.skip(rel || (entry.sourcePath ?? rel), kind === 'file' ? 'other' : kind, reason);
  }

  async finish(): Promise<ExtractReport> {
    const deepestFirst = [...this.directoryMeta].sort(([a], [b]) => depth(b) - depth(a));
    for (const [rel, meta] of deepestFirst) {
      const handle = await this.root.at(rel, (target) => open(target, DIR_FLAGS));
      try {
        await handle.chmod(meta.mode);
        if (meta.mtime) await handle.utimes(meta.mtime, meta.mtime);
      } finally {
        await handle.close();
      }
    }
    this.progress(true);
    return this.report;
  }

  /**
   * Creates the file and writes its content with synchronous calls: extraction runs in a worker
   * thread (stageRestoreInThread), where they hold up only that thread, and they spare a round
   * trip through libuv's pool for every open, write, chmod, utimes and close.
   */
  private async writeFile(rel: string, entry: ExtractEntry): Promise<void> {
    this.charge(ENTRY_COST);
    if (this.used + entry.size > this.budget.limit) throw this.overLimit(rel);
    const fd = await this.createFile(rel);
    try {
      await entry.readBody((chunk) => {
        this.signal?.throwIfAborted();
        this.charge(chunk.length, rel);
        writeFully(fd, chunk);
        this.report.bytes += chunk.length;
        this.progress();
      });
      fchmodSync(fd, (entry.mode ?? 0o644) & 0o777);
      const mtime = validDate(entry.mtime);
      if (mtime) futimesSync(fd, validDate(entry.atime) ?? mtime, mtime);
      if (entry.written !== undefined) {
        const stats = fstatSync(fd);
        entry.written(stats.ino, stats.mtimeMs);
      }
    } catch (err) {
      throw fsFailure(err, rel);
    } finally {
      closeSync(fd);
    }
    this.report.files += 1;
    this.progress();
  }

  private async createFile(rel: string): Promise<number> {
    try {
      await this.ensureDirectory(path.posix.dirname(rel));
    } catch (err) {
      throw fsFailure(err, rel);
    }
    const target = this.root.direct(rel);
    if (target !== null) return openForWriting(target, rel);
    // `at` steps through leading directories; the path it gives is valid until `use` settles.
    return this.root.at(rel, (longTarget) => Promise.resolve(openForWriting(longTarget, rel)));
  }

  private async makeDirectory(rel: string, entry: ExtractEntry): Promise<void> {
    try {
      await this.ensureDirectory(rel, true);
    } catch (err) {
      throw fsFailure(err, rel);
    }
    const mode = ((entry.mode ?? 0o755) & 0o777) | 0o700;
    this.directoryMeta.set(rel, { mode, mtime: validDate(entry.mtime) });
  }

  /** mkdir -p, charging every directory it creates. */
  private async ensureDirectory(rel: string, force = false): Promise<void> {
    if (rel === '.' || rel === '' || (!force && rel === this.lastParent)) return;
    const created = await this.root.makeDirectories(rel, 0o755);
    this.lastParent = rel;
    if (created === 0) return;
    this.report.directories += created;
    this.charge(created * ENTRY_COST, rel);
  }

  private charge(bytes: number, rel?: string): void {
    this.used += bytes;
    if (this.used > this.budget.limit) throw this.overLimit(rel);
  }

  private overLimit(rel?: string): ArchiveError {
    return new ArchiveError('disk-limit', `the restored files would exceed ${this.budget.why}`, rel);
  }

  private skip(rel: string, kind: SkippedEntry['kind'], reason = `${kind} entries are not restored`): void {
    if (this.report.skipped.length < MAX_SKIPPED_LISTED) {
      this.report.skipped.push({ path: rel, kind, reason });
    } else {
      this.report.skippedOmitted = (this.report.skippedOmitted ?? 0) + 1;
    }
  }

  private progress(final = false): void {
    if (this.onProgress === undefined) return;
    const now = Date.now();
    if (!final && now - this.lastProgress < this.progressIntervalMs) return;
    this.lastProgress = now;
    this.onProgress({ files: this.report.files, bytes: this.report.bytes, archiveBytes: this.archiveBytes });
  }
}

/** Creates (or truncates) a regular file for writing, never through a symlink. */
function openForWriting(target: string, rel: string): number {
  try {
    return openSync(target, WRITE_FLAGS, 0o600);
  } catch (err) {
    // EACCES: an earlier copy of this path was read-only (only matters when not running as root).
    const existing = errorCode(err) === 'EACCES' ? lstatOrNull(target) : null;
    if (!existing?.isFile()) throw fsFailure(err, rel);
    unlinkSync(target);
    return openSync(target, WRITE_FLAGS, 0o600);
  }
}

function lstatOrNull(target: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(target);
  } catch {
    return null;
  }
}

function writeFully(fd: number, chunk: Buffer): void {
  let offset = 0;
  while (offset < chunk.length) offset += writeSync(fd, chunk, offset, chunk.length - offset);
}

/** Filesystem errors that say something about the archive rather than about the host. */
const FS_FAILURES: Record<string, [ArchiveFailure, string]> = {
  EEXIST: ['conflict', 'conflicts with another entry of the archive'],
  ENOTDIR: ['conflict', 'conflicts with another entry of the archive'],
  EISDIR: ['conflict', 'conflicts with another entry of the archive'],
  ELOOP: ['conflict', 'conflicts with another entry of the archive'],
  ENAMETOOLONG: ['name-too-long', 'is too long for the filesystem'],
  ENOSPC: ['disk-limit', 'does not fit: the filesystem is full'],
  EDQUOT: ['disk-limit', 'does not fit: the disk quota is exhausted'],
};

function fsFailure(err: unknown, rel: string): unknown {
  const known = FS_FAILURES[errorCode(err) ?? ''];
  return known ? new ArchiveError(known[0], `${shownPath(rel)} ${known[1]}`, rel) : err;
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function validDate(date: Date | undefined): Date | undefined {
  return date && Number.isFinite(date.getTime()) ? date : undefined;
}

function depth(rel: string): number {
  return rel === '' || rel === '.' ? 0 : rel.split('/').length;
}
