/**
 * Reads a snapshot back: its entries depth-first in name order (a directory before what it
 * holds, as a tar lists them), and each file's content, chunk by chunk, every chunk checked
 * against its hash as it arrives. Chunks are fetched ahead of the reader, across files, several
 * at a time (a pack range each on S3; for a reader that keeps what it reads, a download, one range
 * for a run of a file's chunks that lie one after another in a pack) within a fixed budget of bytes, so that a restore or a
 * download waits on storage as little as it can while memory stays bounded whatever the size.
 */
import { DamagedRepository, type FileNode, type TreeNode } from './tree.ts';
import { pooledBytes, type PooledBlob, type Repository } from './repository.ts';

/** Bytes of chunks fetched ahead of the reader, at most (beyond the one being read), by default. */
const AHEAD_BYTES = 48 * 1024 * 1024;
/** Chunk reads in flight at once, at most. */
const AHEAD_READS = 8;
/** Bytes of chunks one read asks for at most, when they lie one after another in a pack. */
const RUN_BYTES = 4 * 1024 * 1024;

export interface SnapshotEntry {
  /** Path inside the volume, `/`-separated, no leading `/`. */
  rel: string;
  node: TreeNode;
  /** A file's content, chunk by chunk (checked); empty for a directory. */
  content(): AsyncGenerator<Buffer>;
}

/** The entries under tree `treeId`, in order, each directory before its contents. */
export async function* walkTree(
  repository: Repository,
  treeId: string,
  prefix = '',
  only?: (rel: string) => boolean,
): AsyncGenerator<{ rel: string; node: TreeNode }> {
  const tree = await repository.readTree(treeId);
  for (const node of tree.entries) {
    const rel = prefix + node.name;
    // Left out, with all it holds: not even its tree is read.
    if (only !== undefined && !only(rel)) continue;
    yield { rel, node };
    if (node.type === 'dir') yield* walkTree(repository, node.tree, `${rel}/`, only);
  }
}

export interface ReadOptions {
  /**
   * Chunks are read into buffers that are used again: a chunk handed on is valid only until the
   * reader asks for the next one (for a reader that writes each chunk out before going on).
   */
  reuseBuffers?: boolean;
  /** Only the entries this accepts, by path (a directory left out is not descended into). */
  only?: (rel: string) => boolean;
  /** Bytes of chunks fetched ahead of the reader, at most (48 MiB by default). */
  aheadBytes?: number;
}

/**
 * Every entry of the snapshot whose root tree is `treeId`, with its content read ahead. A file
 * whose chunks the index does not know, or whose chunks do not add up to its size, fails at
 * that file with a DamagedRepository that names it, before any of its content is handed on.
 */
export async function* readSnapshot(
  repository: Repository,
  treeId: string,
  options: ReadOptions = {},
): AsyncGenerator<SnapshotEntry> {
  const ahead = new ReadAhead(repository, options.reuseBuffers === true, options.aheadBytes ?? AHEAD_BYTES);
  const walk = walkTree(repository, treeId, '', options.only);
  try {
    for (;;) {
      // Keep the next few files' chunks coming while this one is handed on.
      while (ahead.wantsMore()) {
        const next = await walk.next();
        if (next.done === true) {
          ahead.ended();
          break;
        }
        ahead.push(next.value.rel, next.value.node);
      }
      const entry = ahead.shift();
      if (entry === undefined) return;
      yield entry;
      await entry.settle();
    }
  } finally {
    ahead.cancel();
    await walk.return(undefined);
  }
}

interface Queued {
  rel: string;
  node: TreeNode;
  /** Chunk reads started, in order; those not started yet follow. */
  reads: Promise<PooledBlob>[];
  sizes: number[];
}

class ReadAhead {
  private readonly queue: Queued[] = [];
  private done = false;
  private bytes = 0;
  private reads = 0;

  constructor(
    private readonly repository: Repository,
    private readonly reuseBuffers: boolean,
    private readonly aheadBytes: number,
  ) {}

  private read(id: string): Promise<PooledBlob> {
    if (this.reuseBuffers) return this.repository.readPooledBlob(id);
    return this.repository.readBlob(id).then((content) => ({ content, release: () => undefined }));
  }

  wantsMore(): boolean {
    return !this.done && this.queue.length < 256 && this.bytes < this.aheadBytes && this.reads < AHEAD_READS;
  }

  ended(): void {
    this.done = true;
  }

  push(rel: string, node: TreeNode): void {
    const sizes = node.type === 'file' ? chunkSizes(this.repository, rel, node) : [];
    // What a chunk costs the budget: the memory it holds until it is handed on.
    const held = this.reuseBuffers ? sizes.map(pooledBytes) : sizes;
    this.queue.push({ rel, node, reads: [], sizes: held });
    this.start();
  }

  /** Starts chunk reads in queue order while the budget allows. */
  private start(): void {
    for (const item of this.queue) if (!this.startOne(item)) return;
  }

  /** Starts reads of `item`'s chunks while the budget allows; false once it is spent. */
  private startOne(item: Queued): boolean {
    if (item.node.type !== 'file') return true;
    const chunks = item.node.chunks;
    while (item.reads.length < chunks.length) {
      if (this.reads >= AHEAD_READS || (this.bytes > 0 && this.bytes >= this.aheadBytes)) return false;
      if (!this.reuseBuffers) {
        this.startRun(item);
        continue;
      }
      {
        const index = item.reads.length;
        const size = item.sizes[index]!;
        this.bytes += size;
        this.reads += 1;
        const read = this.read(chunks[index]!).then(
          (content) => {
            this.reads -= 1;
            return content;
          },
          (error: unknown) => {
            this.reads -= 1;
            throw error instanceof DamagedRepository
              ? new DamagedRepository(`${item.rel}: ${error.message}`, error.object)
              : error;
          },
        );
        read.catch(() => {}); // awaited by the reader, unless the read is abandoned
        item.reads.push(read);
      }
    }
    return true;
  }

  /**
   * Starts one read of the next chunks of `item` that lie one after another in one pack, up to
   * RUN_BYTES (one request to the store, not one a chunk): for readers that keep what they read
   * (a download), whose chunks are not read into pooled buffers.
   */
  private startRun(item: Queued): void {
    const chunks = (item.node as FileNode).chunks;
    const from = item.reads.length;
    let to = from + 1;
    let bytes = item.sizes[from]!;
    for (; to < chunks.length && bytes + item.sizes[to]! <= RUN_BYTES; to++) {
      const previous = this.repository.location(chunks[to - 1]!)!;
      const next = this.repository.location(chunks[to]!)!;
      if (!this.repository.adjacent(previous, next)) break;
      bytes += item.sizes[to]!;
    }
    this.bytes += bytes;
    this.reads += 1;
    const run = this.repository.readBlobRun(chunks.slice(from, to)).then(
      (contents) => {
        this.reads -= 1;
        return contents;
      },
      (error: unknown) => {
        this.reads -= 1;
        throw error instanceof DamagedRepository
          ? new DamagedRepository(`${item.rel}: ${error.message}`, error.object)
          : error;
      },
    );
    run.catch(() => {}); // awaited by the reader, unless the read is abandoned
    for (let index = from; index < to; index++) {
      const read = run.then((contents) => ({ content: contents[index - from]!, release: () => undefined }));
      read.catch(() => {});
      item.reads.push(read);
    }
  }

  shift(): (SnapshotEntry & { settle(): Promise<void> }) | undefined {
    const next = this.queue.shift();
    if (next === undefined) return undefined;
    const item: Queued = next;
    let started = false;
    let finish: () => void = () => {};
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const release = () => {
      for (let index = 0; index < item.reads.length; index++)
        if (item.reads[index] !== DONE) this.bytes -= item.sizes[index]!;
      item.reads.length = 0;
      this.start();
    };
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the generator below is no method
    const ahead = this;
    async function* content(): AsyncGenerator<Buffer> {
      started = true;
      try {
        if (item.node.type !== 'file') return;
        for (let index = 0; index < item.node.chunks.length; index++) {
          // Not started yet (the budget went to later files): it starts now, whatever the budget.
          if (index >= item.reads.length) ahead.startNow(item);
          const chunk = await item.reads[index]!;
          ahead.bytes -= item.sizes[index]!;
          item.reads[index] = DONE;
          ahead.start();
          yield chunk.content;
          chunk.release(); // the reader asked for more: it is done with this one
        }
      } finally {
        release(); // chunks not read (the reader stopped early) go back to the budget
        finish();
      }
    }
    return {
      rel: item.rel,
      node: item.node,
      content,
      // The walk goes on once the entry's content is read, or at once if the reader never began it.
      settle: () => (started ? finished : Promise.resolve(release())),
    };
  }

  /** Starts the next read of `item` whatever the budget (the reader waits on it). */
  private startNow(item: Queued): void {
    const [bytes, reads] = [this.bytes, this.reads];
    this.bytes = 0;
    this.reads = 0;
    this.startOne(item);
    this.bytes += bytes;
    this.reads += reads;
  }

  cancel(): void {
    this.done = true;
    this.queue.length = 0;
  }
}

const DONE: Promise<PooledBlob> = Promise.resolve({ content: Buffer.alloc(0), release: () => undefined });

/** Each chunk's raw size, from the index; a file they do not add up for is damaged. */
function chunkSizes(repository: Repository, rel: string, node: FileNode): number[] {
  let total = 0;
  const sizes = node.chunks.map((id) => {
    const where = repository.location(id);
    if (where === undefined || where.kind !== 'data') {
      throw new DamagedRepository(`${rel}: chunk ${id} is in no pack of the index`, id);
    }
    total += where.raw;
    return where.raw;
  });
  if (total !== node.size) {
    throw new DamagedRepository(
      `${rel}: its chunks hold ${total} bytes, not the ${node.size} it should`,
      rel,
    );
  }
  return sizes;
}
