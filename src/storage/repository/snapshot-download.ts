/**
 * A snapshot's `.tar.gz` (snapshot-tar.ts) made in a worker thread of its own: the index is loaded,
 * the chunks read (into pooled buffers, each checked beside it, as a restore reads them) and the
 * archive compressed there; the thread answering HTTP only relays the compressed members, a few
 * at a time. Its memory stays that of the members in flight, whatever the backup's size.
 */
import { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { startThread, threadEntry } from '../../shared/thread.ts';
import { ArchiveError, type ArchiveFailure } from '../archive/archive.types.ts';
import type { RepositoryLocation } from './repository-location.ts';

/**
 * The members come from another thread, their memory already allocated: V8 does not count it as
 * its own and collected the sent members only after hundreds of MB. A young collection every
 * this much frees those the socket is done with.
 */
const COLLECT_EVERY = 8 * 1024 * 1024;

/** Members the thread may send before the stream's reader has taken them. */
export const MEMBERS_AHEAD = 4;

export interface SnapshotDownloadInput {
  repository: RepositoryLocation;
  backupId: string;
  sha256: string | null;
  /** Path components of a directory of the snapshot to send instead of its root (none: the root). */
  parts: string[];
}

export type SnapshotDownloadMessage =
  | { ready: true; found: boolean }
  | { member: Uint8Array }
  | { end: true }
  | { error: string; reason?: ArchiveFailure };

/**
 * Opens the snapshot in a thread; resolves once it is open (and the directory found): with the
 * stream of the `.tar.gz`, or null when the snapshot has no such directory. A snapshot that is
 * missing, not the backup's, or damaged is an ArchiveError before any byte is sent.
 */
export function snapshotTarGzInThread(input: SnapshotDownloadInput): Promise<Readable | null> {
  return new Promise((resolve, reject) => {
    let owed = 0;
    let opened = false;
    let received = 0;
    const worker: Worker = startThread(threadEntry(import.meta.url, './snapshot-download.thread'), input, {
      maxYoungGenerationSizeMb: 8,
    });
    const out = new Readable({
      read() {
        for (; owed > 0; owed--) worker.postMessage({ taken: 1 });
      },
      destroy(error, callback) {
        void worker.terminate();
        callback(error);
      },
    });
    const fail = (error: Error) => {
      if (opened) out.destroy(error);
      else reject(error);
      void worker.terminate();
    };
    worker.on('message', (message: SnapshotDownloadMessage) => {
      if ('ready' in message) {
        opened = true;
        if (message.found) resolve(out);
        else {
          resolve(null);
          void worker.terminate();
        }
      } else if ('member' in message) {
        const { buffer, byteOffset, byteLength } = message.member;
        received += byteLength;
        if (received >= COLLECT_EVERY) {
          received = 0;
          collectGarbage('young');
        }
        if (out.push(Buffer.from(buffer, byteOffset, byteLength))) worker.postMessage({ taken: 1 });
        else owed++;
      } else if ('end' in message) {
        out.push(null);
        void worker.terminate();
      } else {
        fail(
          message.reason === undefined
            ? new Error(message.error)
            : new ArchiveError(message.reason, message.error),
        );
      }
    });
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (!opened) reject(new Error(`the download thread ended (${code})`));
    });
  });
}
