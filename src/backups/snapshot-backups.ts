/**
 * Backups kept as snapshots in the server's repository (AERIE_BACKUP_FORMAT=snapshot): made
 * against the server's last snapshot (unchanged files are not read again), downloaded as a
 * .tar.gz made from the chunks as it is sent, deleted by removing the snapshot record (prune
 * reclaims the chunks no snapshot uses), restored by the restore job (stage-restore.ts).
 */
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import {
  openRepositoryStore,
  repositoryName,
  type RepositoryLocation,
} from '../storage/repository/repository-location.ts';
import { openSnapshot } from '../storage/repository/open-snapshot.ts';
import type { Repository } from '../storage/repository/repository.ts';
import { DamagedRepository } from '../storage/repository/tree.ts';
import { ArchiveError } from '../storage/archive/archive.types.ts';
import { findSnapshotPath, snapshotFileContent } from '../storage/repository/snapshot-paths.ts';
import { snapshotTarGzInProcess } from '../storage/repository/snapshot-download.ts';
import { saveRestoreBase } from '../storage/repository/restored-tree.ts';
import type { Progress } from '../storage/archive/archive.types.ts';
import type { BackupRepository } from './backup.repository.ts';
import type { Backup } from './backup.ts';
import type { RepositoryLocks } from './repository-locks.ts';
import { snapshotVolume } from './snapshot-backup.ts';
import { checkInThread, pruneInThread } from './repository-work.ts';
import type { CheckProgress, CheckReport } from '../storage/repository/check.ts';
import type { PruneProgress, PruneReport } from '../storage/repository/prune.ts';

export interface SnapshotBackupsDeps {
  backups: BackupRepository;
  storageOf: (disk: string) => BackupStorage;
  locks: RepositoryLocks;
  volumeOf: (server: { id: string }) => string;
}

/** What a snapshot backup stored, for its row. */
export interface SnapshotMade {
  sha256: string;
  /** Bytes of the backup's files. */
  bytes: number;
  files: number;
  /** What it added to storage (new chunks, compressed). */
  addedBytes: number;
}

/** One path of a backup, as sent: a file's bytes, or a directory's .tar.gz (size unknown until sent). */
export interface PathDownload {
  kind: 'file' | 'directory';
  stream: Readable;
  bytes: number | null;
}

export interface TakeOptions {
  full?: boolean;
  /** The directory to take (the server's volume unless set: an import's unpacked archive). */
  volume?: string;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  progressIntervalMs?: number;
}

export class SnapshotBackups {
  constructor(private readonly deps: SnapshotBackupsDeps) {}

  /** Where a backup's snapshot is: its server's repository in the backup's store. */
  repositoryOf(backup: Pick<Backup, 'serverId' | 'disk'>): RepositoryLocation {
    return this.deps.storageOf(backup.disk).repository(backup.serverId);
  }

  /**
   * The backup the next snapshot of this one's server is made against (null for none), with the
   * totals it had: the new one's progress is counted against them.
   */
  async parentOf(backup: Backup): Promise<Backup | null> {
    return (await this.deps.backups.lastSnapshot(backup.serverId, backup.disk, backup.id)) ?? null;
  }

  /** Takes the snapshot of `backup`'s server volume, holding a shared lock on the repository. */
  async take(backup: Backup, parent: Backup | null, options: TakeOptions = {}): Promise<SnapshotMade> {
    const location = this.repositoryOf(backup);
    const { record, sha256 } = await this.deps.locks.shared(
      repositoryName(backup.disk, backup.serverId),
      () =>
        snapshotVolume(options.volume ?? this.deps.volumeOf({ id: backup.serverId }), location, backup.id, {
          parent: parent?.id ?? null,
          ignored: backup.ignoredFiles,
          ...options,
        }),
      options.signal ? { signal: options.signal } : {},
    );
    return { sha256, bytes: record.bytes, files: record.files, addedBytes: record.added.bytes };
  }

  /**
   * Records `tree` (stored by the restore that wrote `backup` onto its server's volume) as the
   * repository's restore base: the next snapshot compares the volume with it (restored-tree.ts).
   */
  async keepRestored(backup: Pick<Backup, 'serverId' | 'disk' | 'id'>, tree: string): Promise<void> {
    const store = await openRepositoryStore(this.repositoryOf(backup));
    try {
      await fromStore(() =>
        saveRestoreBase(store, { v: 1, backup: backup.id, time: new Date().toISOString(), tree }),
      );
    } finally {
      await store.close();
    }
  }

  /**
   * Removes a backup's snapshot record. Its chunks stay until a prune finds no snapshot uses them.
   * A record that is gone already counts as removed.
   */
  async remove(backup: Pick<Backup, 'serverId' | 'disk' | 'id'>): Promise<void> {
    const store = await openRepositoryStore(this.repositoryOf(backup));
    try {
      await fromStore(() => store.delete(`snapshots/${backup.id}`));
    } finally {
      await store.close();
    }
  }

  /**
   * Reclaims what no snapshot of the server's repository in `disk` uses, holding the only lock on
   * it (backups of the server wait meanwhile; one running now is waited for). Null when the server
   * has no repository there.
   */
  async prune(
    serverId: string,
    disk: string,
    onProgress?: (progress: PruneProgress) => void,
  ): Promise<PruneReport> {
    const location = this.deps.storageOf(disk).repository(serverId);
    return this.deps.locks.exclusive(repositoryName(disk, serverId), () =>
      pruneInThread(location, onProgress),
    );
  }

  /**
   * Removes the snapshot records in the server's repository in `disk` of the backups `garbage`
   * names (failed, or deleted), so that a prune does not keep their chunks forever: a record whose
   * removal failed when its backup was deleted or failed (the store away at that moment). Returns
   * the UUIDs removed.
   */
  async dropRecords(serverId: string, disk: string, garbage: ReadonlySet<string>): Promise<string[]> {
    const store = await openRepositoryStore(this.deps.storageOf(disk).repository(serverId));
    try {
      const records = await fromStore(() => store.list('snapshots/'));
      const dropped = records
        .map((record) => record.key.slice('snapshots/'.length))
        .filter((id) => garbage.has(id));
      for (const id of dropped) await fromStore(() => store.delete(`snapshots/${id}`));
      return dropped;
    } finally {
      await store.close();
    }
  }

  /**
   * Checks the server's repository in `disk`; `readData` reads and hashes every chunk. It holds a
   * shared lock, as a restore does: a prune meanwhile would delete the index objects and packs it
   * listed, and what it then could not find would be reported as damage.
   */
  check(
    serverId: string,
    disk: string,
    readData: boolean,
    onProgress?: (progress: CheckProgress) => void,
  ): Promise<CheckReport> {
    return this.deps.locks.shared(repositoryName(disk, serverId), () =>
      checkInThread(this.deps.storageOf(disk).repository(serverId), readData, onProgress),
    );
  }

  /**
   * Runs `work` (a restore, an extract) holding a shared lock on the backup's repository: a prune
   * waits until it is done, so no pack it reads disappears under it.
   */
  reading<T>(
    backup: Pick<Backup, 'serverId' | 'disk'>,
    work: () => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.deps.locks.shared(
      repositoryName(backup.disk, backup.serverId),
      work,
      signal ? { signal } : {},
    );
  }

  /**
   * The backup as a .tar.gz stream, made from its chunks as it is read. The repository is held
   * (a shared lock) until the stream ends: a prune waits for the download.
   */
  download(backup: Backup): Promise<Readable> {
    return new Promise<Readable>((resolve, reject) => {
      this.reading(backup, async () => {
        const stream = await this.openTarGz(backup);
        resolve(stream);
        await finished(stream).catch(() => undefined);
      }).catch(reject);
    });
  }

  /**
   * One path of the backup: a file's content, or a directory as a .tar.gz of what it holds; null
   * when the backup has nothing there. The repository is held until the stream ends.
   */
  downloadPath(backup: Backup, parts: readonly string[]): Promise<PathDownload | null> {
    return new Promise<PathDownload | null>((resolve, reject) => {
      this.reading(backup, async () => {
        const opened = await openSnapshot(this.repositoryOf(backup), backup.id, backup.sha256);
        let found: PathDownload | null;
        try {
          found = await this.openPath(backup, opened.repository, opened.record.tree, parts);
        } catch (error) {
          await opened.store.close();
          throw error;
        }
        resolve(found);
        if (found !== null) await finished(found.stream).catch(() => undefined);
        await opened.store.close();
      }).catch(reject);
    });
  }

  private async openPath(
    backup: Backup,
    repository: Repository,
    root: string,
    parts: readonly string[],
  ): Promise<PathDownload | null> {
    const node = await findSnapshotPath(repository, root, parts).catch((error: unknown) => {
      if (error instanceof DamagedRepository)
        throw new ArchiveError('corrupt', `the backup's stored data is damaged: ${error.message}`);
      throw error;
    });
    if (node === null) return null;
    if (node.type === 'file')
      return { kind: 'file', stream: snapshotFileContent(repository, node), bytes: node.size };
    // A directory's .tar.gz is made in a process of its own, as the whole backup's is.
    const stream = await snapshotTarGzInProcess({
      repository: this.repositoryOf(backup),
      backupId: backup.id,
      sha256: backup.sha256,
      parts: [...parts],
    });
    return stream === null ? null : { kind: 'directory', stream, bytes: null };
  }

  private async openTarGz(backup: Backup): Promise<Readable> {
    // Never another snapshot than the one the backup recorded (a restore refuses it too).
    const stream = await snapshotTarGzInProcess({
      repository: this.repositoryOf(backup),
      backupId: backup.id,
      sha256: backup.sha256,
      parts: [],
    });
    if (stream === null) throw new ArchiveError('corrupt', 'the snapshot has no root directory');
    return stream;
  }
}
