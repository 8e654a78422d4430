/** Thread entry for snapshotTarGzInThread: opens the snapshot, sends its .tar.gz back member by member. */
import { parentPort, workerData } from 'node:worker_threads';
import { ArchiveError } from '../archive/archive.types.ts';
import { fromStore } from '../stores/store-unreachable.ts';
import { openSnapshot } from './open-snapshot.ts';
import { startBlobVerifier } from './repository.ts';
import {
  MEMBERS_AHEAD,
  type SnapshotDownloadInput,
  type SnapshotDownloadMessage,
} from './snapshot-download.ts';
import { findSnapshotPath } from './snapshot-paths.ts';
import { parallelGzip } from '../archive/parallel-gzip.ts';
import { snapshotTar } from './snapshot-tar.ts';
import { DamagedRepository } from './tree.ts';

const input = workerData as SnapshotDownloadInput;
const port = parentPort!;

let ahead = 0;
let wake: (() => void) | null = null;
port.on('message', () => {
  ahead--;
  wake?.();
  wake = null;
});

const post = (message: SnapshotDownloadMessage, transfer: ArrayBuffer[] = []) =>
  port.postMessage(message, transfer);

async function main(): Promise<void> {
  startBlobVerifier();
  const { store, repository, record } = await openSnapshot(input.repository, input.backupId, input.sha256);
  try {
    const node = await findSnapshotPath(repository, record.tree, input.parts);
    if (node === null || node.type !== 'dir') {
      post({ ready: true, found: false });
      return;
    }
    post({ ready: true, found: true });
    // The archive writer's settings (1 MiB members, level 6): the same tar gives the same bytes.
    const gzip = parallelGzip();
    try {
      for await (const member of fromStoreEach(gzip(snapshotTar(repository, node.tree)))) {
        // Copied into memory of its own, moved (not copied again) to the other thread; the
        // compressor's buffer goes back to it at once.
        const bytes = new Uint8Array(member.length);
        bytes.set(member);
        gzip.release(member);
        post({ member: bytes }, [bytes.buffer]);
        ahead++;
        while (ahead >= MEMBERS_AHEAD) await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      await gzip.threadsEnded();
    }
    post({ end: true });
  } finally {
    await store.close();
  }
}

/** The members, a store that cannot be reached marked as such (fromStore) at each step. */
async function* fromStoreEach(members: AsyncGenerator<Buffer>): AsyncGenerator<Buffer> {
  for (;;) {
    const next = await fromStore(() => members.next());
    if (next.done === true) return;
    yield next.value;
  }
}

main().catch((error: unknown) => {
  if (error instanceof ArchiveError) post({ error: error.message, reason: error.reason });
  else if (error instanceof DamagedRepository)
    post({ error: `the backup's stored data is damaged: ${error.message}`, reason: 'corrupt' });
  else post({ error: error instanceof Error ? error.message : String(error) });
});
