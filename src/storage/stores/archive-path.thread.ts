/**
 * Thread entry for archivePathStream: reads the archive (or the pieces of it that hold the path),
 * sends the path's bytes back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createHash } from 'node:crypto';
import { createGzip } from 'node:zlib';
import { lowerThreadPriority } from '../../shared/thread-priority.ts';
import { readArchive } from '../archive/archive-reader.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import { readArchiveSlice } from './archive-slice.ts';
import { CHUNKS_AHEAD, type ArchivePathInput, type ArchivePathMessage } from './archive-path.ts';
import { tarHeader } from '../archive/tar-header.ts';

const { archive, rel, kind, sha256, slice } = workerData as ArchivePathInput;
const port = parentPort!;
lowerThreadPriority();

let ahead = 0;
let creditWaiter: (() => void) | null = null;
port.on('message', () => {
  ahead--;
  creditWaiter?.();
  creditWaiter = null;
});

/** Bytes of the archive read so far. */
let archiveBytes = 0;

/** Sends a copy of `bytes`, then waits while the reader is CHUNKS_AHEAD chunks behind. */
async function send(bytes: Uint8Array): Promise<void> {
  const chunk = Uint8Array.from(bytes);
  port.postMessage({ chunk } satisfies ArchivePathMessage, [chunk.buffer]);
  ahead++;
  while (ahead >= CHUNKS_AHEAD) await new Promise<void>((resolve) => (creditWaiter = resolve));
}

type OnEntry = Parameters<typeof readArchive>[1];

/**
 * Reads the whole archive, its SHA-256 taken on the way, handing each entry to `onEntry`; fails
 * once the read is over if the archive is not the backup's. What must not reach the reader before
 * that (the last bytes of what is sent) is held back by the caller until this resolves.
 */
async function readWhole(onEntry: OnEntry): Promise<void> {
  // The S3 client is loaded only for an archive in S3 (see stage-restore.thread.ts).
  const { withArchiveStream } = await import('./s3-object.ts');
  await withArchiveStream(archive, async (source) => {
    const hash = createHash('sha256');
    await readArchive(source, onEntry, {
      onFileData: (chunk) => {
        archiveBytes += chunk.length;
        hash.update(chunk);
      },
    });
    if (sha256 !== null && hash.digest('hex') !== sha256)
      throw new ArchiveError('checksum-mismatch', 'the backup archive does not match its checksum');
  });
}

/** The entries of the pieces that hold the path (each checked before inflating it), or of all the archive. */
function readEntries(onEntry: OnEntry): Promise<void> {
  if (slice === undefined) return readWhole(onEntry);
  return readArchiveSlice(archive, slice, onEntry, { onRead: (bytes) => (archiveBytes += bytes) });
}

/**
 * The file's bytes, all but its last chunk sent as they are read: the last goes only once what
 * was read has proved to be the backup's (the whole archive, or each piece before it is
 * inflated), so a reader of an archive that was swapped or damaged gets fewer bytes than the
 * file's length, never a whole file that is not the backup's.
 */
async function sendFile(): Promise<boolean> {
  let found = false;
  let held: Buffer | null = null;
  await readEntries(async (entry) => {
    if (found || entry.rel !== rel || entry.kind !== 'file') return;
    found = true;
    await entry.readBody(async (chunk) => {
      if (held !== null) await send(held);
      held = Buffer.from(chunk); // the reader's buffer may be reused
    });
  });
  if (held !== null) await send(held);
  return found;
}

/** The directory's entries as a new .tar.gz, in the archive's order, their paths relative to it. */
async function sendDirectory(): Promise<boolean> {
  const prefix = `${rel}/`;
  let found = false;
  const gzip = createGzip({ level: 6 });
  const pending: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => pending.push(chunk));
  const flush = async () => {
    for (let chunk = pending.shift(); chunk !== undefined; chunk = pending.shift()) await send(chunk);
  };
  const write = async (bytes: Buffer) => {
    if (!gzip.write(bytes)) await new Promise((resolve) => gzip.once('drain', resolve));
    await flush();
  };
  // The end of the .tar.gz is written only once what was read has proved to be the backup's.
  await readEntries(async (entry) => {
    if (entry.rel === rel && entry.kind === 'directory') found = true;
    if (!entry.rel.startsWith(prefix) || (entry.kind !== 'file' && entry.kind !== 'directory')) return;
    found = true;
    const inside = entry.rel.slice(prefix.length);
    const mtime = entry.tar.mtime?.getTime() ?? 0;
    const mode = entry.tar.mode ?? (entry.kind === 'directory' ? 0o755 : 0o644);
    if (entry.kind === 'directory') return write(tarHeader(`${inside}/`, 'Directory', mode, 0, mtime));
    await write(tarHeader(inside, 'File', mode, entry.tar.size, mtime));
    let written = 0;
    await entry.readBody(async (chunk) => {
      written += chunk.length;
      await write(chunk);
    });
    const padding = (512 - (written % 512)) % 512;
    if (padding > 0) await write(Buffer.alloc(padding));
  });
  await write(Buffer.alloc(1024)); // end-of-archive marker
  // 'end': the last compressed bytes have been read out (finish only says all were written in).
  await new Promise<void>((resolve) => {
    gzip.once('end', resolve);
    gzip.end();
  });
  await flush();
  return found;
}

async function main(): Promise<void> {
  const found = kind === 'file' ? await sendFile() : await sendDirectory();
  port.postMessage({ end: true, found, archiveBytes } satisfies ArchivePathMessage);
}

main().catch((error: unknown) =>
  port.postMessage({
    error: error instanceof Error ? error.message : String(error),
    ...(error instanceof ArchiveError ? { reason: error.reason } : {}),
  } satisfies ArchivePathMessage),
);
