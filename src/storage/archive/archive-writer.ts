/**
 * Writes a server volume into a gzip-compressed tar (a backup).
 *
 * Only regular files and directories are archived; symlinks, sockets, FIFOs and devices are left
 * out and never followed. The volume belongs to the game server, which may change it while we read,
 * so every directory and file is opened with O_NOFOLLOW and reached through the already-open parent
 * directory (see VolumeDir): swapping a path component for a symlink mid-walk cannot make us read
 * anything outside the volume. Memory stays flat: the walk is depth-first and streamed.
 *
 * The tar stream is compressed on every core (parallel-gzip.ts): the archive is a series of gzip
 * members, one per MiB of tar, which every gzip reader reads as one stream. Its SHA-256 and size
 * are taken from the bytes as they are written.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, constants as fsc, type Dirent, type Stats } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { Header, Pax } from 'tar';
import { PROGRESS_INTERVAL_MS, type Progress } from './archive.types.ts';
import { parallelGzip, type ParallelGzipOptions } from './parallel-gzip.ts';
import { isGone, VolumeDir } from '../volume-dir.ts';

const FILE_FLAGS = fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK;
const READ_CHUNK = 64 * 1024;
const BLOCK = 512;
/** Zeros: the padding after a file's content, and the end-of-archive marker. */
const ZERO_BLOCK = Buffer.alloc(2 * BLOCK);

export interface ArchiveSummary {
  files: number;
  bytes: number;
  sha256: string;
  archiveBytes: number;
}

/**
 * Where the compressed bytes go: `stream` receives them; `finish` makes them the archive once all
 * are written; `discard` removes whatever was written when the archive fails.
 */
export interface ArchiveSink {
  /**
   * Each chunk's memory is reused once its write callback has run, unless `keepsChunks` says the
   * stream may still read a chunk after that (it buffers it for a reader of its own).
   */
  stream: Writable;
  /** The stream holds on to chunks past their write callback: it is given copies. */
  keepsChunks?: boolean;
  finish(): Promise<void>;
  discard(): Promise<void>;
}

/** Says whether a path (relative to the volume, `/`-separated, no leading slash) is left out. */
export type Exclude = (relativePath: string, isDirectory: boolean) => boolean;

/**
 * `exclude` is asked about every entry; what it excludes is left out, and so is everything under
 * an excluded directory. `output` is a file path, or a sink of another kind (an upload).
 */
export async function createArchive(
  volume: string,
  output: string | ArchiveSink,
  onProgress?: (p: Progress) => void,
  exclude: Exclude = () => false,
  compression: ParallelGzipOptions = {},
  /** Stops the archive: it rejects, and the partial file is removed. */
  signal?: AbortSignal,
  /** The least time between two progress reports. */
  progressIntervalMs = PROGRESS_INTERVAL_MS,
): Promise<ArchiveSummary> {
  const written = new WrittenTally();
  const walk = new Walk(onProgress, exclude, written, progressIntervalMs);
  const root = await VolumeDir.open(volume);
  const blocks = tarStream(root, walk);
  const sink = typeof output === 'string' ? fileSink(output) : output;
  const gzip = parallelGzip(compression);
  // Settles when the sink's stream has taken everything or failed (a reader of its own, such as an
  // upload, is the sink's to wait for); its errors reach the writes below.
  const streamEnded = finished(sink.stream, { readable: false });
  streamEnded.catch(() => {});
  try {
    // The tar generator feeds the compressor directly (it copies each chunk before asking for the
    // next, so the walk reads every file through one buffer), and each member is hashed, written
    // and handed back before the next is asked for.
    await pipeline(
      blocks,
      gzip,
      async (members: AsyncIterable<Buffer>) => {
        for await (const member of members) {
          signal?.throwIfAborted();
          written.add(member);
          await write(sink.stream, sink.keepsChunks === true ? Buffer.from(member) : member);
          gzip.release(member);
        }
        sink.stream.end();
        await streamEnded;
      },
      ...(signal ? [{ signal }] : []),
    );
    walk.report(true); // every byte is written: what is left is the sink's to finish (an upload's end)
    await sink.finish();
  } catch (err) {
    await blocks.return(undefined); // closes whatever directories and file the walk still holds
    await gzip.threadsEnded();
    sink.stream.destroy(); // no more writes: a file is closed, an upload ends unfinished
    await sink.discard();
    throw err;
  } finally {
    await root.close();
  }
  walk.report(true);
  return { files: walk.files, bytes: walk.bytes, sha256: written.hex(), archiveBytes: written.length };
}

/** The walk's state: what it has archived so far, what it leaves out, where it reads. */
class Walk {
  files = 0;
  bytes = 0;
  /**
   * Where file content is read: one buffer for the whole walk, since the compressor copies each
   * chunk before it asks for the next (a buffer per read would be garbage the collector frees late).
   */
  readonly readBuffer = Buffer.allocUnsafe(READ_CHUNK);
  private last = Date.now();

  constructor(
    private readonly onProgress: ((p: Progress) => void) | undefined,
    readonly exclude: Exclude,
    private readonly written: { length: number },
    private readonly intervalMs: number,
  ) {}

  report(final = false): void {
    if (this.onProgress === undefined) return;
    const now = Date.now();
    if (!final && now - this.last < this.intervalMs) return;
    this.last = now;
    this.onProgress({ files: this.files, bytes: this.bytes, archiveBytes: this.written.length });
  }
}

/** The compressed bytes written so far: their count and SHA-256. */
class WrittenTally {
  length = 0;
  private readonly hash = createHash('sha256');

  add(chunk: Buffer): void {
    this.hash.update(chunk);
    this.length += chunk.length;
  }

  hex(): string {
    return this.hash.digest('hex');
  }
}

/**
 * Writes `chunk`, resolving once the stream has run its write callback. Rejects with the error
 * the stream failed with (an upload's, say) if it fails or is destroyed meanwhile: a destroyed
 * stream may never call back.
 */
function write(stream: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error?: Error | null) =>
      reject(stream.errored ?? error ?? new Error('the archive stream closed early'));
    stream.once('close', failed);
    stream.write(chunk, (error) => {
      stream.off('close', failed);
      if (error) failed(error);
      else resolve();
    });
  });
}

async function* tarStream(root: VolumeDir, walk: Walk): AsyncGenerator<Buffer> {
  yield* directoryBlocks(root, '', walk);
  yield ZERO_BLOCK; // end-of-archive marker
}

async function* directoryBlocks(dir: VolumeDir, prefix: string, walk: Walk): AsyncGenerator<Buffer> {
  for await (const entry of dir.entries()) {
    const rel = prefix + entry.name;
    if (walk.exclude(rel, entry.isDirectory())) continue;
    if (entry.isDirectory()) {
      yield* subdirectoryBlocks(dir, entry.name, rel, walk);
    } else if (entry.isFile() || isUnknownType(entry)) {
      yield* fileBlocks(dir, entry.name, rel, walk);
    }
    // Symlinks, sockets, FIFOs and devices are left out.
  }
}

async function* subdirectoryBlocks(
  parent: VolumeDir,
  name: string,
  rel: string,
  walk: Walk,
): AsyncGenerator<Buffer> {
  const dir = await parent.subdirectory(name);
  if (dir === null) return;
  try {
    yield headerBlocks(`${rel}/`, 'Directory', await dir.stat(), 0);
    yield* directoryBlocks(dir, `${rel}/`, walk);
  } finally {
    await dir.close();
  }
}

async function* fileBlocks(parent: VolumeDir, name: string, rel: string, walk: Walk): AsyncGenerator<Buffer> {
  const handle = await openFile(parent.child(name));
  if (handle === null) return;
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) {
      yield* subdirectoryBlocks(parent, name, rel, walk); // the listing did not give the type
      return;
    }
    if (!stats.isFile()) return;
    yield headerBlocks(rel, 'File', stats, stats.size);
    yield* contentBlocks(handle, stats.size, walk);
    walk.files += 1;
    walk.report();
  } finally {
    await handle.close();
  }
}

/**
 * Exactly `size` bytes of content plus padding to a whole block. A file that shrinks while we
 * read it is padded with zeros and one that grows is cut at `size`, so the archive stays valid.
 */
async function* contentBlocks(handle: FileHandle, size: number, walk: Walk): AsyncGenerator<Buffer> {
  let position = 0;
  while (position < size) {
    const buffer = walk.readBuffer.subarray(0, Math.min(READ_CHUNK, size - position));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    const chunk = bytesRead === 0 ? buffer.fill(0) : buffer.subarray(0, bytesRead);
    position += chunk.length;
    walk.bytes += chunk.length;
    walk.report();
    yield chunk;
  }
  const padding = (BLOCK - (size % BLOCK)) % BLOCK;
  if (padding > 0) yield ZERO_BLOCK.subarray(0, padding);
}

async function openFile(target: string): Promise<FileHandle | null> {
  try {
    return await open(target, FILE_FLAGS);
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}

/** The header block for an entry, preceded by a pax header when a field does not fit ustar. */
function headerBlocks(tarPath: string, type: 'File' | 'Directory', stats: Stats, size: number): Buffer {
  // The whole second the file was last changed in, as tar counts it: `stats.mtime` is rounded to
  // the millisecond, which puts a time 0.5 ms before a second into the next one.
  const mtime = new Date(Math.floor(stats.mtimeMs / 1000) * 1000);
  const fields = { path: tarPath, type, mode: stats.mode & 0o7777, size, mtime };
  const header = new Header(fields);
  const needsPax = header.encode();
  if (!header.block) throw new Error(`could not encode the tar header of ${tarPath}`);
  return needsPax ? Buffer.concat([new Pax(fields).encode(), header.block]) : header.block;
}

function isUnknownType(entry: Dirent): boolean {
  return !(
    entry.isFile() ||
    entry.isDirectory() ||
    entry.isSymbolicLink() ||
    entry.isFIFO() ||
    entry.isSocket() ||
    entry.isCharacterDevice() ||
    entry.isBlockDevice()
  );
}

/** Writes `<output>.partial`, synced and renamed to `output` once complete. */
function fileSink(output: string): ArchiveSink {
  const partial = `${output}.partial`;
  const stream = createWriteStream(partial, { mode: 0o600 });
  return {
    stream,
    finish: async () => {
      await syncFile(partial);
      await rename(partial, output);
    },
    discard: async () => {
      if (!stream.closed) await new Promise<void>((resolve) => stream.once('close', () => resolve()));
      await rm(partial, { force: true });
    },
  };
}

async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
