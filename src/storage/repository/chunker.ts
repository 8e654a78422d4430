/**
 * Content-defined chunking: where a file's content is cut into chunks depends on the bytes, not
 * on their offsets, so an edit in the middle of a file changes the chunks around it and leaves
 * the others (and their ids) as they were: a later backup stores only those.
 *
 * The cut points come from a gear hash (one table lookup, a shift and an add per byte), judged
 * FastCDC's way: nothing is cut in the first `min` bytes of a chunk (they are not even hashed),
 * a stricter mask applies until `avg` bytes and a looser one after, which keeps chunk sizes close
 * to `avg`, and a chunk never exceeds `max`. The gear table is fixed forever: another table would
 * cut the same content elsewhere, and nothing written before would deduplicate against it.
 */

export interface ChunkSizes {
  min: number;
  avg: number;
  max: number;
}

/**
 * 64 KiB to 1 MiB, about 256 KiB on average, chosen by measurement on the bench volume and its
 * five days of play (bench/days-of-play.ts; BENCHMARKS.md, "Snapshot backups"): a day's edits
 * (a few 4–64 KiB overwrites in region files, appended logs) each re-store the chunk around them,
 * so smaller chunks store less: after six backups the repository took 272 MB with 1 MiB chunks,
 * 258 MB with 512 KiB and 245 MB with 256 KiB (restic, side by side: 255 MB), for a first backup
 * of the same size and a few hundred more chunks in it.
 */
export const CHUNK_SIZES: ChunkSizes = { min: 64 * 1024, avg: 256 * 1024, max: 1024 * 1024 };

/** The gear table: 256 fixed pseudo-random 32-bit words (a linear congruential sequence). */
const GEAR = (() => {
  const table = new Int32Array(256);
  let state = 0x2545f491;
  for (let i = 0; i < 256; i++) {
    // Two steps per word, taking the high halves: an LCG's low bits repeat too soon.
    state = (Math.imul(state, 1103515245) + 12345) | 0;
    const high = state >>> 16;
    state = (Math.imul(state, 1103515245) + 12345) | 0;
    table[i] = (high << 16) | (state >>> 16) | 0;
  }
  return table;
})();

/** Masks on the hash's high bits (the bits that depend on the most bytes). */
function highMask(bits: number): number {
  return (0xffffffff << (32 - bits)) | 0;
}

/**
 * The scan loop in WebAssembly: 2.5 to 4 times the speed of the same loop in JavaScript here
 * (BENCHMARKS.md, "Snapshot backups"), where it was a third of a first backup's time. Built from
 * this text with wabt's wat2wasm; `find(i, normal, limit, strict, loose)` returns the index just
 * after the cut (or -1), scanning bytes at 1024 + i of its memory, whose first 1 KiB is the gear
 * table:
 *
 *   (module
 *     (memory (export "memory") 129)
 *     (func (export "find") (param $i i32) (param $normal i32) (param $limit i32)
 *       (param $strict i32) (param $loose i32) (result i32) (local $h i32)
 *       (block $strictDone (loop $strictLoop
 *         (br_if $strictDone (i32.ge_u (local.get $i) (local.get $normal)))
 *         (local.set $h (i32.add (i32.shl (local.get $h) (i32.const 1))
 *           (i32.load (i32.shl (i32.load8_u offset=1024 (local.get $i)) (i32.const 2)))))
 *         (local.set $i (i32.add (local.get $i) (i32.const 1)))
 *         (if (i32.eqz (i32.and (local.get $h) (local.get $strict))) (then (return (local.get $i))))
 *         (br $strictLoop)))
 *       (block $looseDone (loop $looseLoop
 *         (br_if $looseDone (i32.ge_u (local.get $i) (local.get $limit)))
 *         (local.set $h (i32.add (i32.shl (local.get $h) (i32.const 1))
 *           (i32.load (i32.shl (i32.load8_u offset=1024 (local.get $i)) (i32.const 2)))))
 *         (local.set $i (i32.add (local.get $i) (i32.const 1)))
 *         (if (i32.eqz (i32.and (local.get $h) (local.get $loose))) (then (return (local.get $i))))
 *         (br $looseLoop)))
 *       (i32.const -1)))
 */
const GEAR_WASM = Buffer.from(
  'AGFzbQEAAAABCgFgBX9/f39/AX8DAgEABQQBAIEBBxECBm1lbW9yeQIABGZpbmQAAAp0AXIBAX8CQANAIAAgAU8NASAF' +
    'QQF0IAAtAIAIQQJ0KAIAaiEFIABBAWohACAFIANxRQRAIAAPCwwACwsCQANAIAAgAk8NASAFQQF0IAAtAIAIQQJ0KAIA' +
    'aiEFIABBAWohACAFIARxRQRAIAAPCwwACwtBfws=',
  'base64',
);
/** Where the scanned bytes start in the module's memory (after the gear table). */
const WASM_DATA = 1024;
/** The module's memory: 129 pages of 64 KiB, 8 MiB of window after the table. */
const WASM_WINDOW = 129 * 65536 - WASM_DATA;

interface GearScan {
  find(i: number, normal: number, limit: number, strict: number, loose: number): number;
  memory: { buffer: ArrayBuffer };
}

/** The WebAssembly API, as much of it as is used here (the project's types leave out the DOM's). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

let gearModule: object | null = null;

export class Chunker {
  private readonly strict: number;
  private readonly loose: number;
  private scan: GearScan | null = null;
  private scanWindow: Buffer | null = null;

  constructor(readonly sizes: ChunkSizes = CHUNK_SIZES) {
    const bits = Math.round(Math.log2(sizes.avg));
    // Normalization level 2: two bits harder before the average, two easier after it.
    this.strict = highMask(bits + 2);
    this.loose = highMask(bits - 2);
  }

  /**
   * A buffer of `size` bytes to read content into: cutting content held there runs in
   * WebAssembly. Other buffers are cut too, by the same loop in JavaScript (same cut points).
   */
  window(size: number): Buffer {
    if (size > WASM_WINDOW) return Buffer.allocUnsafe(size);
    if (this.scan === null) {
      gearModule ??= new wasm.Module(GEAR_WASM);
      const exports = new wasm.Instance(gearModule).exports as GearScan;
      new Int32Array(exports.memory.buffer, 0, 256).set(GEAR);
      this.scan = exports;
      this.scanWindow = Buffer.from(exports.memory.buffer, WASM_DATA, WASM_WINDOW);
    }
    return this.scanWindow!.subarray(0, size);
  }

  /**
   * The length of the chunk that starts at `start` in `data[start, end)`, or -1 when the cut
   * cannot be known yet: fewer than `max` bytes are there and more may follow (`final` false).
   * With `final`, whatever is left ends the last chunk.
   */
  cut(data: Uint8Array, start: number, end: number, final: boolean): number {
    const { min, avg, max } = this.sizes;
    const available = end - start;
    if (available <= min) return final || available === max ? available : -1;
    const limit = start + Math.min(available, max);
    const normal = Math.min(start + avg, limit);
    if (this.scan !== null && data.buffer === this.scan.memory.buffer && data.byteOffset === WASM_DATA) {
      const end = this.scan.find(start + min, normal, limit, this.strict, this.loose);
      if (end >= 0) return end - start;
      if (limit - start === max || final) return limit - start;
      return -1;
    }
    const gear = GEAR;
    const strict = this.strict;
    const loose = this.loose;
    let hash = 0;
    let i = start + min;
    for (; i < normal; i++) {
      hash = ((hash << 1) + gear[data[i]!]!) | 0;
      if ((hash & strict) === 0) return i + 1 - start;
    }
    for (; i < limit; i++) {
      hash = ((hash << 1) + gear[data[i]!]!) | 0;
      if ((hash & loose) === 0) return i + 1 - start;
    }
    if (limit - start === max || final) return limit - start;
    return -1;
  }
}
