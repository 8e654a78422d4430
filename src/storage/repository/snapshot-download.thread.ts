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
import { snapshotTarGz } from './snapshot-tar.ts';
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
    const stream = snapshotTarGz(repository, node.tree);
    try {
      for await (const member of fromStoreEach(stream[Symbol.asyncIterator]() as AsyncGenerator<Buffer>)) {
        // A member owns its whole ArrayBuffer (snapshotTarGzMembers): moved, not copied. What the
        // stream joined from several (a small archive) may be a slice of Node's shared pool,
        // which cannot move: that is copied first.
        const owns = member.byteOffset === 0 && member.byteLength === member.buffer.byteLength;
        const bytes = owns ? new Uint8Array(member.buffer, 0, member.byteLength) : new Uint8Array(member);
        post({ member: bytes }, [bytes.buffer as ArrayBuffer]);
        ahead++;
        while (ahead >= MEMBERS_AHEAD) await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      stream.destroy();
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
