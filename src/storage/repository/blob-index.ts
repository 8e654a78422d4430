/**
 * Where each blob of a repository is, held compactly: a repository of a million blobs (a volume
 * of a million small files, or 250 GB of large ones) is a million entries, which a Map of hex ids
 * to location objects held in about 230 bytes each. Here an entry is its id's 32 bytes, four
 * 32-bit numbers and a byte of flags in arrays that grow by doubling, found through an
 * open-addressing table of entry numbers keyed by the id's first bytes (SHA-256 output: already
 * uniformly spread): about 60 bytes an entry, and nothing for the garbage collector to trace.
 */

import { isId } from './tree.ts';

/** Where a blob is: its pack, the bytes it takes there, and how to turn them back into content. */
export interface BlobLocation {
  pack: string;
  kind: BlobKind;
  offset: number;
  /** Bytes stored in the pack. */
  length: number;
  /** Bytes of content. */
  raw: number;
  compressed: boolean;
}

export type BlobKind = 'data' | 'tree';

const ID_BYTES = 32;
const TREE = 1;
const COMPRESSED = 2;
/** Entries the arrays first hold; they double when full. */
const FIRST_CAPACITY = 1024;

export class BlobIndex {
  private ids = Buffer.alloc(FIRST_CAPACITY * ID_BYTES);
  private packOf = new Uint32Array(FIRST_CAPACITY);
  private offsets = new Uint32Array(FIRST_CAPACITY);
  private lengths = new Uint32Array(FIRST_CAPACITY);
  private raws = new Uint32Array(FIRST_CAPACITY);
  private flags = new Uint8Array(FIRST_CAPACITY);
  /** Entry number + 1 in each slot (0: empty); twice as many slots as the arrays hold entries. */
  private slots = new Uint32Array(FIRST_CAPACITY * 2);
  /** Pack ids, each once; entries refer to them by position. */
  private readonly packs: string[] = [];
  private readonly packNumbers = new Map<string, number>();
  /** The id being looked up, in binary (one buffer for every lookup). */
  private readonly probe = Buffer.alloc(ID_BYTES);
  size = 0;

  has(id: string): boolean {
    return this.find(id) >= 0;
  }

  get(id: string): BlobLocation | undefined {
    const entry = this.find(id);
    return entry < 0 ? undefined : this.location(entry);
  }

  /** Records where blob `id` is; a blob recorded already is moved to the new place. */
  set(id: string, where: BlobLocation): void {
    if (!isId(id)) throw new Error(`not a blob id: ${JSON.stringify(id)}`);
    for (const n of [where.offset, where.length, where.raw])
      if (!Number.isInteger(n) || n < 0 || n > 0xffffffff)
        throw new Error(`blob ${id}: ${n} is out of range`);
    let entry = this.find(id); // leaves the id in `probe`
    if (entry < 0) {
      if (this.size === this.flags.length) this.grow();
      entry = this.size++;
      this.probe.copy(this.ids, entry * ID_BYTES);
      this.slots[this.emptySlot(entry)] = entry + 1;
    }
    let pack = this.packNumbers.get(where.pack);
    if (pack === undefined) {
      pack = this.packs.push(where.pack) - 1;
      this.packNumbers.set(where.pack, pack);
    }
    this.packOf[entry] = pack;
    this.offsets[entry] = where.offset;
    this.lengths[entry] = where.length;
    this.raws[entry] = where.raw;
    this.flags[entry] = (where.kind === 'tree' ? TREE : 0) | (where.compressed ? COMPRESSED : 0);
  }

  /** Every blob with where it is, in the order they were first recorded. */
  *entries(): IterableIterator<[string, BlobLocation]> {
    for (let entry = 0; entry < this.size; entry++)
      yield [this.ids.toString('hex', entry * ID_BYTES, (entry + 1) * ID_BYTES), this.location(entry)];
  }

  private location(entry: number): BlobLocation {
    const flags = this.flags[entry]!;
    return {
      pack: this.packs[this.packOf[entry]!]!,
      kind: flags & TREE ? 'tree' : 'data',
      offset: this.offsets[entry]!,
      length: this.lengths[entry]!,
      raw: this.raws[entry]!,
      compressed: (flags & COMPRESSED) !== 0,
    };
  }

  /** The entry number of `id` (-1: none, or not an id); `probe` holds the id in binary afterwards. */
  private find(id: string): number {
    if (!isId(id)) return -1;
    this.probe.write(id, 'hex');
    const mask = this.slots.length - 1;
    for (let slot = this.probe.readUInt32LE(0) & mask; ; slot = (slot + 1) & mask) {
      const held = this.slots[slot]!;
      if (held === 0) return -1;
      const at = (held - 1) * ID_BYTES;
      if (this.ids.compare(this.probe, 0, ID_BYTES, at, at + ID_BYTES) === 0) return held - 1;
    }
  }

  /** The first empty slot for entry `entry`, whose id is in the arrays. */
  private emptySlot(entry: number): number {
    const mask = this.slots.length - 1;
    let slot = this.ids.readUInt32LE(entry * ID_BYTES) & mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    return slot;
  }

  private grow(): void {
    const capacity = this.flags.length * 2;
    const ids = Buffer.alloc(capacity * ID_BYTES);
    this.ids.copy(ids);
    this.ids = ids;
    this.packOf = grown(this.packOf, capacity);
    this.offsets = grown(this.offsets, capacity);
    this.lengths = grown(this.lengths, capacity);
    this.raws = grown(this.raws, capacity);
    const flags = new Uint8Array(capacity);
    flags.set(this.flags);
    this.flags = flags;
    this.slots = new Uint32Array(capacity * 2);
    for (let entry = 0; entry < this.size; entry++) this.slots[this.emptySlot(entry)] = entry + 1;
  }
}

function grown(array: Uint32Array, capacity: number): Uint32Array<ArrayBuffer> {
  const bigger = new Uint32Array(capacity);
  bigger.set(array);
  return bigger;
}
