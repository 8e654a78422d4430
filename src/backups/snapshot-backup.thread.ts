/**
 * Thread entry for `snapshotVolume`. It starts the compressing thread first, so that thread loads
 * while this one loads the walk (each takes about a tenth of a second), then runs the work
 * (snapshot-backup-work.ts). Both are background work, behind the thread answering HTTP: the
 * priority is lowered before the compressing thread is made, which takes this thread's.
 */
import { lowerThreadPriority } from '../shared/thread-priority.ts';
import { threadEntry } from '../shared/thread.ts';
import { startBlobCompressor } from '../storage/repository/blob-compressor.ts';

lowerThreadPriority();
startBlobCompressor();
await import(threadEntry(import.meta.url, './snapshot-backup-work').href);
