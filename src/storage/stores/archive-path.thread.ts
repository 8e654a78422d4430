/** Thread entry for archivePathStream: reads the archive, sends the path's bytes back. */
import { parentPort, workerData } from 'node:worker_threads';
import { createGzip } from 'node:zlib';
import { lowerThreadPriority } from '../../shared/thread-priority.ts';
import { readArchive } from '../archive/archive-reader.ts';
import { CHUNKS_AHEAD, type ArchivePathInput, type ArchivePathMessage } from './archive-path.ts';
import { tarHeader } from '../archive/tar-header.ts';

const { archive, rel, kind } = workerData as ArchivePathInput;
const port = parentPort!;
lowerThreadPriority();

let ahead = 0;
let creditWaiter: (() => void) | null = null;
port.on('message', () => {
  ahead--;
  creditWaiter?.();
  creditWaiter = null;
});

/** Sends a copy of `bytes`, then waits while the reader is CHUNKS_AHEAD chunks behind. */
async function send(bytes: Uint8Array): Promise<void> {
  const chunk = Uint8Array.from(bytes);
  port.postMessage({ chunk } satisfies ArchivePathMessage, [chunk.buffer]);
  ahead++;
  while (ahead >= CHUNKS_AHEAD) await new Promise<void>((resolve) => (creditWaiter = resolve));
}

/** Thrown to stop reading once the file is sent. */
class Done extends Error {}

async function sendFile(source: string | import('node:stream').Readable): Promise<boolean> {
  let found = false;
  try {
    await readArchive(source, async (entry) => {
      if (entry.rel !== rel || entry.kind !== 'file') return;
      found = true;
      await entry.readBody((chunk) => send(chunk));
      throw new Done();
    });
  } catch (error) {
    if (!(error instanceof Done)) throw error;
  }
  return found;
}

/** The directory's entries as a new .tar.gz, in the archive's order, their paths relative to it. */
async function sendDirectory(source: string | import('node:stream').Readable): Promise<boolean> {
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
  await readArchive(source, async (entry) => {
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
  // The S3 client is loaded only for an archive in S3 (see stage-restore.thread.ts).
  const { withArchiveStream } = await import('./s3-object.ts');
  const found = await withArchiveStream(archive, (source) =>
    kind === 'file' ? sendFile(source) : sendDirectory(source),
  );
  port.postMessage({ end: true, found } satisfies ArchivePathMessage);
}

main().catch((error: unknown) =>
  port.postMessage({
    error: error instanceof Error ? error.message : String(error),
  } satisfies ArchivePathMessage),
);
