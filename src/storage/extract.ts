/**
 * Extracts a backup (.tar.gz) into a fresh, empty directory.
 *
 * Only regular files and directories are ever created; links, devices and other kinds are reported
 * in `skipped`. Entry paths are confined to the destination, the disk limit and the free space are
 * enforced while data streams in, and any damage to the gzip or tar data fails the whole restore.
 */
import { createHash } from 'node:crypto';
import { createReadStream, constants as fsc } from 'node:fs';
import { lstat, open, statfs, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import {
  ArchiveError,
  type ArchiveFailure,
  type ExtractLimits,
  type ExtractReport,
  type Progress,
  type SkippedEntry,
  shownPath,
} from './archive.types.ts';
import { DirectoryRoot } from './directory-root.ts';

/** Bytes charged for every created file or directory, on top of its content. */
export const ENTRY_COST = 4096;
const FREE_SPACE_RESERVE = 64 * 1024 * 1024;
const PROGRESS_INTERVAL_MS = 250;
const MAX_COMPONENT_BYTES = 255;
/** Longest entry path, counted as the archive writes it (not where it is staged on disk). */
const MAX_PATH_BYTES = 4096;
const MAX_SKIPPED_LISTED = 1000;
const WRITE_FLAGS = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW;
const DIR_FLAGS = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;

type EntryKind = 'file' | 'directory' | SkippedEntry['kind'];

const KINDS: Record<string, EntryKind> = {
  File: 'file',
  OldFile: 'file',
  ContiguousFile: 'file',
  Directory: 'directory',
  GNUDumpDir: 'directory',
  SymbolicLink: 'symlink',
  Link: 'hardlink',
  CharacterDevice: 'character-device',
  BlockDevice: 'block-device',
  FIFO: 'fifo',
};

export async function extractArchive(
  archivePath: string,
  destination: string,
  limits: ExtractLimits,
  onProgress?: (p: Progress) => void,
): Promise<ExtractReport> {
  const budget = await diskBudget(destination, limits.maxBytes);
  limits.signal?.throwIfAborted();
  const root = await DirectoryRoot.open(destination);
  try {
    const extraction = new Extraction(root, budget, onProgress);
    const archiveSha256 = await readArchive(archivePath, extraction, limits.signal);
    return { ...(await extraction.finish()), archiveSha256 };
  } finally {
    await root.close();
  }
}

/** Maps an entry path to a path relative to the destination ('' = the destination itself). */
function relativeEntryPath(raw: string): string {
  if (raw.includes('\0')) throw new ArchiveError('unsafe-path', 'entry path contains a NUL byte', raw);
  const parts = raw.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..'))
    throw new ArchiveError('unsafe-path', `entry path ${shownPath(raw)} leaves the volume`, raw);
  const rel = parts.join('/');
  if (
    parts.some((part) => Buffer.byteLength(part) > MAX_COMPONENT_BYTES) ||
    Buffer.byteLength(rel) > MAX_PATH_BYTES
  ) {
    throw new ArchiveError('name-too-long', `entry path ${shownPath(raw)} is too long`, raw);
  }
  return rel;
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
  private lastProgress = Date.now();
  private lastParent: string | null = null;

  constructor(
    private readonly root: DirectoryRoot,
    private readonly budget: Budget,
    private readonly onProgress?: (p: Progress) => void,
  ) {}

  /** Handles one entry, including those the parser discards itself (unknown types, huge headers). */
  async entry(entry: ReadEntry, cancelled: Promise<never>): Promise<void> {
    if (entry.meta) throw new ArchiveError('name-too-long', 'an extended header is over 1 MiB', entry.path);
    if (!Number.isSafeInteger(entry.size) || entry.size < 0)
      throw corrupt(`invalid size for ${shownPath(entry.path)}`);
    const rel = relativeEntryPath(entry.path);
    const kind = KINDS[entry.type] ?? 'other';
    if (kind === 'file' && rel !== '') return this.writeFile(rel, entry, cancelled);
    entry.resume(); // drain whatever body the entry has; it is never written
    if (kind === 'directory') return rel === '' ? undefined : this.makeDirectory(rel, entry);
    this.charge(entry.size);
    const reason =
      rel === ''
        ? 'targets the volume root'
        : kind === 'other'
          ? `unsupported type ${entry.type}`
          : undefined;
    this.skip(rel || entry.path, kind === 'file' ? 'other' : kind, reason);
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

  private async writeFile(rel: string, entry: ReadEntry, cancelled: Promise<never>): Promise<void> {
    this.charge(ENTRY_COST);
    if (this.used + entry.size > this.budget.limit) throw this.overLimit(rel);
    const handle = await this.createFile(rel);
    try {
      await readBody(entry, cancelled, async (chunk) => {
        this.charge(chunk.length, rel);
        await writeFully(handle, chunk);
        this.report.bytes += chunk.length;
        this.progress();
      });
      await handle.chmod((entry.mode ?? 0o644) & 0o777);
      const mtime = validDate(entry.mtime);
      if (mtime) await handle.utimes(validDate(entry.atime) ?? mtime, mtime);
    } catch (err) {
      throw fsFailure(err, rel);
    } finally {
      await handle.close();
    }
    this.report.files += 1;
    this.progress();
  }

  private async createFile(rel: string): Promise<FileHandle> {
    try {
      await this.ensureDirectory(path.posix.dirname(rel));
    } catch (err) {
      throw fsFailure(err, rel);
    }
    return this.root.at(rel, async (target) => {
      try {
        return await open(target, WRITE_FLAGS, 0o600);
      } catch (err) {
        // EACCES: an earlier copy of this path was read-only (only matters when not running as root).
        const existing = await lstat(target).catch(() => null);
        if (errorCode(err) !== 'EACCES' || !existing?.isFile()) throw fsFailure(err, rel);
        await unlink(target);
        return open(target, WRITE_FLAGS, 0o600);
      }
    });
  }

  private async makeDirectory(rel: string, entry: ReadEntry): Promise<void> {
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
    const now = Date.now();
    if (!final && now - this.lastProgress < PROGRESS_INTERVAL_MS) return;
    this.lastProgress = now;
    this.onProgress?.({ files: this.report.files, bytes: this.report.bytes });
  }
}

/**
 * Streams the archive through gunzip and the tar parser, handing entries to `extraction` one at a
 * time. The parser is held back while an entry is being written, so memory stays flat. Resolves
 * once every entry has been handled; rejects with the first failure, after every stream and file
 * handle has been released.
 */
/** Streams the archive through the extraction; resolves with the SHA-256 of the archive file. */
async function readArchive(
  archivePath: string,
  extraction: Extraction,
  signal?: AbortSignal,
): Promise<string> {
  const input = createReadStream(archivePath);
  // The archive's checksum is taken on the same read: one pass over the file, not two.
  const hash = createHash('sha256');
  input.on('data', (chunk) => hash.update(chunk));
  const gunzip = createGunzip({ chunkSize: 64 * 1024 });
  const parser = new Parser({ zstd: false, brotli: false });
  const outcome: { failure: Error | null } = { failure: null };
  let cancel: (err: unknown) => void = () => {};
  const cancelled = new Promise<never>((_resolve, reject) => (cancel = reject));
  cancelled.catch(() => {});
  let work = Promise.resolve();
  let tarBytes = 0;
  let entries = 0;
  let sawNullBlock = false;

  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      tarBytes += chunk.length;
      if (parser.write(chunk)) done();
      else parser.once('drain', () => done());
    },
    final(done) {
      parser.once('end', () => done());
      parser.end();
    },
  });
  const fail = (err: unknown): void => {
    if (outcome.failure !== null) return;
    outcome.failure = err instanceof Error ? err : new Error(String(err));
    cancel(outcome.failure);
    sink.destroy(outcome.failure);
  };
  const enqueue = (task: () => unknown): void => {
    work = work.then(() => (outcome.failure === null ? task() : undefined)).then(undefined, fail);
  };

  const abort = (): void => fail(signal?.reason ?? new Error('the extraction was aborted'));
  signal?.addEventListener('abort', abort, { once: true });
  input.on('error', (err) => fail(inputFailure(err)));
  gunzip.on('error', (err) => fail(corrupt(`gzip data is damaged: ${err.message}`)));
  for (const event of ['entry', 'ignoredEntry']) {
    parser.on(event, (entry: ReadEntry) => {
      entries += 1;
      enqueue(() => extraction.entry(entry, cancelled));
    });
  }
  for (const event of ['nullBlock', 'eof']) parser.on(event, () => (sawNullBlock = true));
  parser.on('warn', (code: string, message: string) => {
    // A tar made only of end-of-archive blocks (or nothing at all) is a valid, empty archive.
    const empty = code === 'TAR_BAD_ARCHIVE' && entries === 0 && (tarBytes === 0 || sawNullBlock);
    if (!empty || !/unrecognized archive format/i.test(message))
      fail(corrupt(`tar data is damaged: ${message}`));
  });
  parser.on('error', (err: Error) => fail(corrupt(`tar data is damaged: ${err.message}`)));

  try {
    await pipeline(input, gunzip, sink);
  } catch (err) {
    fail(err);
  }
  await work;
  signal?.removeEventListener('abort', abort);
  if (!input.closed) await new Promise<void>((resolve) => input.once('close', () => resolve()));
  if (outcome.failure !== null) throw outcome.failure;
  return hash.digest('hex');
}

/**
 * Hands an entry's content to `onChunk` one chunk at a time, pausing the entry (and so the parser)
 * until each chunk has been written. Settles once the last chunk is written, or when cancelled.
 */
function readBody(
  entry: ReadEntry,
  cancelled: Promise<never>,
  onChunk: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  const body = new Promise<void>((resolve, reject) => {
    let pending = Promise.resolve();
    entry.on('data', (chunk: Buffer) => {
      entry.pause();
      pending = onChunk(chunk);
      pending.then(() => entry.resume(), reject);
    });
    entry.once('end', () => pending.then(resolve, reject));
  });
  return Promise.race([body, cancelled]);
}

async function writeFully(handle: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
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

function inputFailure(err: unknown): unknown {
  return errorCode(err) === 'ENOENT' ? new ArchiveError('not-found', 'the archive file does not exist') : err;
}

function corrupt(message: string): ArchiveError {
  return new ArchiveError('corrupt', message);
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
