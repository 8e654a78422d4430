import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ArchiveError } from './archive.types.ts';

/** Where backup archives live. The local directory is one; an S3-compatible store is another. */
export interface BackupStorage {
  /** Takes the finished archive at `file` into the store (the file is moved or removed). */
  put(serverId: string, backupId: string, file: string): Promise<void>;
  /** The archive's bytes, as a stream. */
  get(serverId: string, backupId: string): Promise<Readable>;
  /** Runs `use` with a local file holding the archive (a store that is remote downloads it first). */
  withLocalFile<T>(serverId: string, backupId: string, use: (file: string) => Promise<T>): Promise<T>;
  delete(serverId: string, backupId: string): Promise<void>;
  /** A scratch file on the same filesystem as the store, for an archive being written. */
  scratchFile(serverId: string, backupId: string): Promise<string>;
}

/** `<data dir>/backups/<server uuid>/<backup uuid>.tar.gz` */
export class LocalBackupStorage implements BackupStorage {
  constructor(private readonly root: string) {}

  private fileOf(serverId: string, backupId: string): string {
    return path.join(this.root, serverId, `${backupId}.tar.gz`);
  }

  async scratchFile(serverId: string, backupId: string): Promise<string> {
    await fs.mkdir(path.join(this.root, serverId), { recursive: true, mode: 0o750 });
    return `${this.fileOf(serverId, backupId)}.incoming`;
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

  async withLocalFile<T>(serverId: string, backupId: string, use: (file: string) => Promise<T>): Promise<T> {
    return use(await this.existing(serverId, backupId));
  }

  async delete(serverId: string, backupId: string): Promise<void> {
    await fs.rm(this.fileOf(serverId, backupId), { force: true });
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
