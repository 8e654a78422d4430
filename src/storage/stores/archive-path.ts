/**
 * One path of a .tar.gz backup, sent as it is read: a file's content, or a directory as a .tar.gz
 * of what it holds (its paths relative to it). The archive is read in a worker thread (gunzip, tar
 * parsing, and for a directory the new archive's compression), whole, its checksum checked before
 * the last bytes go out, and the bytes come back a few chunks at a time: nothing is written to disk, memory stays
 * bounded, and the thread answering HTTP only copies bytes out.
 */
import { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import { startThread, threadEntry } from '../../shared/thread.ts';
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
}

/** What the thread sends: bytes, then the end (or a failure). */
export type ArchivePathMessage = { chunk: Uint8Array } | { end: true; found: boolean } | { error: string };

/** What the stream tells the thread: one more chunk was taken. */
export interface ArchivePathCredit {
  taken: 1;
}

/** A stream of `input.rel` from the archive; it fails if the archive does not hold it (or is damaged). */
export function archivePathStream(input: ArchivePathInput): Readable {
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
        if (message.found) out.push(null);
        else out.destroy(new Error(`the backup has no ${input.rel}`));
        void worker.terminate();
      } else out.destroy(new Error(message.error));
    });
    worker.on('error', (error) => out.destroy(error));
    return worker;
  };
  return out;
}
