/**
 * gunzip that tells where it is: a stage that turns an archive's bytes into its tar, as
 * createGunzip does, and notes on the way where each gzip member lies in the file and in the tar,
 * with the SHA-256 of its compressed bytes. With that table (an ArchivePiece per member), one path
 * of the archive can later be read from the members that hold it alone, each proved to be what
 * was seen here before a byte of it is inflated.
 *
 * Aerie's own archives are a member per MiB of tar (parallel-gzip.ts): each member is inflated
 * here whole, in one call, its CRC-32 and length checked. A member this does not take as it is (one
 * over MEMBER_LOOKAHEAD compressed or MEMBER_OUTPUT inflated, as a foreign archive made by a
 * single gzip has, or anything odd) ends that: from there on the bytes go through Node's own
 * gunzip, which judges them as a plain read would (same errors, same messages), and are noted as
 * pieces of PIECE_BYTES whose inflation can only begin at the first of them. Memory stays bounded
 * either way: a member's worth of input and output at most.
 */
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { crc32, createGunzip, inflateRawSync, type Gunzip } from 'node:zlib';

/** Compressed bytes looked at for one member: a member longer than this is read as a stream. */
export const MEMBER_LOOKAHEAD = 4 * 1024 * 1024;
/** The most tar bytes one member inflated in one call may give. */
const MEMBER_OUTPUT = 16 * 1024 * 1024;
/** Compressed bytes per piece past the point where members are no longer told apart. */
export const PIECE_BYTES = 1024 * 1024;

/** A stretch of the archive file: a gzip member, or a piece of a stream read as one. */
export interface ArchivePiece {
  /** Where its compressed bytes are in the file, and how many. */
  offset: number;
  length: number;
  /** Where the tar it inflates to begins (for a piece that starts no member: where its stream does). */
  tarOffset: number;
  /** Whether a gzip member starts here (inflation can begin with this piece). */
  entry: boolean;
  /** SHA-256 of its compressed bytes. */
  sha256: Buffer;
}

const FHCRC = 0x02;
const FEXTRA = 0x04;
const FNAME = 0x08;
const FCOMMENT = 0x10;
const RESERVED = 0xe0;

export class GzipMembers extends Transform {
  /** The archive's pieces so far, in order; whole once the stage has ended. */
  readonly pieces: ArchivePiece[] = [];
  /** Tar bytes given so far. */
  tarBytes = 0;
  private mode: 'members' | 'stream' | 'ignored' = 'members';
  /** Input not yet taken into a member: buffer[from, to), at file offset `offset`. */
  private buffer = Buffer.alloc(0);
  private from = 0;
  private to = 0;
  private offset = 0;
  /** The stream the bytes go through once members are no longer told apart. */
  private gunzip: Gunzip | null = null;
  private piece: { offset: number; length: number; hash: ReturnType<typeof createHash> } | null = null;
  /** Where the tar of the stream read as one begins, and whether its first piece is still to come. */
  private streamTarOffset = 0;
  private streamFirst = true;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.mode === 'members') {
      this.append(chunk);
      if (!this.members(false)) return done();
      chunk = this.takeBuffered();
    }
    if (this.mode === 'stream') return this.stream(chunk, done);
    done(); // 'ignored': zeros after the last member, and whatever follows them, as gunzip ignores them
  }

  override _flush(done: TransformCallback): void {
    if (this.mode === 'members') {
      if (!this.members(true)) return done();
      this.stream(this.takeBuffered(), () => undefined);
    }
    if (this.mode !== 'stream') return done();
    this.closePiece();
    const gunzip = this.gunzip!;
    gunzip.once('end', () => done());
    gunzip.end();
  }

  override _read(size: number): void {
    this.gunzip?.resume();
    super._read(size);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.gunzip?.destroy();
    done(error);
  }

  private append(chunk: Buffer): void {
    const buffered = this.to - this.from;
    if (this.to + chunk.length > this.buffer.length) {
      // Moved to the front, into a bigger buffer if need be: a member's worth and a chunk at most.
      const size = Math.max(this.buffer.length, buffered + chunk.length, MEMBER_LOOKAHEAD * 2);
      const next = size > this.buffer.length ? Buffer.allocUnsafe(size) : this.buffer;
      this.buffer.copy(next, 0, this.from, this.to);
      this.buffer = next;
      this.from = 0;
      this.to = buffered;
    }
    chunk.copy(this.buffer, this.to);
    this.to += chunk.length;
  }

  private takeBuffered(): Buffer {
    const rest = Buffer.from(this.buffer.subarray(this.from, this.to));
    this.buffer = Buffer.alloc(0);
    this.from = this.to = 0;
    return rest;
  }

  /**
   * Takes every whole member buffered (at the end of the input, `final`, whatever is left); true
   * when what is left is to go through gunzip as a stream.
   */
  private members(final: boolean): boolean {
    for (;;) {
      const buffered = this.to - this.from;
      if (buffered === 0) {
        // No member at all: gunzip says what is wrong with an empty file.
        return final && this.pieces.length === 0 && this.toStream();
      }
      // After a member, a zero byte ends the gzip data for gunzip: the rest is not read.
      if (this.pieces.length > 0 && this.buffer[this.from] === 0) {
        this.mode = 'ignored';
        return false;
      }
      if (buffered < MEMBER_LOOKAHEAD && !final) return false;
      const data = this.buffer.subarray(this.from, this.to);
      const member = wholeMember(data);
      if (member === null) return this.toStream();
      const bytes = data.subarray(0, member.length);
      this.pieces.push({
        offset: this.offset,
        length: member.length,
        tarOffset: this.tarBytes,
        entry: true,
        sha256: createHash('sha256').update(bytes).digest(),
      });
      this.offset += member.length;
      this.from += member.length;
      this.tarBytes += member.tar.length;
      if (member.tar.length > 0) this.push(member.tar);
    }
  }

  /** From here on, the bytes go through gunzip, noted as pieces of PIECE_BYTES. */
  private toStream(): true {
    this.mode = 'stream';
    this.streamTarOffset = this.tarBytes;
    const gunzip = createGunzip();
    gunzip.on('data', (tar: Buffer) => {
      this.tarBytes += tar.length;
      if (!this.push(tar)) gunzip.pause();
    });
    gunzip.on('error', (error) => this.destroy(error));
    this.gunzip = gunzip;
    return true;
  }

  private stream(chunk: Buffer, done: TransformCallback): void {
    for (let at = 0; at < chunk.length;) {
      this.piece ??= { offset: this.offset, length: 0, hash: createHash('sha256') };
      const taken = Math.min(chunk.length - at, PIECE_BYTES - this.piece.length);
      this.piece.hash.update(chunk.subarray(at, at + taken));
      this.piece.length += taken;
      this.offset += taken;
      at += taken;
      if (this.piece.length === PIECE_BYTES) this.closePiece();
    }
    this.gunzip!.write(chunk, () => done());
  }

  private closePiece(): void {
    const piece = this.piece;
    if (piece === null || piece.length === 0) return;
    this.pieces.push({
      offset: piece.offset,
      length: piece.length,
      tarOffset: this.streamTarOffset,
      entry: this.streamFirst,
      sha256: piece.hash.digest(),
    });
    this.streamFirst = false;
    this.piece = null;
  }
}

/**
 * The gzip member at the start of `data` (RFC 1952), inflated: its length in `data` and its tar
 * bytes, CRC-32 and length checked; null when it is not one this takes whole (incomplete, too
 * big, damaged, or with header flags gunzip refuses): the caller hands it to gunzip then.
 */
export function wholeMember(data: Buffer): { length: number; tar: Buffer } | null {
  const header = headerLength(data);
  if (header === null) return null;
  let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    inflated = inflateRawSync(data.subarray(header), {
      info: true,
      maxOutputLength: MEMBER_OUTPUT,
    }) as unknown as typeof inflated;
  } catch {
    return null;
  }
  const trailer = header + inflated.engine.bytesWritten;
  if (trailer + 8 > data.length) return null;
  const tar = inflated.buffer;
  if (data.readUInt32LE(trailer) !== crc32(tar) || data.readUInt32LE(trailer + 4) !== tar.length % 2 ** 32)
    return null;
  return { length: trailer + 8, tar };
}

/** The length of the gzip header at the start of `data`; null if it is not whole there or not one to take. */
function headerLength(data: Buffer): number | null {
  if (data.length < 10 || data[0] !== 0x1f || data[1] !== 0x8b || data[2] !== 8) return null;
  const flags = data[3]!;
  if ((flags & RESERVED) !== 0) return null;
  let at = 10;
  if ((flags & FEXTRA) !== 0) {
    if (at + 2 > data.length) return null;
    at += 2 + data.readUInt16LE(at);
  }
  for (const flag of [FNAME, FCOMMENT]) {
    if ((flags & flag) === 0) continue;
    const nul = data.indexOf(0, at);
    if (nul === -1) return null;
    at = nul + 1;
  }
  if ((flags & FHCRC) !== 0) {
    if (at + 2 > data.length) return null;
    if (data.readUInt16LE(at) !== (crc32(data.subarray(0, at)) & 0xffff)) return null;
    at += 2;
  }
  return at <= data.length ? at : null;
}
