/**
 * The one reader of backup archives (a gzip-compressed tar). A restore (extract.ts) and
 * `aerie backup import` (verify-archive.ts) both read archives through it, so they judge an
 * archive alike: same verdict, same ArchiveError reason and message.
 *
 * It reads the file once, gunzips it, parses the tar with node-tar's Parser and checks every entry
 * before handing it on: no `..` component, no name too long, nothing that contradicts an earlier
 * entry (a path under a file, a file over a directory), intact and complete gzip and tar data,
 * exactly one layer of gzip. An archive of no entries at all is valid.
 */
import { createReadStream } from 'node:fs';
import { Writable, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, type ZlibOptions } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { ArchiveError, type SkippedEntry, shownPath } from './archive.types.ts';

const MAX_COMPONENT_BYTES = 255;
/** Longest entry path, counted as the archive writes it (not where it is staged on disk). */
const MAX_PATH_BYTES = 4096;
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
/**
 * The archive is read and gunzipped in 512 KiB chunks, and gunzip (on libuv's pool) may work up to
 * four chunks ahead of the parser. Each chunk is a round trip between the thread and the pool
 * (about 50 µs here); with the 64 KiB chunks used before, the 42,000 round trips of a 1.2 GiB
 * archive cost more than a second of the restore thread's time, and a restore took 1.3 to 1.6×
 * as long (BENCHMARKS.md, "Restoring a backup"). 1 and 2 MiB chunks were no faster, and held more.
 */
const READ_CHUNK = 512 * 1024;
const GUNZIP_CHUNK = 512 * 1024;
const GUNZIP_AHEAD = 2 * 1024 * 1024;

export type EntryKind = 'file' | 'directory' | SkippedEntry['kind'];

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

/** One entry of an archive that has passed every check. */
export interface ArchiveEntry {
  /** Path inside the volume: '/'-separated, no leading '/' or './'; '' is the volume itself. */
  readonly rel: string;
  readonly kind: EntryKind;
  /** node-tar's entry: the path as written, type, size, mode and times. */
  readonly tar: ReadEntry;
  /**
   * Hands the entry's content to `onChunk` one chunk at a time, holding the reader back until
   * each chunk is handled (until its promise settles, when it returns one). Content not read is
   * skipped once the handler settles.
   */
  readonly readBody: (onChunk: (chunk: Buffer) => Promise<void> | void) => Promise<void>;
}

export interface ReadOptions {
  /** Stops the read at once; it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Sees every byte of the archive file as it is read (to hash it on the same pass). */
  onFileData?: (chunk: Buffer) => void;
  /** Sees every byte of the tar, as the tar parser is given it. */
  onTarData?: (chunk: Buffer) => void;
  /**
   * What turns the file's bytes into the tar: gunzip unless given (a stage that does the same
   * and notes more, gzip-members.ts), or 'none' when the input is a stretch of tar already
   * inflated and checked (archive-path.thread.ts).
   */
  inflate?: Transform | 'none';
}

/**
 * Reads `archive` (a file path, or a stream of the archive's bytes) to its end, calling `onEntry`
 * for each entry in order, one at a time (the next entry waits until the promise `onEntry`
 * returns has settled). Resolves once every entry has been handled; rejects with the first
 * failure (an ArchiveError when the archive is at fault, or whatever `onEntry` threw) after every
 * stream has been released.
 */
export async function readArchive(
  archive: string | Readable,
  onEntry: (entry: ArchiveEntry) => Promise<void> | void,
  options: ReadOptions = {},
): Promise<void> {
  const { signal, onFileData, onTarData } = options;
  const input =
    typeof archive === 'string' ? createReadStream(archive, { highWaterMark: READ_CHUNK }) : archive;
  let head: Buffer | null = null; // the file's first bytes, to say what it is if not gzip
  input.on('data', (data: string | Buffer) => {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data; // a Buffer: no encoding is set
    head ??= Buffer.from(chunk.subarray(0, 512));
    onFileData?.(chunk);
  });
  // The options reach the stream too (ZlibOptions does not list them).
  const gunzip =
    options.inflate === 'none'
      ? null
      : (options.inflate ??
        createGunzip({
          chunkSize: GUNZIP_CHUNK,
          readableHighWaterMark: GUNZIP_AHEAD,
        } as ZlibOptions));
  // Not strict: warnings are judged below (an empty archive warns, and is valid). zstd and brotli
  // off: the tar inside the gzip stream is read as it is, never decompressed again.
  const parser = new Parser({ zstd: false, brotli: false });
  const paths = new EntryPaths();
  const outcome: { failure: Error | null } = { failure: null };
  let cancel: (err: unknown) => void = () => {};
  const cancelled = new Promise<never>((_resolve, reject) => (cancel = reject));
  cancelled.catch(() => {});
  let work = Promise.resolve();
  let tarBytes = 0;
  let entries = 0;
  let sawNullBlock = false;
  let held: Buffer[] | null = []; // the tar's first bytes, held until they show what it is

  const fail = (err: unknown): void => {
    if (outcome.failure !== null) return;
    outcome.failure = err instanceof Error ? err : new Error(String(err));
    cancel(outcome.failure);
    sink.destroy(outcome.failure);
  };
  /** Writes the bytes held back to the parser, unless they show a second layer of compression. */
  const release = (): Buffer | null => {
    const first = Buffer.concat(held ?? []);
    held = null;
    const nested = nestedCompression(first);
    if (nested === null) return first;
    fail(corrupt(nested));
    return null;
  };
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      onTarData?.(chunk);
      tarBytes += chunk.length;
      if (held !== null) {
        held.push(chunk);
        if (tarBytes < ZSTD_MAGIC.length) return done();
        const first = release();
        if (first === null) return done();
        chunk = first;
      }
      if (parser.write(chunk)) done();
      else parser.once('drain', () => done());
    },
    final(done) {
      if (held !== null) {
        const first = release();
        if (first === null) return done();
        if (first.length > 0) parser.write(first);
      }
      parser.once('end', () => done());
      parser.end();
    },
  });
  const enqueue = (task: () => unknown): void => {
    work = work.then(() => (outcome.failure === null ? task() : undefined)).then(undefined, fail);
  };

  const abort = (): void => fail(signal?.reason ?? new Error('the archive read was aborted'));
  signal?.addEventListener('abort', abort, { once: true });
  input.on('error', (err: Error) => fail(inputFailure(err)));
  gunzip?.on('error', (err) => fail(corrupt(notGzip(head) ?? `gzip data is damaged: ${err.message}`)));
  // 'ignoredEntry': entries the parser discards itself (extended headers over 1 MiB).
  for (const event of ['entry', 'ignoredEntry']) {
    parser.on(event, (tar: ReadEntry) => {
      entries += 1;
      enqueue(async () => {
        const entry = checkedEntry(tar, paths, cancelled);
        await onEntry(entry);
        tar.resume(); // skips whatever content the handler did not read
      });
    });
  }
  for (const event of ['nullBlock', 'eof']) parser.on(event, () => (sawNullBlock = true));
  parser.on('warn', (code: string, message: string) => {
    // A tar made only of end-of-archive blocks (or of nothing at all) is a valid, empty archive.
    const empty = code === 'TAR_BAD_ARCHIVE' && entries === 0 && (tarBytes === 0 || sawNullBlock);
    if (!empty || !/unrecognized archive format/i.test(message))
      fail(corrupt(`tar data is damaged: ${message}`));
  });
  parser.on('error', (err: Error) => fail(corrupt(`tar data is damaged: ${err.message}`)));

  try {
    await (gunzip === null ? pipeline(input, sink) : pipeline(input, gunzip, sink));
  } catch (err) {
    fail(err);
  }
  await work;
  signal?.removeEventListener('abort', abort);
  if (!input.closed) await new Promise<void>((resolve) => input.once('close', () => resolve()));
  if (outcome.failure !== null) throw outcome.failure;
}

/** Applies every check to one parsed entry; throws the ArchiveError of the first that fails. */
function checkedEntry(tar: ReadEntry, paths: EntryPaths, cancelled: Promise<never>): ArchiveEntry {
  if (tar.meta) throw new ArchiveError('name-too-long', 'an extended header is over 1 MiB', tar.path);
  if (!Number.isSafeInteger(tar.size) || tar.size < 0)
    throw corrupt(`invalid size for ${shownPath(tar.path)}`);
  const rel = checkEntryPath(tar.path);
  const kind = KINDS[tar.type] ?? 'other';
  if (rel !== '' && kind === 'file') paths.file(rel);
  if (rel !== '' && kind === 'directory') paths.directory(rel);
  return { rel, kind, tar, readBody: (onChunk) => readBody(tar, cancelled, onChunk) };
}

/**
 * Maps an entry path to a path relative to the volume ('' = the volume itself): empty and `.`
 * components go (so a leading '/' or './' does), and the path is refused (ArchiveError
 * 'unsafe-path') when it holds a NUL byte or a `..` component, or ('name-too-long') when a component
 * is over 255 bytes or the rest over 4096. Exported so that every source of restored entries (an
 * archive, a snapshot) judges a path by this one rule.
 */
export function checkEntryPath(raw: string): string {
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

/**
 * What the archive's files and directories make of each path so far, to refuse an entry that
 * contradicts an earlier one before anything is written: a path under a file, a file where a
 * directory is (named, or made for an entry under it), a directory where a file is (ArchiveError
 * 'conflict'). A later file over a file replaces it; links and other skipped entries create
 * nothing and claim nothing, so they are not told. Paths are those checkEntryPath returns, never
 * '' (the volume itself). Holds one map entry per file and directory (about 80 bytes each).
 * Exported so that another source of restored entries (a snapshot) refuses what an archive would.
 */
export class EntryPaths {
  private readonly kinds = new Map<string, 'file' | 'directory'>();
  /** The last directory known to be one, with its parents: most entries share their parent. */
  private lastDirectory = '';

  file(rel: string): void {
    this.directories(parentOf(rel), rel);
    if (this.kinds.get(rel) === 'directory') throw conflict(rel);
    this.kinds.set(rel, 'file');
  }

  directory(rel: string): void {
    if (this.kinds.get(rel) === 'file') throw conflict(rel);
    this.directories(rel, rel);
  }

  /** mkdir -p of `dir` on behalf of the entry `rel`. */
  private directories(dir: string, rel: string): void {
    if (dir === '' || dir === this.lastDirectory) return;
    for (let at = dir; at !== ''; at = parentOf(at)) {
      const kind = this.kinds.get(at);
      if (kind === 'directory') break; // and so are all its parents
      if (kind === 'file') throw conflict(rel);
      this.kinds.set(at, 'directory');
    }
    this.lastDirectory = dir;
  }
}

function parentOf(rel: string): string {
  const slash = rel.lastIndexOf('/');
  return slash === -1 ? '' : rel.slice(0, slash);
}

/**
 * Hands an entry's content to `onChunk` one chunk at a time. A handler that returns a promise
 * pauses the entry (and so the parser) until it settles; one that returns nothing has handled
 * the chunk already, and the entry flows on. Settles once the last chunk is handled, at the first
 * failure (no chunk is handed on after it), or when cancelled.
 */
function readBody(
  entry: ReadEntry,
  cancelled: Promise<never>,
  onChunk: (chunk: Buffer) => Promise<void> | void,
): Promise<void> {
  const body = new Promise<void>((resolve, reject) => {
    let pending: Promise<void> | undefined;
    let failed = false;
    const failWith = (err: unknown): void => {
      failed = true;
      entry.pause();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    entry.on('data', (chunk: Buffer) => {
      if (failed) return;
      let handled: Promise<void> | void;
      try {
        handled = onChunk(chunk);
      } catch (err) {
        failWith(err);
        return;
      }
      if (handled === undefined) return;
      entry.pause();
      pending = handled.then(() => entry.resume(), failWith);
    });
    entry.once('end', () => (pending ?? Promise.resolve()).then(resolve, reject));
  });
  return Promise.race([body, cancelled]);
}

/** Why a file gunzip refused is not a backup, when its first bytes say so; null if they do not. */
function notGzip(head: Buffer | null): string | null {
  if (head === null || head.length === 0) return 'the archive file is empty';
  if (startsWith(head, ZSTD_MAGIC)) return 'the archive is compressed with zstd, not gzip';
  if (head.subarray(257, 262).toString('latin1') === 'ustar')
    return 'the archive is a tar without gzip compression';
  return null;
}

/** Why the data inside the gzip stream is not a tar but compressed again; null if it is not. */
function nestedCompression(first: Buffer): string | null {
  if (startsWith(first, GZIP_MAGIC)) return 'the archive is compressed twice (gzip inside gzip)';
  if (startsWith(first, ZSTD_MAGIC)) return 'the gzip stream holds zstd-compressed data, not a tar';
  return null;
}

function startsWith(data: Buffer, magic: Buffer): boolean {
  return data.length >= magic.length && data.subarray(0, magic.length).equals(magic);
}

function conflict(rel: string): ArchiveError {
  return new ArchiveError('conflict', `${shownPath(rel)} conflicts with another entry of the archive`, rel);
}

function inputFailure(err: unknown): unknown {
  return (err as NodeJS.ErrnoException | null)?.code === 'ENOENT'
    ? new ArchiveError('not-found', 'the archive file does not exist')
    : err;
}

function corrupt(message: string): ArchiveError {
  return new ArchiveError('corrupt', message);
}
