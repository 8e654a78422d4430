/**
 * Opens a backup's snapshot for reading (a restore, an extract), as an archive is opened: a
 * snapshot that is missing is `not-found`, one that is not the backup's (its record's SHA-256 is
 * not the backup's checksum) is `checksum-mismatch`, and a repository whose index or record is
 * damaged is `corrupt` — all refused before a byte is written. A record that matches the
 * checksum vouches for everything under it: it names its trees, and they their chunks, by hash.
 */
import { ArchiveError } from '../archive/archive.types.ts';
import { fromStore } from '../stores/store-unreachable.ts';
import { openRepositoryStore, type RepositoryLocation } from './repository-location.ts';
import { RepositoryMissing, type RepositoryStore } from './repository-store.ts';
import { Repository, type SnapshotRecord } from './repository.ts';
import { DamagedRepository } from './tree.ts';

export interface OpenedSnapshot {
  store: RepositoryStore;
  repository: Repository;
  record: SnapshotRecord;
}

/** `sha256`: the backup's checksum (hex), or null for a backup that has none recorded. */
export async function openSnapshot(
  location: RepositoryLocation,
  backupId: string,
  sha256: string | null,
): Promise<OpenedSnapshot> {
  const store = await openRepositoryStore(location);
  try {
    const repository = await fromStore(() => Repository.open(store));
    const loaded = await fromStore(() => repository.loadSnapshot(backupId));
    if (sha256 !== null && loaded.sha256 !== sha256) {
      throw new ArchiveError('checksum-mismatch', 'the backup does not match its checksum');
    }
    return { store, repository, record: loaded.record };
  } catch (error) {
    await store.close();
    if (error instanceof RepositoryMissing)
      throw new ArchiveError('not-found', 'the snapshot of this backup is missing from storage');
    if (error instanceof DamagedRepository)
      throw new ArchiveError('corrupt', `the backup's stored data is damaged: ${error.message}`);
    throw error;
  }
}
