/**
 * A snapshot repository: content-addressed blobs (file chunks and directory trees) packed into
 * pack files, an index saying which pack holds each blob, and one snapshot record per backup.
 *
 *   packs/<2 hex>/<pack id>   blobs, one after another, then the pack's own header (JSON: each
 *                             blob's id, kind, offset, stored and raw length, compression), its
 *                             length (u32 LE) and the magic `AERIEPK1`. The id is the SHA-256 of
 *                             the whole pack.
 *   index/<id>                which blobs each pack holds (the packs' headers, gathered), JSON.
 *   snapshots/<backup uuid>   the snapshot record: root tree id, parent, totals (JSON).
 *   restore-base              the tree the server's last restore wrote (restored-tree.ts): what
 *                             the next snapshot compares the volume with when it is the newest.
 *
 * A blob's id is the SHA-256 of its raw content; every blob read is hashed again and compared,
 * so damage anywhere in storage is found before a byte of it is used. Writes go in the order
 * packs → index → snapshot: a snapshot record exists only once everything it names is stored,
 * and a writer killed at any point leaves only packs (or an index) nothing names, which prune
 * removes. Nothing is ever changed in place.
 */
import { createHash, hash } from 'node:crypto';
import zlib from 'node:zlib';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { answersRequests } from '../../shared/request-thread.ts';
import {
  BlobDecoder,
  BufferPool,
  SizedBufferPool,
  takeBlobCompressor,
  type BlobCompressor,
} from './blob-compressor.ts';
import { BlobIndex, type BlobKind, type BlobLocation } from './blob-index.ts';
import { BlobVerifier, faultOf, type BlobFault } from './blob-verifier.ts';
import { CHUNK_SIZES } from './chunker.ts';
import { RepositoryMissing, type RepositoryStore } from './repository-store.ts';
import { DamagedRepository, decodeTree, encodeTree, isId, type Tree } from './tree.ts';

/** zstd decompression on libuv's pool (looked up when used: a Node.js without zstd still loads this). */
function decompress(input: Buffer, options: zlib.ZstdOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    zlib.zstdDecompress(input, options, (error, result) => (error ? reject(error) : resolve(result))),
  );
}

/**
 * Packs are sealed once they hold this much: about 120 objects per GiB (few S3 requests), and
 * small enough that the packs being filled and uploaded stay a small part of a snapshot's memory.
 */
export const PACK_TARGET = 8 * 1024 * 1024;
/** A slab holds the largest chunk; a larger blob (the tree of a huge directory) gets its own. */
const SLAB_BYTES = CHUNK_SIZES.max;
const PACK_MAGIC = Buffer.from('AERIEPK1');
const TRAILER = 4 + PACK_MAGIC.length;
/**
 * How many blobs may be on their way to the compressing thread at once (a slab each). Four keep
 * it busy while the walk reads a file's start or a pack is written: a first backup of the bench
 * volume took 0.87× the time it took with two (medians of 3, 2.99 s against 3.45 s), for 2 MiB
 * more of slabs.
 */
const COMPRESSING = 4;
/**
 * Blobs an index object lists at most (about 100 bytes each in it): a writer of many small blobs
 * writes an index object each time this many are in packs put, and forgets them, instead of
 * holding every blob's line until the end (a volume of a million small files: 150 MB of lines,
 * then one index of 100 MB at once). A repository's reader loads index objects 8 at a time.
 */
export const INDEX_BLOBS = 20_000;
/** How many sealed packs may be uploading at once: memory stays under a few packs. */
const UPLOADING = 2;
/**
 * Room in a data pack's buffer for its header: a header line takes about 100 bytes, so 256 KiB
 * holds the header of a pack whose blobs average 3.2 KiB or more (smaller ones, from a tree of
 * tiny files, make a header that is put as a part of its own).
 */
const PACK_HEADER_ROOM = 256 * 1024;

export type { BlobKind, BlobLocation } from './blob-index.ts';

const KIND_CODE: Record<BlobKind, number> = { data: 0, tree: 1 };
const CODE_KIND: BlobKind[] = ['data', 'tree'];

/** A blob's line in a pack header or an index: [id, kind, offset, length, raw, compression]. */
export type BlobLine = [string, number, number, number, number, number];

export interface PackEntry {
  id: string;
  bytes: number;
  blobs: BlobLine[];
}

export interface SnapshotRecord {
  v: 1;
  /** The backup it belongs to. */
  backup: string;
  time: string;
  /** Root tree id. */
  tree: string;
  /** The backup whose snapshot this one was made against (files unchanged since were not read). */
  parent: string | null;
  files: number;
  directories: number;
  /** Bytes of file content: what a restore writes. */
  bytes: number;
  /** What this backup added to the repository: new blobs, their stored (compressed) bytes. */
  added: { blobs: number; bytes: number };
}

export function packKey(id: string): string {
  return `packs/${id.slice(0, 2)}/${id}`;
}

export function snapshotKey(backupId: string): string {
  return `snapshots/${backupId}`;
}

/** SHA-256 of `bytes`, hex (one native call). */
export function blobId(bytes: Uint8Array): string {
  return hash('sha256', bytes, 'hex');
}

/** A blob's content in a buffer of the reading thread's pool (see Repository.readPooledBlob). */
export interface PooledBlob {
  content: Buffer;
  /** Gives the buffer back, for another blob: the content must not be used afterwards. */
  release(): void;
}

export class Repository {
  private constructor(
    readonly store: RepositoryStore,
    private readonly blobs: BlobIndex,
    /** The index objects this view was loaded from. */
    readonly indexKeys: string[],
  ) {}

  /** Opens a repository (an empty store is an empty repository), loading its whole index. */
  static async open(store: RepositoryStore): Promise<Repository> {
    const blobs = new BlobIndex();
    const keys = (await store.list('index/')).map((o) => o.key);
    await inBatches(keys, 8, async (key) => {
      let bytes: Buffer;
      try {
        bytes = await store.get(key);
      } catch (error) {
        if (error instanceof RepositoryMissing) return; // replaced by a prune meanwhile
        throw error;
      }
      for (const pack of parseIndex(key, bytes)) addPack(blobs, pack);
    });
    return new Repository(store, blobs, keys);
  }

  has(id: string): boolean {
    return this.blobs.has(id);
  }

  location(id: string): BlobLocation | undefined {
    return this.blobs.get(id);
  }

  /** Every blob the index knows, with where it is. */
  entries(): IterableIterator<[string, BlobLocation]> {
    return this.blobs.entries();
  }

  /** Adds what a writer stored to this view of the index (a writer that saved several snapshots). */
  learn(packs: readonly PackEntry[]): void {
    for (const pack of packs) addPack(this.blobs, pack);
  }

  /**
   * A blob's content, checked: its stored bytes are fetched, decompressed and hashed, and
   * anything that does not give back exactly the blob is a DamagedRepository naming it.
   */
  async readBlob(id: string): Promise<Buffer> {
    const where = this.blobs.get(id);
    if (where === undefined) throw new DamagedRepository(`blob ${id} is in no pack of the index`, id);
    let stored: Buffer;
    try {
      stored = await this.store.getRange(packKey(where.pack), where.offset, where.length);
    } catch (error) {
      if (error instanceof RepositoryMissing) {
        throw new DamagedRepository(`pack ${where.pack} is missing (it holds blob ${id})`, where.pack);
      }
      throw error;
    }
    return checkBlob(id, where, stored);
  }

  /**
   * The contents of blobs that lie one after another in one pack (see `adjacent`), read with one
   * range request and each checked as readBlob checks it: a download from S3 of a file of several
   * chunks asks once, not once a chunk.
   */
  async readBlobRun(ids: readonly string[]): Promise<Buffer[]> {
    if (ids.length === 1) return [await this.readBlob(ids[0]!)];
    const places = ids.map((id) => {
      const where = this.blobs.get(id);
      if (where === undefined) throw new DamagedRepository(`blob ${id} is in no pack of the index`, id);
      return where;
    });
    const first = places[0]!;
    const last = places[places.length - 1]!;
    if (!places.every((where, i) => i === 0 || this.adjacent(places[i - 1]!, where)))
      throw new Error('readBlobRun reads blobs that lie one after another in one pack');
    let stored: Buffer;
    try {
      stored = await this.store.getRange(
        packKey(first.pack),
        first.offset,
        last.offset + last.length - first.offset,
      );
    } catch (error) {
      if (error instanceof RepositoryMissing)
        throw new DamagedRepository(`pack ${first.pack} is missing (it holds blob ${ids[0]!})`, first.pack);
      throw error;
    }
    return Promise.all(
      ids.map((id, i) => {
        const where = places[i]!;
        const start = where.offset - first.offset;
        return checkBlob(id, where, stored.subarray(start, Math.min(start + where.length, stored.length)));
      }),
    );
  }

  /** Whether blob `next` starts in the same pack right where `previous` ends. */
  adjacent(previous: BlobLocation, next: BlobLocation): boolean {
    return next.pack === previous.pack && next.offset === previous.offset + previous.length;
  }

  /**
   * A blob's content, checked as readBlob checks it, in a buffer to give back with `release`
   * once the content has been used (written out): a reader of many blobs then reuses a few
   * buffers instead of asking the system for fresh memory for each blob. In a worker thread (a
   * restore's, an extract's), decompressing and hashing run in a thread beside it (BlobVerifier),
   * so that the blobs read ahead are checked while the reader writes files.
   */
  async readPooledBlob(id: string): Promise<PooledBlob> {
    const where = this.blobs.get(id);
    if (where === undefined) throw new DamagedRepository(`blob ${id} is in no pack of the index`, id);
    if (answersRequests() || where.length > SLAB_BYTES || where.raw > SLAB_BYTES)
      return { content: await this.readBlob(id), release: () => undefined };
    verifier ??= new BlobVerifier();
    const input = readPool.take(where.length);
    let length: number;
    try {
      length = await this.store.getRangeInto(
        packKey(where.pack),
        where.offset,
        Buffer.from(input, 0, where.length),
      );
    } catch (error) {
      readPool.give(input);
      if (error instanceof RepositoryMissing) {
        throw new DamagedRepository(`pack ${where.pack} is missing (it holds blob ${id})`, where.pack);
      }
      throw error;
    }
    if (length !== where.length) {
      readPool.give(input);
      throw damagedBlob(id, where, 'the pack is shorter than its index says');
    }
    const output = where.compressed ? readPool.take(where.raw) : null;
    const facts = { blob: id, compressed: where.compressed, raw: where.raw, length };
    const reply =
      verifier === 'here'
        ? { input, output, fault: faultOf({ ...facts, input, output }, (decoder ??= BlobDecoder.create())) }
        : await verifier.verify(facts, input, output);
    // The content is in the output buffer when the blob was compressed, else in the input.
    const [content, spare] = reply.output === null ? [reply.input, null] : [reply.output, reply.input];
    if (spare !== null) readPool.give(spare);
    if (reply.fault !== null) {
      readPool.give(content);
      throw damagedBlob(id, where, BLOB_FAULTS[reply.fault]);
    }
    return { content: Buffer.from(content, 0, where.raw), release: () => readPool.give(content) };
  }

  async readTree(id: string): Promise<Tree> {
    return decodeTree(id, await this.readBlob(id));
  }

  writer(): BlobWriter {
    return new BlobWriter(this);
  }

  /** Stores a snapshot record; returns the SHA-256 of its bytes (the backup's checksum). */
  async saveSnapshot(record: SnapshotRecord): Promise<string> {
    const bytes = Buffer.from(JSON.stringify(record));
    await this.store.sync();
    await this.store.put(snapshotKey(record.backup), [bytes]);
    await this.store.sync();
    return blobId(bytes);
  }

  async loadSnapshot(backupId: string): Promise<{ record: SnapshotRecord; sha256: string }> {
    const bytes = await this.store.get(snapshotKey(backupId));
    return { record: parseSnapshot(backupId, bytes), sha256: blobId(bytes) };
  }

  /** The backups that have a snapshot here, by UUID. */
  async snapshotIds(): Promise<string[]> {
    return (await this.store.list('snapshots/')).map((o) => o.key.slice('snapshots/'.length));
  }

  deleteSnapshot(backupId: string): Promise<void> {
    return this.store.delete(snapshotKey(backupId));
  }
}

/** Bytes of blobs read in this thread since its last young collection. */
let readSinceCollection = 0;
const COLLECT_READ = 8 * 1024 * 1024;

/**
 * A thread that reads a snapshot makes few objects but large buffers, so V8 (which collects on
 * the heap's growth, not the buffers') let 60 MB of read blobs wait for a collection: a worker
 * thread collects its young generation every 8 MB read (under a millisecond on its small heap).
 * A thread that answers requests is left to V8.
 */
function reclaimRead(bytes: number): void {
  if (answersRequests()) return;
  readSinceCollection += bytes;
  if (readSinceCollection < COLLECT_READ) return;
  readSinceCollection = 0;
  collectGarbage('young');
}

/**
 * This thread's checking thread, for the blobs it reads pooled (not made until one is read; never
 * in a thread that answers requests, whose reads go through readBlob), or `here`: checked in this
 * thread as they arrive.
 */
let verifier: BlobVerifier | 'here' | undefined;
/**
 * Says where this thread's pooled reads are checked (never a thread that answers requests): `beside`, in a
 * checking thread started now, so that its start overlaps the loading of the index and trees
 * instead of holding up the first chunk (a restore, an extract: it writes files meanwhile); or
 * `here`, in this very thread (a download's process, which compresses beside one compression
 * thread: the cores are busy already, and a thread more would only cost its memory).
 */
export function startBlobVerifier(where: 'beside' | 'here' = 'beside'): void {
  if (answersRequests()) return;
  verifier ??= where === 'here' ? 'here' : new BlobVerifier();
}

/**
 * Buffers blobs are read into and decompressed into (see readPooledBlob), by size from 4 KiB to a
 * slab: a small file's one chunk does not hold a buffer of the largest chunk's size.
 */
const readPool = new SizedBufferPool(4 * 1024, SLAB_BYTES);

/** The memory a pooled read of a blob of `raw` bytes holds until it is released (readPooledBlob). */
export function pooledBytes(raw: number): number {
  return raw > SLAB_BYTES ? raw : readPool.sizeFor(raw);
}

/** This thread's decoder (not made until a blob is read; never in a thread that answers requests). */
let decoder: BlobDecoder | null | undefined;

/**
 * A compressed blob's content. A thread that answers no request (a restore's, an extract's)
 * decompresses at once into a buffer of the blob's size (see BlobDecoder); one that answers
 * requests leaves the work to libuv's pool.
 */
async function decompressBlob(stored: Buffer, raw: number): Promise<Buffer> {
  if (!answersRequests()) {
    decoder ??= BlobDecoder.create();
    if (decoder !== null) return decoder.decode(stored, raw);
  }
  return decompress(stored, { chunkSize: Math.max(raw, 1024), maxOutputLength: Math.max(raw, 1) });
}

const BLOB_FAULTS: Record<BlobFault, string> = {
  corrupt: 'its compressed data is corrupt',
  mismatch: 'its content does not match its hash',
};

function damagedBlob(id: string, where: BlobLocation, why: string): DamagedRepository {
  return new DamagedRepository(`blob ${id} in pack ${where.pack} is damaged: ${why}`, where.pack);
}

/** Checks a blob's stored bytes against its index entry and id; returns its content. */
export async function checkBlob(id: string, where: BlobLocation, stored: Buffer): Promise<Buffer> {
  if (stored.length !== where.length) throw damagedBlob(id, where, 'the pack is shorter than its index says');
  let content: Buffer;
  if (where.compressed) {
    try {
      content = await decompressBlob(stored, where.raw);
    } catch {
      throw damagedBlob(id, where, BLOB_FAULTS.corrupt);
    }
  } else content = stored;
  if (content.length !== where.raw || blobId(content) !== id)
    throw damagedBlob(id, where, BLOB_FAULTS.mismatch);
  reclaimRead(content.length);
  return content;
}

/** What a writer stored: new blobs, their raw and stored bytes, the packs and index objects it wrote. */
export interface WriteTotals {
  blobs: number;
  rawBytes: number;
  storedBytes: number;
  packs: number;
  /** The index objects written (none if no blob was stored). */
  indexKeys: string[];
}

/**
 * Stores new blobs into packs, leaving out any the repository (or this writer) holds already.
 * Compression runs on libuv's pool, several blobs at a time, while the caller goes on chunking;
 * sealed packs upload while the next fills. The packs put are listed in index objects of at most
 * INDEX_BLOBS blobs as they come, and in a last one by `finish`.
 */
export class BlobWriter {
  /** The blobs this writer stores that no index object it wrote lists yet. */
  private readonly pending = new Set<string>();
  private compressor: BlobCompressor | null = null;
  private readonly compressing = new Set<Promise<void>>();
  private readonly uploading = new Set<Promise<void>>();
  /** Packs sealed and waiting to be put, in order. */
  private readonly sealed: PackBuilder[] = [];
  /** Buffers that carry a blob to the compressing thread and back (one per blob in flight). */
  private readonly slabs = new BufferPool(SLAB_BYTES);
  /**
   * Buffers data packs are assembled in (the one being filled, and those uploading): room for a
   * full pack, the blob that fills it, and the header of a pack of small blobs.
   */
  private readonly packBuffers = new BufferPool(PACK_TARGET + SLAB_BYTES + PACK_HEADER_ROOM);
  private readonly open: Record<BlobKind, PackBuilder> = {
    data: new PackBuilder(Buffer.from(this.packBuffers.take())),
    tree: new PackBuilder(),
  };
  /** Packs put that no index object lists yet, and how many blobs they hold. */
  private unindexed: PackEntry[] = [];
  private unindexedBlobs = 0;
  private readonly indexing = new Set<Promise<void>>();
  private failure: Error | null = null;
  private readonly totals: WriteTotals = { blobs: 0, rawBytes: 0, storedBytes: 0, packs: 0, indexKeys: [] };

  constructor(private readonly repository: Repository) {}

  /** Whether a blob is stored already or on its way: the repository's index, or this writer. */
  knows(id: string): boolean {
    return this.repository.has(id) || this.pending.has(id);
  }

  /**
   * Stores `content` as a blob unless it is known; returns whether it was new. The content may be
   * a view of the caller's buffer: it is copied when it must outlive the call. Resolves once the
   * blob is on its way (it waits while too many are being compressed).
   */
  async add(kind: BlobKind, content: Uint8Array, id = blobId(content)): Promise<boolean> {
    this.throwIfFailed();
    if (this.knows(id)) return false;
    this.pending.add(id);
    // The caller's buffer is reused for the next read: the content is copied into a slab (a
    // buffer of its own for one larger than a slab, such as the tree of a huge directory).
    const slab = content.length <= SLAB_BYTES ? this.slabs.take() : new ArrayBuffer(content.length);
    Buffer.from(slab).set(content);
    const work = this.encode(kind, id, slab, content.length).then(
      () => undefined,
      (error: unknown) => {
        this.failure ??= asError(error);
      },
    );
    this.compressing.add(work);
    void work.finally(() => this.compressing.delete(work));
    while (this.compressing.size >= COMPRESSING) await Promise.race(this.compressing);
    await this.roomForPacks();
    this.throwIfFailed();
    return true;
  }

  /** Stores a directory's tree (unless known); returns its id. */
  async addTree(tree: Tree): Promise<string> {
    const bytes = encodeTree(tree);
    const id = blobId(bytes);
    await this.add('tree', bytes, id);
    return id;
  }

  private async encode(kind: BlobKind, id: string, slab: ArrayBuffer, raw: number): Promise<void> {
    this.compressor ??= takeBlobCompressor();
    const encoded = await this.compressor.encode(slab, raw);
    const stored = Buffer.from(encoded.slab, 0, encoded.length);
    this.throwIfFailed();
    const pack = this.open[kind];
    pack.add([id, KIND_CODE[kind], pack.bytes, encoded.length, raw, encoded.compressed ? 1 : 0], stored);
    this.slabs.give(encoded.slab); // copied into the pack (or kept by it, for a tree)
    this.totals.blobs += 1;
    this.totals.rawBytes += raw;
    this.totals.storedBytes += encoded.length;
    if (pack.bytes >= PACK_TARGET) this.seal(kind);
  }

  /**
   * Seals the open pack of `kind` and queues it to be put; a new pack takes the blobs that come
   * meanwhile. Returns at once: the blob that filled the pack frees its place among those being
   * compressed, and the compressing thread goes on while the pack is written.
   */
  private seal(kind: BlobKind): void {
    const pack = this.open[kind];
    if (pack.lines.length === 0) return;
    this.open[kind] =
      kind === 'data' ? new PackBuilder(Buffer.from(this.packBuffers.take())) : new PackBuilder();
    this.sealed.push(pack);
    this.putNext();
  }

  /** Starts putting queued packs while fewer than the store's limit are being put. */
  private putNext(): void {
    if (this.failure !== null) this.sealed.length = 0; // nothing more is stored after a failure
    const uploads = this.repository.store.concurrentPuts ?? UPLOADING;
    while (this.uploading.size < uploads && this.sealed.length > 0) {
      const pack = this.sealed.shift()!;
      const { id, parts, bytes } = pack.seal();
      const upload = this.repository.store.put(packKey(id), parts).then(
        () => {
          this.totals.packs += 1;
          this.unindexed.push({ id, bytes, blobs: pack.lines });
          this.unindexedBlobs += pack.lines.length;
          if (this.unindexedBlobs >= INDEX_BLOBS) this.indexPut();
          if (pack.buffer !== undefined) this.packBuffers.give(pack.buffer.buffer as ArrayBuffer);
          // What the pack left is garbage now (its buffer is pooled, but not what refers to it),
          // and V8 frees a buffer's memory only when it collects. To a local store, a young
          // collection after each pack keeps RSS where a whole-heap one did (175 MB on the bench
          // volume) for 1 ms against 9 (40 packs: whole-heap ones cost a first backup 0.3 s).
          collectGarbage(this.repository.store.collectAfterPut ?? 'all');
        },
        (error: unknown) => {
          this.failure ??= asError(error);
        },
      );
      this.uploading.add(upload);
      void upload.finally(() => {
        this.uploading.delete(upload);
        this.putNext();
      });
    }
  }

  /**
   * Waits while a pack is queued behind those being put (each holds a pack's memory), or, on a
   * store whose writers wait for puts, while every put is busy.
   */
  private async roomForPacks(): Promise<void> {
    const { store } = this.repository;
    const busy = () =>
      this.sealed.length > 0 ||
      (store.writerWaitsForPuts === true && this.uploading.size >= (store.concurrentPuts ?? UPLOADING));
    while (this.uploading.size > 0 && busy()) await Promise.race(this.uploading);
  }

  /**
   * Writes an index object listing the packs put so far and not listed yet. Once it is written
   * the repository's view knows their blobs, and this writer forgets them: what it holds for the
   * blobs it stored stays under a few index objects' worth, however many it stores. (Not before:
   * a writer that fails leaves the view as it was, knowing no blob that no index object lists.)
   */
  private indexPut(): void {
    const packs = this.unindexed;
    this.unindexed = [];
    this.unindexedBlobs = 0;
    const work = writeIndex(this.repository.store, packs).then(
      (key) => {
        this.totals.indexKeys.push(key);
        this.repository.learn(packs);
        for (const pack of packs) for (const [id] of pack.blobs) this.pending.delete(id);
      },
      (error: unknown) => {
        this.failure ??= asError(error);
      },
    );
    this.indexing.add(work);
    void work.finally(() => this.indexing.delete(work));
  }

  /** Stores what is left, waits for every upload, and writes the index of what is not listed yet. */
  async finish(): Promise<WriteTotals> {
    await Promise.all(this.compressing);
    this.throwIfFailed();
    this.seal('data');
    this.seal('tree');
    while (this.uploading.size > 0) await Promise.all(this.uploading);
    await this.compressor?.close();
    this.compressor = null;
    this.throwIfFailed();
    if (this.unindexed.length > 0) this.indexPut();
    await Promise.all(this.indexing);
    this.throwIfFailed();
    return this.totals;
  }

  /** Waits for whatever is in flight to settle, storing nothing more (after a failure). */
  async abandon(): Promise<void> {
    this.failure ??= new Error('abandoned');
    await Promise.allSettled(this.compressing);
    while (this.uploading.size > 0) await Promise.allSettled(this.uploading);
    await Promise.allSettled(this.indexing);
    await this.compressor?.close();
    this.compressor = null;
  }

  private throwIfFailed(): void {
    if (this.failure !== null) throw this.failure;
  }
}

/** Writes an index object naming `packs`; returns its key. */
export async function writeIndex(store: RepositoryStore, packs: readonly PackEntry[]): Promise<string> {
  const bytes = Buffer.from(JSON.stringify({ v: 1, packs }));
  const key = `index/${blobId(bytes)}`;
  await store.put(key, [bytes]);
  return key;
}

/** A pack being filled: its blobs' stored bytes and header lines, hashed as they come. */
export class PackBuilder {
  readonly lines: BlobLine[] = [];
  private readonly parts: Buffer[] = [];
  private readonly hasher = createHash('sha256');
  bytes = 0;

  /**
   * `buffer`: where to assemble the pack's blobs (a buffer used again for pack after pack); each
   * blob is copied into it while it has room. Without one, the blobs themselves are kept.
   */
  constructor(readonly buffer?: Buffer) {}

  add(line: BlobLine, stored: Buffer): void {
    this.lines.push(line);
    this.hasher.update(stored);
    const { buffer } = this;
    if (buffer !== undefined && this.parts.length === 0 && this.bytes + stored.length <= buffer.length) {
      stored.copy(buffer, this.bytes);
    } else {
      if (buffer !== undefined && this.parts.length === 0) this.parts.push(buffer.subarray(0, this.bytes));
      this.parts.push(Buffer.from(stored)); // `stored` may be a view of a buffer used again
    }
    this.bytes += stored.length;
  }

  /**
   * The pack's id and bytes: its blobs, then the header listing them, then the trailer. When the
   * header and trailer fit in the buffer after the blobs they are written there, and the pack is
   * one part: a store that must hold a put's body as one buffer (S3) then needs no copy of it.
   */
  seal(): { id: string; parts: Buffer[]; bytes: number } {
    const header = Buffer.from(JSON.stringify({ v: 1, blobs: this.lines }));
    const trailer = Buffer.alloc(TRAILER);
    trailer.writeUInt32LE(header.length, 0);
    PACK_MAGIC.copy(trailer, 4);
    this.hasher.update(header);
    this.hasher.update(trailer);
    const bytes = this.bytes + header.length + TRAILER;
    const { buffer } = this;
    let parts: Buffer[];
    if (buffer === undefined || this.parts.length > 0) parts = [...this.parts, header, trailer];
    else if (bytes <= buffer.length) {
      header.copy(buffer, this.bytes);
      trailer.copy(buffer, this.bytes + header.length);
      parts = [buffer.subarray(0, bytes)];
    } else parts = [buffer.subarray(0, this.bytes), header, trailer];
    return { id: this.hasher.digest('hex'), parts, bytes };
  }
}

/** The blobs a pack's own header lists (to check it, or rebuild an index from packs alone). */
export function parsePackHeader(packId: string, pack: Buffer): BlobLine[] {
  const damaged = (why: string) => new DamagedRepository(`pack ${packId} is damaged: ${why}`, packId);
  if (pack.length < TRAILER || !pack.subarray(pack.length - PACK_MAGIC.length).equals(PACK_MAGIC))
    throw damaged('it does not end as a pack does');
  const length = pack.readUInt32LE(pack.length - TRAILER);
  if (length > pack.length - TRAILER) throw damaged('its header length is impossible');
  try {
    const parsed: unknown = JSON.parse(
      pack.subarray(pack.length - TRAILER - length, pack.length - TRAILER).toString(),
    );
    return checkLines(packId, (parsed as { blobs: unknown }).blobs, pack.length - TRAILER - length);
  } catch (error) {
    if (error instanceof DamagedRepository) throw error;
    throw damaged('its header is not readable');
  }
}

export function parseIndex(key: string, bytes: Buffer): PackEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new DamagedRepository(`${key} is damaged: it is not JSON`, key);
  }
  const packs = (parsed as { packs?: unknown } | null)?.packs;
  if (!Array.isArray(packs)) throw new DamagedRepository(`${key} is damaged: it lists no packs`, key);
  return packs.map((pack: Partial<PackEntry>) => {
    if (!isId(pack.id) || typeof pack.bytes !== 'number')
      throw new DamagedRepository(`${key} is damaged: a pack has no id`, key);
    return { id: pack.id, bytes: pack.bytes, blobs: checkLines(key, pack.blobs, pack.bytes) };
  });
}

function checkLines(where: string, lines: unknown, limit: number): BlobLine[] {
  if (!Array.isArray(lines)) throw new DamagedRepository(`${where} is damaged: it lists no blobs`, where);
  for (const line of lines as unknown[]) {
    const [id, kind, offset, length, raw, compression] = line as unknown[];
    const ok =
      isId(id) &&
      (kind === 0 || kind === 1) &&
      [offset, length, raw].every((n) => Number.isSafeInteger(n) && (n as number) >= 0) &&
      (offset as number) + (length as number) <= limit &&
      (compression === 0 || compression === 1);
    if (!ok) throw new DamagedRepository(`${where} is damaged: a blob's entry is invalid`, where);
  }
  return lines as BlobLine[];
}

function addPack(blobs: BlobIndex, pack: PackEntry): void {
  for (const [id, kind, offset, length, raw, compression] of pack.blobs) {
    blobs.set(id, {
      pack: pack.id,
      kind: CODE_KIND[kind]!,
      offset,
      length,
      raw,
      compressed: compression === 1,
    });
  }
}

export function parseSnapshot(backupId: string, bytes: Buffer): SnapshotRecord {
  const damaged = (why: string) =>
    new DamagedRepository(`the snapshot of backup ${backupId} is damaged: ${why}`, backupId);
  let record: Partial<SnapshotRecord>;
  try {
    record = JSON.parse(bytes.toString('utf8')) as Partial<SnapshotRecord>;
  } catch {
    throw damaged('it is not JSON');
  }
  if (record.v !== 1 || record.backup !== backupId) throw damaged('it belongs to another backup');
  if (!isId(record.tree)) throw damaged('it names no tree');
  for (const n of [record.files, record.directories, record.bytes])
    if (!Number.isSafeInteger(n) || (n as number) < 0) throw damaged('its totals are invalid');
  return record as SnapshotRecord;
}

async function inBatches<T>(
  items: readonly T[],
  size: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.min(size, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(runners);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
