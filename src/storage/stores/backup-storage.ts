import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  archiveFileKind,
  isArchiveDirectory,
  type RemovalFailure,
  type StoredEntry,
} from './archive-layout.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import type { S3Object, S3UploadTarget } from './s3-object.ts';
import { localRepository, type RepositoryLocation } from '../repository/repository-location.ts';

/** The `disk` a backup records: which kind of store holds its archive. */
export type BackupDisk = 'local' | 's3';

/**
 * Where the archive of a new backup is written while it is made, as plain values (a worker
 * thread writes it): a scratch file, or an object uploaded in parts as the bytes come.
 */
export type ArchiveTarget = { kind: 'file'; path: string } | { kind: 's3'; upload: S3UploadTarget };

/** Where a stored archive is read from: a local file, or an S3 object (opened as a stream where it is read). */
export type ArchiveLocation = string | S3Object;

/** Where backup archives live. The local directory is one; an S3-compatible store is another. */
export interface BackupStorage {
  readonly disk: BackupDisk;
  /** Where to write the archive of a new backup; `keep` or `discard` it once written. */
  newArchive(serverId: string, backupId: string): Promise<ArchiveTarget>;
  /** Makes what was written to `target` the backup's archive. */
  keep(serverId: string, backupId: string, target: ArchiveTarget): Promise<void>;
  /** Removes whatever was written to `target` and not kept (nothing is left behind). */
  discard(target: ArchiveTarget): Promise<void>;
  /** Takes the finished archive at `file` into the store (the file is moved or removed). */
  put(serverId: string, backupId: string, file: string): Promise<void>;
  /** The archive's bytes, as a stream. */
  get(serverId: string, backupId: string): Promise<Readable>;
  /** Where the archive is read from; an ArchiveError 'not-found' if it is not there. */
  locate(serverId: string, backupId: string): Promise<ArchiveLocation>;
  /**
   * A URL that downloads the archive straight from the store, valid for `seconds`; null when
   * the store has none (Aerie then serves the download itself).
   */
  downloadUrl(serverId: string, backupId: string, seconds: number, filename: string): Promise<string | null>;
  delete(serverId: string, backupId: string): Promise<void>;
  /** A scratch file on local disk (on the same filesystem as a local store), for an archive being written. */
  scratchFile(serverId: string, backupId: string): Promise<string>;
  /**
   * Everything the store holds in Aerie's layout (`archive-layout.ts`): archives, scratch files,
   * unfinished multipart uploads. Read by `backup reconcile`, which decides what is left over.
   */
  inventory(): Promise<StoredEntry[]>;
  /** Removes entries `inventory` listed (an upload is aborted); one gone already counts as removed. */
  remove(entries: readonly StoredEntry[]): Promise<RemovalFailure[]>;
  /** Where the server's snapshot repository is in this store. */
  repository(serverId: string): RepositoryLocation;
}

/**
 * The store of a disk this process is not set up for (a backup made in S3, read by a process
 * whose AERIE_BACKUP_STORAGE is local): every call fails, saying so.
 */
export class UnavailableBackupStorage implements BackupStorage {
  constructor(readonly disk: BackupDisk) {}

  private refuse(): Promise<never> {
    return Promise.reject(
      new ArchiveError('not-found', `the backup is kept in ${this.disk} storage, which is not configured`),
    );
  }

  newArchive = () => this.refuse();
  keep = () => this.refuse();
  discard = () => this.refuse();
  put = () => this.refuse();
  get = () => this.refuse();
  locate = () => this.refuse();
  downloadUrl = () => this.refuse();
  delete = () => this.refuse();
  scratchFile = () => this.refuse();
  inventory = () => this.refuse();
  remove = () => this.refuse();
  repository(): RepositoryLocation {
    throw new ArchiveError(
      'not-found',
      `the backup is kept in ${this.disk} storage, which is not configured`,
    );
  }
}

/** `<data dir>/backups/<server uuid>/<backup uuid>.tar.gz` */
export class LocalBackupStorage implements BackupStorage {
  readonly disk = 'local';

  constructor(private readonly root: string) {}

  private fileOf(serverId: string, backupId: string): string {
    return path.join(this.root, serverId, `${backupId}.tar.gz`);
  }

  async scratchFile(serverId: string, backupId: string): Promise<string> {
    await fs.mkdir(path.join(this.root, serverId), { recursive: true, mode: 0o750 });
    return `${this.fileOf(serverId, backupId)}.incoming`;
  }

  async newArchive(serverId: string, backupId: string): Promise<ArchiveTarget> {
    return { kind: 'file', path: await this.scratchFile(serverId, backupId) };
  }

  async keep(serverId: string, backupId: string, target: ArchiveTarget): Promise<void> {
    if (target.kind !== 'file') throw new Error('a local store keeps only files');
    await this.put(serverId, backupId, target.path);
  }

  async discard(target: ArchiveTarget): Promise<void> {
    if (target.kind === 'file') await fs.rm(target.path, { force: true });
  }

  async put(serverId: string, backupId: string, file: string): Promise<void> {
    const target = this.fileOf(serverId, backupId);
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o750 });
    try {
      await fs.rename(file, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      await fs.copyFile(file, `${target}.incoming`);
      await fs.rename(`${target}.incoming`, target);
      await fs.rm(file, { force: true });
    }
  }

  async get(serverId: string, backupId: string): Promise<Readable> {
    const file = await this.existing(serverId, backupId);
    return createReadStream(file);
  }

  locate(serverId: string, backupId: string): Promise<ArchiveLocation> {
    return this.existing(serverId, backupId);
  }

  downloadUrl(): Promise<string | null> {
    return Promise.resolve(null);
  }

  async delete(serverId: string, backupId: string): Promise<void> {
    await fs.rm(this.fileOf(serverId, backupId), { force: true });
  }

  /**
   * The archives and scratch files under the directory, by their names; anything else there is
   * not Aerie's to judge and is not listed. Scratch files of S3 backups (imports pass through
   * one) are here too: the S3 store keeps them in this directory.
   */
  async inventory(): Promise<StoredEntry[]> {
    const entries: StoredEntry[] = [];
    for (const directory of await readDirectory(this.root)) {
      if (!directory.isDirectory() || !isArchiveDirectory(directory.name)) continue;
      for (const file of await readDirectory(path.join(this.root, directory.name))) {
        const kind = archiveFileKind(file.name);
        if (kind === undefined || !file.isFile()) continue;
        const location = path.join(directory.name, file.name);
        const stat = await fs.lstat(path.join(this.root, location)).catch(() => undefined);
        if (stat === undefined) continue; // removed since it was listed
        entries.push({
          ...kind,
          serverId: directory.name,
          location,
          modifiedAt: stat.mtime,
          bytes: stat.size,
        });
      }
    }
    return entries;
  }

  async remove(entries: readonly StoredEntry[]): Promise<RemovalFailure[]> {
    const failures: RemovalFailure[] = [];
    for (const entry of entries) {
      await fs.rm(path.join(this.root, entry.location), { force: true }).catch((error: unknown) => {
        failures.push({ entry, error: (error as Error).message });
      });
    }
    return failures;
  }

  repository(serverId: string): RepositoryLocation {
    return localRepository(this.root, serverId);
  }

  private async existing(serverId: string, backupId: string): Promise<string> {
    const file = this.fileOf(serverId, backupId);
    try {
      const stat = await fs.stat(file);
      if (stat.isFile()) return file;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    throw new ArchiveError('not-found', 'the backup archive is missing from storage');
  }
}

/** A directory's entries; none when it does not exist (a store nothing was written to yet). */
async function readDirectory(dir: string) {
  try {
    return await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
