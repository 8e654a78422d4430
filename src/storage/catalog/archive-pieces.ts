/**
 * The pieces of a .tar.gz backup (gzip-members.ts), kept beside its catalog so that one path can be
 * read from the pieces that hold it alone: `<catalog dir>/archive-pieces.bin`, one record of
 * RECORD bytes per piece, in file order (so by tar offset too), little-endian:
 *
 *   0   file offset (u64)      8  compressed length (u64)    16  tar offset (u64)
 *   24  SHA-256 (32 bytes)     56 flags (bit 0: a gzip member starts here)    57..63 zero
 *
 * A piece's tar offset is where its member's tar begins; a piece inside a stream read as one has
 * its stream's. Found by binary search, a few small reads however big the archive.
 */
import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ArchivePiece } from '../archive/gzip-members.ts';

export const PIECES_FILE = 'archive-pieces.bin';
const RECORD = 64;
const ENTRY = 1;

/** What reading `[start, end)` of the tar takes: the pieces, from one where inflation can begin. */
export interface ArchiveSlice {
  /** The stretch of tar wanted. */
  start: number;
  end: number;
  /** Where the tar the first piece inflates to begins. */
  tarOffset: number;
  /** Consecutive in the file, from pieces[0].offset on. */
  pieces: { offset: number; length: number; sha256: string }[];
}

export async function writePieces(dir: string, pieces: readonly ArchivePiece[]): Promise<void> {
  const table = Buffer.alloc(pieces.length * RECORD);
  pieces.forEach((piece, i) => {
    const at = i * RECORD;
    table.writeBigUInt64LE(BigInt(piece.offset), at);
    table.writeBigUInt64LE(BigInt(piece.length), at + 8);
    table.writeBigUInt64LE(BigInt(piece.tarOffset), at + 16);
    piece.sha256.copy(table, at + 24);
    table[at + 56] = piece.entry ? ENTRY : 0;
  });
  await writeFile(path.join(dir, PIECES_FILE), table);
}

interface Record {
  offset: number;
  length: number;
  tarOffset: number;
  sha256: string;
  entry: boolean;
}

/**
 * The pieces that hold `[start, end)` of the tar, per the table of `count` pieces in the catalog
 * in `dir`; null when the table is not there or not whole (the caller reads the archive whole).
 */
export async function piecesCovering(
  dir: string,
  count: number,
  span: { start: number; end: number },
): Promise<ArchiveSlice | null> {
  let file;
  try {
    file = await open(path.join(dir, PIECES_FILE), 'r');
  } catch {
    return null;
  }
  try {
    if ((await file.stat()).size !== count * RECORD || count === 0) return null;
    const record = async (i: number): Promise<Record> => {
      const bytes = Buffer.alloc(RECORD);
      await file.read(bytes, 0, RECORD, i * RECORD);
      return decode(bytes);
    };
    /** The first piece whose tar offset is over `tar` (or `tar` itself, when `orEqual`); `count` if none. */
    const firstAfter = async (tar: number, orEqual: boolean): Promise<number> => {
      let low = 0;
      let high = count;
      while (low < high) {
        const middle = (low + high) >>> 1;
        const at = (await record(middle)).tarOffset;
        if (at > tar || (orEqual && at === tar)) high = middle;
        else low = middle + 1;
      }
      return low;
    };
    // The last piece starting at or before `start`, then the first piece of the same tar offset:
    // a member's start, or the start of the stream it is in.
    const last = (await firstAfter(span.start, false)) - 1;
    if (last < 0) return null;
    const from = await firstAfter((await record(last)).tarOffset, true);
    // Up to the first member that begins at or after `end`.
    const to = Math.max(from + 1, await firstAfter(span.end, true));
    const bytes = Buffer.alloc((to - from) * RECORD);
    await file.read(bytes, 0, bytes.length, from * RECORD);
    const records = Array.from({ length: to - from }, (_, i) =>
      decode(bytes.subarray(i * RECORD, (i + 1) * RECORD)),
    );
    if (!records[0]!.entry) return null;
    return {
      start: span.start,
      end: span.end,
      tarOffset: records[0]!.tarOffset,
      pieces: records.map(({ offset, length, sha256 }) => ({ offset, length, sha256 })),
    };
  } finally {
    await file.close();
  }
}

function decode(bytes: Buffer): Record {
  return {
    offset: Number(bytes.readBigUInt64LE(0)),
    length: Number(bytes.readBigUInt64LE(8)),
    tarOffset: Number(bytes.readBigUInt64LE(16)),
    sha256: bytes.subarray(24, 56).toString('hex'),
    entry: (bytes[56]! & ENTRY) !== 0,
  };
}

/**
 * The pieces that hold every one of `spans` (stretches of the tar, each whole entries), as few
 * slices as read them once: spans that touch are one, and two slices that share a piece are read
 * as one (the entries between them are in the same pieces). In tar order; null as piecesCovering.
 */
export async function slicesCovering(
  dir: string,
  count: number,
  spans: readonly (readonly [number, number])[],
): Promise<ArchiveSlice[] | null> {
  const merged: [number, number][] = [];
  for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
    const last = merged[merged.length - 1];
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  const slices: ArchiveSlice[] = [];
  for (const [start, end] of merged) {
    const slice = await piecesCovering(dir, count, { start, end });
    if (slice === null) return null;
    const last = slices[slices.length - 1];
    const lastPiece = last?.pieces[last.pieces.length - 1];
    if (last === undefined || lastPiece === undefined || slice.pieces[0]!.offset > lastPiece.offset) {
      slices.push(slice);
      continue;
    }
    // Shares a piece with the one before: read on from there.
    last.end = slice.end;
    last.pieces.push(...slice.pieces.filter((piece) => piece.offset > lastPiece.offset));
  }
  return slices;
}
