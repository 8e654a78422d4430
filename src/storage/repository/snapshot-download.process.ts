/**
 * Process entry for snapshotTarGzInProcess: takes its input as its first IPC message, opens the
 * snapshot, says whether the directory asked for is there, then writes the `.tar.gz` of it to
 * stdout and says it is done (or why it failed). Its main thread does the work: it answers no
 * request, so it reads, checks and compresses itself, beside one compression thread.
 */
import { once } from 'node:events';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { answerNoRequests } from '../../shared/request-thread.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import { fromStore } from '../stores/store-unreachable.ts';
import { openSnapshot } from './open-snapshot.ts';
import { startBlobVerifier } from './repository.ts';
import type { DownloadProcessMessage, SnapshotDownloadInput } from './snapshot-download.ts';
import { findSnapshotPath } from './snapshot-paths.ts';
import { lentMembers } from './snapshot-tar.ts';
import { DamagedRepository } from './tree.ts';

/**
 * Bytes sent between two collections of the whole heap. Chunks read from S3 come in buffers of
 * their own, alive for a request's time: the process's small young generation promotes many
 * before they die, and V8 would collect them only as its old generation fills (70 MB of them
 * from a 1 GB snapshot). A collection of this process's small heap takes a few milliseconds.
 */
const COLLECT_ALL_EVERY = 32 * 1024 * 1024;

answerNoRequests();
startBlobVerifier('here');

function say(message: DownloadProcessMessage): Promise<void> {
  return new Promise((resolve) => process.send!(message, undefined, {}, () => resolve()));
}

async function run(input: SnapshotDownloadInput): Promise<void> {
  const { store, repository, record } = await openSnapshot(input.repository, input.backupId, input.sha256);
  try {
    const node = await findSnapshotPath(repository, record.tree, input.parts);
    const found = node !== null && node.type === 'dir';
    await say({ ready: true, found });
    if (!found) return;
    let written = 0;
    for await (const { member, release } of fromStoreEach(lentMembers(repository, node.tree))) {
      // Its buffer is filled again once the pipe has taken its bytes.
      if (!process.stdout.write(member, release)) await once(process.stdout, 'drain');
      written += member.length;
      if (written >= COLLECT_ALL_EVERY) {
        written = 0;
        collectGarbage('all');
      }
    }
    await say({ end: true });
  } finally {
    await store.close();
  }
}

/** The members, a store that cannot be reached marked as such (fromStore) at each step. */
async function* fromStoreEach<T>(members: AsyncGenerator<T>): AsyncGenerator<T> {
  for (;;) {
    const next = await fromStore(() => members.next());
    if (next.done === true) return;
    yield next.value;
  }
}

function failure(error: unknown): DownloadProcessMessage {
  if (error instanceof ArchiveError) return { error: error.message, reason: error.reason };
  if (error instanceof DamagedRepository)
    return { error: `the backup's stored data is damaged: ${error.message}`, reason: 'corrupt' };
  return { error: error instanceof Error ? error.message : String(error) };
}

process.once('message', (input: SnapshotDownloadInput) => {
  run(input).then(
    () => process.exit(0),
    async (error: unknown) => {
      await say(failure(error));
      process.exit(1);
    },
  );
});
