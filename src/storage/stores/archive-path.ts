/**
 * One path of a .tar.gz backup, sent as it is read: a file's content, or a directory as a .tar.gz
 * of what it holds (its paths relative to it). The archive is read in a worker thread (gunzip, tar
 * parsing, and for a directory the new archive's compression), and the bytes come back a few
 * chunks at a time: nothing is written to disk, memory stays bounded, and the thread answering
 * HTTP only copies bytes out.
 *
 * With the archive's pieces from its catalog (`slice`), only the pieces that hold the path are
 * read (a local file at their offset, one ranged GET of an S3 object), each checked against the
 * SHA-256 the catalog noted before a byte of it is inflated. Without them (a catalog made before
 * pieces were noted), the archive is read whole, its checksum checked before the last bytes go
 * out.
 */
import { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import { startThread, threadEntry } from '../../shared/thread.ts';
import { ArchiveError, type ArchiveFailure } from '../archive/archive.types.ts';
import type { ArchiveSlice } from '../catalog/archive-pieces.ts';
import type { ArchiveLocation } from './backup-storage.ts';

/** Chunks the thread may send before the stream's reader has taken them. */
export const CHUNKS_AHEAD = 4;

export interface ArchivePathInput {
  archive: ArchiveLocation;
  /** The path in the archive (as checkEntryPath gives it: no leading `/`). */
  rel: string;
  kind: 'file' | 'directory';
  /** The backup's checksum: the archive is read whole and checked against it before the end is sent. */
  sha256: string | null;
  /** Where the path is in the tar, and the pieces that hold it: read in place of the whole archive. */
  slice?: ArchiveSlice;
}

/** What the thread sends: bytes, then the end (with the archive bytes read), or a failure. */
export type ArchivePathMessage =
  | { chunk: Uint8Array }
  | { end: true; found: boolean; archiveBytes: number }
  | { error: string; reason?: ArchiveFailure };

/** What the stream tells the thread: one more chunk was taken. */
export interface ArchivePathCredit {
  taken: 1;
}

/**
 * A stream of `input.rel` from the archive; it fails if the archive does not hold it (or is
 * damaged: an ArchiveError). `onArchiveBytes` is told how many bytes of the archive were read.
 */
export function archivePathStream(
  input: ArchivePathInput,
  onArchiveBytes?: (bytes: number) => void,
): Readable {
  let thread: Worker | null = null;
  let owed = 0; // chunks received and pushed while the reader wanted no more: credited on _read
  const out = new Readable({
    read() {
      if (thread === null) {
        thread = start();
        return;
      }
      for (; owed > 0; owed--) thread.postMessage({ taken: 1 } satisfies ArchivePathCredit);
    },
    destroy(error, callback) {
      void thread?.terminate();
      callback(error);
    },
  });
  const start = (): Worker => {
    const worker = startThread(threadEntry(import.meta.url, './archive-path.thread'), input, {
      maxYoungGenerationSizeMb: 8,
    });
    worker.on('message', (message: ArchivePathMessage) => {
      if ('chunk' in message) {
        const buffer = Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength);
        if (out.push(buffer)) worker.postMessage({ taken: 1 } satisfies ArchivePathCredit);
        else owed++;
      } else if ('end' in message) {
        onArchiveBytes?.(message.archiveBytes);
        if (message.found) out.push(null);
        else out.destroy(new Error(`the backup has no ${input.rel}`));
        void worker.terminate();
      } else
        out.destroy(
          message.reason === undefined
            ? new Error(message.error)
            : new ArchiveError(message.reason, message.error),
        );
    });
    worker.on('error', (error) => out.destroy(error));
    return worker;
  };
  return out;
}
