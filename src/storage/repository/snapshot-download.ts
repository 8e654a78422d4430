/**
 * A snapshot's `.tar.gz` (snapshot-tar.ts) made in a child process of its own, whose stdout the
 * server relays: the index is loaded, the chunks read (into pooled buffers, checked as they
 * arrive) and the archive compressed there (by the process's main thread and one compression
 * thread). The server's own memory does not grow by a download's (its threads, its buffers, the
 * memory the C allocator keeps once they are freed), and all of it goes back to the system when
 * the download ends; a download that fails, or is killed, takes nothing else down with it.
 */
import { fork } from 'node:child_process';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { threadEntry } from '../../shared/thread.ts';
import { ArchiveError, type ArchiveFailure } from '../archive/archive.types.ts';
import type { RepositoryLocation } from './repository-location.ts';

/**
 * Bytes relayed between two collections of the young generation: what came from the process is
 * allocated outside V8's heap, and V8, which collects as its heap grows, let 60 MB of it build up.
 */
const COLLECT_EVERY = 8 * 1024 * 1024;

/** Downloads this thread is relaying, and the young collections they forced since the last `reduce`. */
let relaying = 0;
let forcedCollections = 0;

/**
 * A relay has ended. Once none is left, if relays forced young collections since the last time:
 * a collection that gives back what those made V8 grow its young generation to. The chunks in
 * flight live through each forced collection, and V8 grows its young generation with what
 * survives (from 1 MiB after the server's start to 8 MiB in a first 1 GB download, 16 MiB in the
 * next), then keeps it while the thread is busy. On the bench (bench/backup-browse-s3.ts: three
 * rounds of a catalog, a one-file download, a one-file restore and a download of the whole 1 GB
 * backup), the server's peak rose round after round, 171, 181, 186 MiB; given back after each
 * download, 170, 176, 176 MiB. It costs the main thread about 65 ms, once downloads that relayed
 * more than 8 MB are over.
 */
function relayEnded(): void {
  relaying -= 1;
  if (relaying > 0 || forcedCollections === 0) return;
  forcedCollections = 0;
  collectGarbage('reduce');
}

export interface SnapshotDownloadInput {
  repository: RepositoryLocation;
  backupId: string;
  sha256: string | null;
  /** Path components of a directory of the snapshot to send instead of its root (none: the root). */
  parts: string[];
}

/** What a download process says on its IPC channel; its stdout carries the `.tar.gz` itself. */
export type DownloadProcessMessage =
  { ready: true; found: boolean } | { end: true } | { error: string; reason?: ArchiveFailure };

/**
 * The download process's settings. A young generation of 1 MB: the process makes large buffers
 * and few objects. Allocations of 128 KB and more are mapped on their own and unmapped when freed
 * (the C allocator would otherwise keep a freed buffer's memory, raising that threshold as it
 * goes): the process holds what it uses, no more.
 */
const PROCESS_FLAGS = ['--max-semi-space-size=1'];
const PROCESS_ENV = { MALLOC_MMAP_THRESHOLD_: String(128 * 1024) };

/**
 * Starts the download process; resolves once the snapshot is open (and the directory found) with
 * the stream of the `.tar.gz`, or null when the snapshot has no such directory. A snapshot that
 * is missing, not the backup's, or damaged is an ArchiveError before any byte is sent. The stream
 * ends only once the process has said it sent everything and exited cleanly: a process that dies
 * part-way fails the stream, however much it had sent. Destroying the stream kills the process
 * (it only reads).
 */
export function snapshotTarGzInProcess(input: SnapshotDownloadInput): Promise<Readable | null> {
  const entry = threadEntry(import.meta.url, './snapshot-download.process');
  const typescript = entry.pathname.endsWith('.ts');
  const child = fork(fileURLToPath(entry), [], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    serialization: 'advanced', // the input as a thread's workerData would be: a structured clone
    execArgv: [...PROCESS_FLAGS, ...(typescript ? ['--import', import.meta.resolve('tsx')] : [])],
    env: { ...process.env, ...PROCESS_ENV },
  });
  const stdout = child.stdout!;
  return new Promise((resolve, reject) => {
    let opened = false;
    let ended = false;
    let failure: Error | null = null;
    const out = new Readable({
      read() {
        stdout.resume();
      },
      destroy(error, callback) {
        child.kill('SIGKILL');
        callback(error);
      },
    });
    let relayed = 0;
    stdout.on('data', (chunk: Buffer) => {
      relayed += chunk.length;
      if (relayed >= COLLECT_EVERY) {
        relayed = 0;
        forcedCollections += 1;
        collectGarbage('young');
      }
      if (!out.push(chunk)) stdout.pause();
    });
    child.on('message', (message: DownloadProcessMessage) => {
      if ('ready' in message) {
        opened = true;
        if (!message.found) out.destroy(); // not handed to anyone: nothing to fail
        resolve(message.found ? out : null);
      } else if ('end' in message) ended = true;
      else
        failure =
          message.reason === undefined
            ? new Error(message.error)
            : new ArchiveError(message.reason, message.error);
    });
    child.on('error', (error) => (failure ??= error));
    // Its stdout read to the end, and the process gone.
    relaying += 1;
    child.on('close', (code, signal) => {
      // After what is pushed now has gone on its way.
      setImmediate(relayEnded);
      if (opened && ended && code === 0) {
        out.push(null);
        return;
      }
      const error = failure ?? new Error(`the download process ended (${signal ?? code}) before it finished`);
      if (!opened) reject(error);
      else if (!out.destroyed) out.destroy(error);
    });
    child.send(input);
  });
}
