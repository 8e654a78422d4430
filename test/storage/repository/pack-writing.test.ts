/**
 * How packs are written: a pack sealed in one part (its header and trailer written into its own
 * buffer) is byte for byte the pack sealed in parts; a writer on a store whose writers wait for
 * puts (S3) holds no pack beyond the open one and those being put; and a writer of many blobs
 * lists them in index objects of a bounded size as it goes.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { CHUNK_SIZES } from '../../../src/storage/repository/chunker.ts';
import {
  LocalRepositoryStore,
  type RepositoryStore,
} from '../../../src/storage/repository/repository-store.ts';
import {
  blobId,
  INDEX_BLOBS,
  PACK_TARGET,
  parseIndex,
  PackBuilder,
  parsePackHeader,
  Repository,
} from '../../../src/storage/repository/repository.ts';
import { undoAfterEach } from '../../support/archives.ts';

const undo = undoAfterEach();

/** Fills a builder with the same blobs each time (stored as they are, uncompressed). */
function fill(builder: PackBuilder, blobs: Buffer[]): PackBuilder {
  for (const blob of blobs) builder.add([blobId(blob), 0, builder.bytes, blob.length, blob.length, 0], blob);
  return builder;
}

describe('PackBuilder.seal', () => {
  const blobs = [randomBytes(5000), randomBytes(70_000), randomBytes(1), randomBytes(300_000)];
  const body = blobs.reduce((sum, blob) => sum + blob.length, 0);

  it('writes the header and trailer into the pack buffer when they fit, as the same bytes', () => {
    const whole = fill(new PackBuilder(Buffer.alloc(body + 64 * 1024)), blobs).seal();
    const tight = fill(new PackBuilder(Buffer.alloc(body)), blobs).seal();
    const unbuffered = fill(new PackBuilder(), blobs).seal();

    expect(whole.parts).toHaveLength(1);
    expect(tight.parts).toHaveLength(3); // the body in its buffer, the header, the trailer
    expect(unbuffered.parts).toHaveLength(blobs.length + 2);
    const bytes = Buffer.concat(whole.parts);
    expect(Buffer.concat(tight.parts).equals(bytes)).toBe(true);
    expect(Buffer.concat(unbuffered.parts).equals(bytes)).toBe(true);
    expect([whole.id, whole.bytes]).toEqual([tight.id, tight.bytes]);
    expect([whole.id, whole.bytes]).toEqual([unbuffered.id, unbuffered.bytes]);
    expect(whole.bytes).toBe(bytes.length);
    // The pack reads back: its header lists every blob where it lies.
    const lines = parsePackHeader(whole.id, bytes);
    expect(lines.map(([, , offset, length]) => bytes.subarray(offset, offset + length))).toEqual(blobs);
    expect(lines.map(([id]) => id)).toEqual(blobs.map((blob) => blobId(blob)));
  });

  it('keeps the blobs apart when one overflows the buffer, with the same bytes', () => {
    const small = Buffer.alloc(blobs[0]!.length + blobs[1]!.length); // the third blob does not fit
    const split = fill(new PackBuilder(small), blobs).seal();
    const unbuffered = fill(new PackBuilder(), blobs).seal();
    expect(split.parts.length).toBeGreaterThan(1);
    expect(Buffer.concat(split.parts).equals(Buffer.concat(unbuffered.parts))).toBe(true);
    expect(split.id).toBe(unbuffered.id);
  });
});

/**
 * A local store whose puts of packs wait until `release` is called, counting them; it says its
 * writers wait for puts, as S3's does.
 */
class HeldPutStore extends LocalRepositoryStore {
  override readonly concurrentPuts = 2;
  readonly writerWaitsForPuts = true;
  packPuts = 0;
  private held: (() => void)[] = [];
  private releasing = false;

  override async put(key: string, parts: readonly Uint8Array[]): Promise<void> {
    if (key.startsWith('packs/')) {
      this.packPuts += 1;
      if (!this.releasing) await new Promise<void>((resolve) => this.held.push(resolve));
    }
    await super.put(key, parts);
  }

  release(): void {
    this.releasing = true;
    for (const resolve of this.held.splice(0)) resolve();
  }
}

/**
 * Adds incompressible blobs of the largest chunk size to `store`'s writer until one is not taken
 * within a second (the writer waits for room): how many were taken, and that last add.
 */
async function fillUntilHeld(store: RepositoryStore) {
  const writer = (await Repository.open(store)).writer();
  for (let taken = 0; taken < PER_PACK * 6; taken++) {
    const add = writer.add('data', randomBytes(CHUNK_SIZES.max));
    const took = await Promise.race([add.then(() => true), sleep(1000).then(() => false)]);
    if (!took) return { writer, taken, waiting: add };
  }
  throw new Error('the writer never waited for its puts');
}

/** Blobs of the largest chunk size that fill a pack. */
const PER_PACK = Math.ceil(PACK_TARGET / CHUNK_SIZES.max);

describe('BlobWriter on a store whose puts are held', () => {
  it('stops taking blobs once every put is busy, when the store says writers wait for puts', async () => {
    const store = new HeldPutStore(await undo.dir('aerie-pack-writing-'));
    const { writer, taken, waiting } = await fillUntilHeld(store);
    // Two packs are being put; the blobs taken since fill at most the open pack (those still on
    // their way to the compressing thread land in it).
    expect(store.packPuts).toBe(store.concurrentPuts);
    expect(taken).toBeGreaterThanOrEqual(store.concurrentPuts * PER_PACK);
    expect(taken).toBeLessThanOrEqual((store.concurrentPuts + 1) * PER_PACK);

    store.release();
    await waiting;
    const totals = await writer.finish();
    expect(totals.blobs).toBe(taken + 1);
    expect(totals.packs).toBe(Math.ceil((taken + 1) / PER_PACK));
    expect(totals.indexKeys).toHaveLength(1);
  });

  it('queues one sealed pack behind the puts otherwise', async () => {
    const store = new HeldPutStore(await undo.dir('aerie-pack-writing-'));
    Object.defineProperty(store, 'writerWaitsForPuts', { value: false });
    const { writer, taken, waiting } = await fillUntilHeld(store);
    expect(taken).toBeGreaterThan((store.concurrentPuts + 1) * PER_PACK);
    store.release();
    await waiting;
    expect((await writer.finish()).blobs).toBe(taken + 1);
  });
});

describe('BlobWriter of many blobs', () => {
  it('lists them in index objects of at most INDEX_BLOBS blobs as packs are put', async () => {
    const store = new LocalRepositoryStore(await undo.dir('aerie-pack-writing-'));
    const repository = await Repository.open(store);
    const writer = repository.writer();
    const count = 2 * INDEX_BLOBS + 500;
    // Incompressible blobs of 2 KiB: a pack holds about 4,000, so index objects come before the end.
    const blobs = Array.from({ length: count }, () => randomBytes(2048));
    const seen: number[] = [];
    for (const [n, blob] of blobs.entries()) {
      await writer.add('data', blob);
      if (n % 4000 === 0) seen.push((await store.list('index/')).length);
    }
    // Index objects appeared while blobs were still being added, not only at the end.
    expect(seen.some((objects) => objects > 0)).toBe(true);
    // The writer still knows every blob (the repository's view, once an index lists them).
    for (const blob of [blobs[0]!, blobs[INDEX_BLOBS]!, blobs[count - 1]!])
      expect(await writer.add('data', blob)).toBe(false);
    const totals = await writer.finish();
    expect(totals.blobs).toBe(count);
    expect(totals.indexKeys.length).toBeGreaterThanOrEqual(2);

    const listed = await store.list('index/');
    expect(listed.map((o) => o.key).sort()).toEqual([...totals.indexKeys].sort());
    for (const { key } of listed) {
      const lines = parseIndex(key, await store.get(key)).flatMap((pack) => pack.blobs);
      expect(lines.length).toBeLessThanOrEqual(INDEX_BLOBS + 4096);
    }
    const reopened = await Repository.open(store);
    for (const blob of blobs) expect(reopened.has(blobId(blob))).toBe(true);
    expect(await reopened.readBlob(blobId(blobs[count - 1]!))).toEqual(blobs[count - 1]);
  });
});
