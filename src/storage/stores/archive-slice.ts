/**
 * Reads the entries in one stretch of a .tar.gz backup's tar from the pieces of the archive that
 * hold it alone (archive-pieces.ts): one range of the file (read at its offset locally, one ranged
 * GET of an S3 object), each piece checked against the SHA-256 its catalog noted before a byte of
 * it is inflated, the inflated tar cut to the stretch (an end-of-archive marker after it) and
 * parsed as a whole archive is (archive-reader.ts). Memory stays bounded: a piece or two in
 * flight, whatever the stretch.
 */
import { createHash } from 'node:crypto';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { readArchive } from '../archive/archive-reader.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import type { ArchiveSlice } from '../catalog/archive-pieces.ts';
import type { ArchiveLocation } from './backup-storage.ts';

export interface SliceReadOptions {
  signal?: AbortSignal;
  /** Told of each chunk of the archive read (its length). */
  onRead?: (bytes: number) => void;
}

/**
 * Hands each entry in `[slice.start, slice.end)` of the tar to `onEntry` (as readArchive does);
 * rejects with an ArchiveError 'checksum-mismatch' as soon as a piece is not what the catalog
 * says (before anything of it is handed on).
 */
export async function readArchiveSlice(
  archive: ArchiveLocation,
  slice: ArchiveSlice,
  onEntry: Parameters<typeof readArchive>[1],
  options: SliceReadOptions = {},
): Promise<void> {
  const first = slice.pieces[0]!;
  const last = slice.pieces[slice.pieces.length - 1]!;
  const range = { offset: first.offset, length: last.offset + last.length - first.offset };
  // The S3 client is loaded only for an archive in S3 (see stage-restore.thread.ts).
  const { withArchiveRange } = await import('./s3-object.ts');
  await withArchiveRange(archive, range, async (bytes) => {
    const gunzip = createGunzip();
    // A piece is read only once the gunzip wants more: nothing is read past the stretch but what
    // is in flight. An error (a piece that is not the catalog's) reaches the gunzip, and the tar.
    const pieces = Readable.from(checkedPieces(bytes, slice.pieces, options.onRead), { highWaterMark: 1 });
    pipeline(pieces, gunzip, () => undefined);
    await readArchive(Readable.from(tarSpan(gunzip, slice)), onEntry, {
      inflate: 'none',
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  });
}

/** The pieces' bytes, one piece at a time, each only once it has proved to be the piece the catalog noted. */
async function* checkedPieces(
  bytes: Readable,
  pieces: ArchiveSlice['pieces'],
  onRead: ((bytes: number) => void) | undefined,
): AsyncGenerator<Buffer> {
  const input = bytes[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let carry: Buffer = Buffer.alloc(0);
  try {
    for (const piece of pieces) {
      const buffer = Buffer.allocUnsafe(piece.length);
      for (let filled = 0; filled < piece.length;) {
        if (carry.length === 0) {
          const next = await input.next();
          if (next.done === true)
            throw new ArchiveError('corrupt', 'the backup archive is shorter than its catalog says');
          carry = next.value;
          onRead?.(carry.length);
        }
        const taken = carry.copy(buffer, filled, 0, Math.min(carry.length, piece.length - filled));
        filled += taken;
        carry = carry.subarray(taken);
      }
      if (createHash('sha256').update(buffer).digest('hex') !== piece.sha256)
        throw new ArchiveError('checksum-mismatch', 'the backup archive does not match its checksum');
      yield buffer;
    }
  } finally {
    await input.return?.();
  }
}

/** The tar in `[slice.start, slice.end)` of `tar` (which starts at slice.tarOffset), then two zero blocks. */
async function* tarSpan(tar: AsyncIterable<Buffer>, slice: ArchiveSlice): AsyncGenerator<Buffer> {
  let at = slice.tarOffset;
  try {
    for await (const chunk of tar) {
      const from = Math.max(slice.start - at, 0);
      const to = Math.min(slice.end - at, chunk.length);
      if (to > from) yield chunk.subarray(from, to);
      at += chunk.length;
      if (at >= slice.end) break;
    }
  } catch (error) {
    if (error instanceof ArchiveError) throw error;
    throw new ArchiveError(
      'corrupt',
      `gzip data is damaged: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (at < slice.end) throw new ArchiveError('corrupt', 'the backup archive ends before the path');
  yield Buffer.alloc(1024); // end-of-archive marker
}
