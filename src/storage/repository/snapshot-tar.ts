/**
 * A snapshot as a `.tar.gz`, streamed as it is made: the download of a snapshot backup, in the
 * very format of the archive backups (archive-writer.ts), so that whatever reads one reads the
 * other (GNU tar, gzip, a restore through archive-reader.ts).
 *
 * Each entry is written exactly as the archive writer writes it for the same file or directory:
 * the same header fields (path, type, permission bits, size, mtime cut to the whole second, and
 * nothing else: no owner, no time of now), a pax header in front when a field does not fit ustar,
 * content padded to a whole block, two zero blocks at the end. The entries come in the snapshot's
 * order (depth-first, by name, a directory before its content), so a snapshot gives the same
 * bytes every time it is downloaded; only the order can differ from an archive of the same
 * volume, which lists each directory as the file system does.
 *
 * The content is read through readSnapshot (chunks fetched ahead within a fixed budget, each
 * checked against its hash) and compressed by parallelGzip with the archive writer's settings, on
 * threads of its own: the calling thread (the one answering HTTP) only encodes headers and copies
 * bytes. Nothing waits for the whole tree and nothing is written to disk; memory stays bounded
 * whatever the size: the read-ahead budget, the compressor's blocks, and what the consumer has
 * not taken yet (nothing more is read while it has not).
 *
 * A chunk that is damaged or missing fails the stream with the DamagedRepository that names it.
 * The entry's header (and the content before the bad chunk) may have gone out by then: the
 * archive is left without its end and the response fails, so no reader takes it for a whole one.
 */
import { Readable } from 'node:stream';
import { answersRequests } from '../../shared/request-thread.ts';
import { parallelGzip } from '../archive/parallel-gzip.ts';
import { tarHeader } from '../archive/tar-header.ts';
import type { Repository } from './repository.ts';
import { readSnapshot } from './snapshot-reader.ts';
import { DamagedRepository } from './tree.ts';

const BLOCK = 512;
/** Zeros: the padding after a file's content, and the end-of-archive marker. */
const ZERO_BLOCK = Buffer.alloc(2 * BLOCK);
/**
 * Bytes the stream buffers for its consumer before it stops asking the compressor for more. A
 * member is up to about 1 MiB: one is buffered at a time, the next ones being compressed meanwhile.
 */
const HIGH_WATER_MARK = 64 * 1024;
/**
 * Chunks read ahead of the compressor, at most: compression is what a download waits on, so a
 * few MB keep it fed (a restore, which waits on storage, reads further ahead).
 */
const DOWNLOAD_AHEAD_BYTES = 8 * 1024 * 1024;

export interface SnapshotTarOptions {
  /** Stops the stream: it is destroyed with the signal's reason, and all it holds is released. */
  signal?: AbortSignal;
}

/**
 * The snapshot whose root tree is `treeId`, as a `.tar.gz` stream. It fails with a
 * DamagedRepository when a tree or chunk is damaged or missing. Destroying it (or aborting
 * `signal`) stops it at once: no read of the repository starts after that, and it emits `close`
 * once the compression threads have ended.
 */
export function snapshotTarGz(
  repository: Repository,
  treeId: string,
  options: SnapshotTarOptions = {},
): Readable {
  const stream = new SnapshotTarStream(repository, treeId);
  const { signal } = options;
  if (signal !== undefined) {
    const abort = () => stream.destroy(asError(signal.reason));
    if (signal.aborted) abort();
    else {
      signal.addEventListener('abort', abort, { once: true });
      stream.once('close', () => signal.removeEventListener('abort', abort));
    }
  }
  return stream;
}

/**
 * Pulls members while its consumer wants more (one at a time: `push` says when to stop), and
 * when destroyed stops the work below at its next step and waits for it to let go.
 */
class SnapshotTarStream extends Readable {
  private readonly stop = new AbortController();
  private readonly members: AsyncGenerator<Buffer, void, undefined>;
  private pumping = false;

  constructor(repository: Repository, treeId: string) {
    super({ highWaterMark: HIGH_WATER_MARK });
    this.members = snapshotTarGzMembers(repository, treeId, this.stop.signal);
  }

  override _read(): void {
    if (this.pumping) return;
    this.pumping = true;
    void this.pump();
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        const next = await this.members.next();
        if (this.destroyed) return;
        if (next.done === true) {
          this.push(null);
          return;
        }
        if (!this.push(next.value)) return;
      }
    } catch (error) {
      this.destroy(asError(error));
    } finally {
      this.pumping = false;
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stop.abort(error ?? new Error('the snapshot download was stopped'));
    // Settles once the generators have run their cleanup (after the step in hand, if any).
    this.members.return(undefined).then(
      () => callback(error),
      () => callback(error),
    );
  }
}

/**
 * The compressed archive, member by member (gzip members of about 1 MiB of tar each, which read
 * as one gzip stream). Each member is a copy of its own, the whole of its ArrayBuffer (a consumer
 * may transfer it to another thread, or hold it as long as it likes, in a socket's queue say).
 * Aborting `signal` fails it at its next step, and no read of the repository starts after that;
 * ending the iteration early stops the reads too. Either way the compression threads have ended
 * before it settles.
 */
export async function* snapshotTarGzMembers(
  repository: Repository,
  treeId: string,
  signal?: AbortSignal,
): AsyncGenerator<Buffer, void, undefined> {
  for await (const { member, release } of lentMembers(repository, treeId, signal)) {
    // A copy in memory of its own (never a slice of Node's shared pool).
    const own = new Uint8Array(member);
    release();
    yield Buffer.from(own.buffer, 0, own.length);
  }
}

/**
 * The members as the compressor made them, each lent: `release` hands its buffer back, to be
 * filled with a later block (no member is copied, and none is left for the garbage collector).
 * A consumer that writes a member out releases it once it is written.
 */
export async function* lentMembers(
  repository: Repository,
  treeId: string,
  signal?: AbortSignal,
): AsyncGenerator<{ member: Buffer; release: () => void }, void, undefined> {
  // The archive writer's settings (1 MiB members, level 6): the same tar gives the same bytes.
  // In a thread that answers no request (a download's), that thread compresses too: a
  // compression thread fewer.
  const gzip = parallelGzip({ compressHere: !answersRequests() });
  try {
    for await (const member of gzip(snapshotTar(repository, treeId, signal)))
      yield { member, release: () => gzip.release(member) };
  } finally {
    await gzip.threadsEnded();
  }
}

/**
 * The uncompressed tar, as the archive writer writes it: headers, content, padding, and the
 * end-of-archive marker. Chunks are handed on as they were read (the compressor copies them).
 */
export async function* snapshotTar(
  repository: Repository,
  treeId: string,
  signal?: AbortSignal,
): AsyncGenerator<Buffer, void, undefined> {
  const source = signal === undefined ? repository : stoppable(repository, signal);
  // A thread that answers no request (a download's process) reads into pooled buffers, each
  // chunk copied by the compressor before the next is asked for; from S3, where each read is a
  // request, it reads each run of chunks that lie one after another in a pack at once instead
  // (into buffers of their own, collected as it goes). A thread that answers requests reads into
  // buffers of their own, its decompression on libuv's pool.
  const pooled = !answersRequests() && repository.store.readsAreRequests !== true;
  const reading = { reuseBuffers: pooled, aheadBytes: DOWNLOAD_AHEAD_BYTES };
  for await (const entry of readSnapshot(source, treeId, reading)) {
    signal?.throwIfAborted();
    const { rel, node } = entry;
    if (node.type === 'dir') {
      yield tarHeader(`${rel}/`, 'Directory', node.mode, 0, node.mtime);
      continue;
    }
    yield tarHeader(rel, 'File', node.mode, node.size, node.mtime);
    let written = 0;
    for await (const chunk of entry.content()) {
      signal?.throwIfAborted();
      written += chunk.length;
      // readSnapshot checks each chunk's length against the index and their sum against the
      // size: more than the header announced would shift every later entry, so it is checked.
      if (written > node.size) break;
      yield chunk;
    }
    if (written !== node.size) {
      throw new DamagedRepository(`${rel}: its chunks do not hold the ${node.size} bytes it should`, rel);
    }
    const padding = (BLOCK - (node.size % BLOCK)) % BLOCK;
    if (padding > 0) yield ZERO_BLOCK.subarray(0, padding);
  }
  yield ZERO_BLOCK; // end-of-archive marker
}

/**
 * `repository`, whose blob reads (chunks, and trees: readTree reads through readBlob) fail once
 * `signal` is aborted (a rejected promise, as a failed read): the read-ahead of readSnapshot
 * starts none after that, wherever it is.
 */
function stoppable(repository: Repository, signal: AbortSignal): Repository {
  const view = Object.create(repository) as Repository;
  view.readBlob = (id: string) =>
    signal.aborted ? Promise.reject(asError(signal.reason)) : repository.readBlob(id);
  return view;
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error('the snapshot download was stopped');
}
