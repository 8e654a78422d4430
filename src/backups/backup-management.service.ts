import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ActivityEvent } from '../activity/activity.events.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { ServerAccess, ServerAccessService } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { ServerRow } from '../servers/server.table.ts';
import type { AuthenticatedContext } from '../users/actor.ts';
import {
  BadRequestError,
  ConflictError,
  DisplayError,
  ForbiddenError,
  NotFoundError,
} from '../shared/errors.ts';
import { loadPage, type Page, type PageRequest } from '../shared/page.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { ArchiveError, type Progress } from '../storage/archive.types.ts';
import type { BackupStorage } from '../storage/backup-storage.ts';
import { sha256File } from '../storage/checksum.ts';
import { verifyArchive } from '../storage/verify-archive.ts';
import { archiveVolume } from './archive-volume.ts';
import type { BackupRepository } from './backup.repository.ts';
import type { CreateBackupBody } from './backup.schema.ts';
import type { Backup } from './backup.ts';
import type { DownloadSigner } from './download-signer.ts';
import { parseIgnored } from './ignore-patterns.ts';

const DOWNLOAD_LINK_SECONDS = 15 * 60;

/** What `backup create` and `backup import` print. */
export interface BackupRecord {
  uuid: string;
  name: string;
  bytes: number;
  checksum: string;
}

export interface BackupManagementDeps {
  backups: BackupRepository;
  servers: ServerRepository;
  access: ServerAccessService;
  jobs: JobRepository;
  activity: ActivityService;
  /** Where new backups are stored. */
  storage: BackupStorage;
  /** The store an existing backup's archive is in, by its `disk`. */
  storageOf: (disk: string) => BackupStorage;
  signer: DownloadSigner;
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
  volumeOf: (server: Pick<ServerRow, 'id'>) => string;
}

/**
 * A server's backups as its users manage them through the API — list, make, lock, delete,
 * download — and as an operator makes or imports them from the command line.
 */
export class BackupManagementService {
  constructor(private readonly deps: BackupManagementDeps) {}

  /** A server's backups, newest first. */
  list(access: ServerAccess, request: PageRequest): Promise<Page<Backup>> {
    const { backups } = this.deps;
    return loadPage(
      request,
      () => backups.countForServer(access.server.id),
      (window) => backups.page(access.server.id, window),
    );
  }

  /** A backup of this server, or nothing: a backup of another server is as good as unknown. */
  find(serverId: string, reference: string): Promise<Backup | undefined> {
    return this.deps.backups.findOfServer(serverId, reference);
  }

  /**
   * Records a backup in progress and queues the job that archives the volume. The server's
   * backup limit is checked under a lock on the server's row, so it holds under concurrency.
   */
  async create(context: AuthenticatedContext, access: ServerAccess, body: CreateBackupBody): Promise<Backup> {
    const { servers, backups, jobs, activity, transaction, clock } = this.deps;
    const { server } = access;
    const now = toStoredTime(clock());
    const backup: Backup = {
      id: randomUUID(),
      serverId: server.id,
      name: body.name?.trim() ? body.name.trim() : `Backup at ${now.slice(0, 19).replace('T', ' ')}`,
      ignoredFiles: parseIgnored(body.ignored ?? ''),
      disk: this.deps.storage.disk,
      sha256: null,
      bytes: 0,
      isSuccessful: false,
      isLocked: body.is_locked,
      createdAt: now,
      completedAt: null,
      files: null,
      progress: null,
    };
    await transaction(async (trx) => {
      await servers.lock(server.id, trx);
      if (server.backup_limit === 0) throw new ForbiddenError('Backups are disabled for this server.');
      if ((await backups.countForServer(server.id, trx)) >= server.backup_limit) {
        throw new DisplayError(
          `Cannot create a new backup, this server has reached its limit of ${server.backup_limit} backups.`,
        );
      }
      await backups.insert(backup, trx);
      await jobs.enqueue(
        {
          kind: 'backup.create',
          payload: {
            serverId: server.id,
            backupId: backup.id,
            actorId: context.actor.user.id,
            ip: context.ip,
          },
          batch: context.batch,
        },
        now,
        trx,
      );
      await activity.record(context, entry(context, 'server:backup.start', backup), trx);
    });
    return backup;
  }

  /** Locks an unlocked backup, unlocks a locked one. A locked backup cannot be deleted. */
  async toggleLock(context: AuthenticatedContext, backup: Backup): Promise<Backup> {
    const isLocked = !backup.isLocked;
    await this.deps.transaction(async (trx) => {
      await this.deps.backups.setLocked(backup, isLocked, trx);
      const event = isLocked ? 'server:backup.lock' : 'server:backup.unlock';
      await this.deps.activity.record(context, entry(context, event, backup), trx);
    });
    return { ...backup, isLocked };
  }

  async delete(context: AuthenticatedContext, access: ServerAccess, backup: Backup): Promise<void> {
    const { backups, activity, storageOf, transaction, logger } = this.deps;
    if (backup.isLocked) throw new DisplayError('Cannot delete a backup that is marked as locked.');
    if (backup.completedAt === null) {
      throw new ConflictError('This backup is still being made; it can be deleted once it is done.');
    }
    if (access.server.status === 'restoring_backup') this.deps.access.assertIdle(access);
    await transaction(async (trx) => {
      await backups.delete(backup, trx);
      await activity.record(context, entry(context, 'server:backup.delete', backup), trx);
    });
    // The record is gone; an archive left behind by a failed delete is only wasted space.
    await storageOf(backup.disk)
      .delete(backup.serverId, backup.id)
      .catch((error: unknown) => {
        logger.warn({ err: error, backup: backup.id }, 'could not delete a backup archive');
      });
  }

  /**
   * A link that downloads the archive without credentials, for 15 minutes: presigned by the
   * store when it can (S3), else under `baseUrl`, signed by Aerie.
   */
  async downloadLink(context: AuthenticatedContext, backup: Backup, baseUrl: string): Promise<string> {
    if (!backup.isSuccessful) {
      throw new DisplayError('This backup cannot be downloaded: not completed or failed.');
    }
    const presigned = await this.deps
      .storageOf(backup.disk)
      .downloadUrl(backup.serverId, backup.id, DOWNLOAD_LINK_SECONDS, downloadName(backup))
      .catch((error: unknown) => {
        if (error instanceof ArchiveError)
          throw new DisplayError('This backup cannot be downloaded: its archive is not available here.');
        throw error;
      });
    const expires = Math.floor(this.deps.clock().getTime() / 1000) + DOWNLOAD_LINK_SECONDS;
    const url =
      presigned ??
      `${baseUrl}/download/backup?token=${this.deps.signer.sign({ serverId: backup.serverId, backupId: backup.id, expires })}`;
    await this.deps.activity.record(context, entry(context, 'server:backup.download', backup));
    return url;
  }

  /** The archive a download link points at. */
  async openDownload(token: string): Promise<{ stream: Readable; filename: string; bytes: number }> {
    const grant = this.deps.signer.verify(token, Math.floor(this.deps.clock().getTime() / 1000));
    if (grant === null) throw new ForbiddenError('This download link is invalid or has expired.');
    const backup = await this.deps.backups.findOfServer(grant.serverId, grant.backupId);
    if (backup === undefined || !backup.isSuccessful) throw new NotFoundError();
    const stream = await this.deps.storageOf(backup.disk).get(grant.serverId, grant.backupId);
    return { stream, filename: downloadName(backup), bytes: backup.bytes };
  }

  /** Stores an existing .tar.gz as a backup of a server, after reading it through to prove it whole. */
  async importArchive(
    serverRef: string,
    name: string,
    file: string,
    onProgress?: (p: Progress) => void,
  ): Promise<BackupRecord> {
    const server = await this.serverFor(serverRef);
    let files: number;
    try {
      ({ files } = await verifyArchive(file, onProgress));
    } catch (error) {
      // Said to whoever runs the import (an AppError is a message, not a stack trace).
      if (error instanceof ArchiveError)
        throw new BadRequestError(`${file} cannot be imported: ${error.message}.`);
      throw error;
    }
    const { storage } = this.deps;
    return this.store(server, name, async (id) => {
      const scratch = await storage.scratchFile(server.id, id);
      try {
        await fs.copyFile(file, scratch);
        const summary = await sha256File(scratch);
        await storage.put(server.id, id, scratch);
        return { ...summary, files };
      } finally {
        await fs.rm(scratch, { force: true });
      }
    });
  }

  /** Archives a server's volume as it is now into a new backup, and waits until it is stored. */
  async createNow(
    serverRef: string,
    name: string,
    onProgress?: (p: Progress) => void,
  ): Promise<BackupRecord> {
    const server = await this.serverFor(serverRef);
    const { storage } = this.deps;
    return this.store(server, name, async (id) => {
      // A scratch file moved into place, or (S3) an upload made while the archive is written.
      const target = await storage.newArchive(server.id, id);
      try {
        const summary = await archiveVolume(
          this.deps.volumeOf(server),
          target,
          onProgress ? { onProgress } : {},
        );
        await storage.keep(server.id, id, target);
        return { sha256: summary.sha256, bytes: summary.archiveBytes, files: summary.files };
      } finally {
        await storage.discard(target);
      }
    });
  }

  private async serverFor(reference: string): Promise<ServerRow> {
    const server = await this.deps.servers.findByReference(reference);
    if (server === undefined) throw new NotFoundError(`No server "${reference}".`);
    return server;
  }

  /** Stores the archive of a new backup with `write`, then records the finished backup. */
  private async store(
    server: ServerRow,
    name: string,
    write: (id: string) => Promise<{ sha256: string; bytes: number; files: number }>,
  ): Promise<BackupRecord> {
    const { storage, backups, clock } = this.deps;
    const id = randomUUID();
    const { sha256, bytes, files } = await write(id);
    const now = toStoredTime(clock());
    const trimmed = name.trim();
    const backup: Backup = {
      id,
      serverId: server.id,
      name: trimmed === '' ? `Backup at ${now}` : trimmed.slice(0, 191),
      ignoredFiles: [],
      disk: storage.disk,
      sha256,
      bytes,
      isSuccessful: true,
      isLocked: false,
      createdAt: now,
      completedAt: now,
      files,
      progress: null,
    };
    await backups.insert(backup);
    return { uuid: id, name: backup.name, bytes, checksum: `sha256:${sha256}` };
  }
}

/** The file name a download is saved under. */
function downloadName(backup: Backup): string {
  return `${backup.name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 100) || 'backup'}.tar.gz`;
}

function entry(context: AuthenticatedContext, event: ActivityEvent, backup: Backup) {
  return {
    event,
    actor: context.actor,
    properties: { name: backup.name },
    subjects: [
      { type: 'server' as const, id: backup.serverId },
      { type: 'backup' as const, id: backup.id },
    ],
  };
}
