import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import type { Readable } from 'node:stream';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ActivityEvent } from '../activity/activity.events.ts';
import type { ActivityEntry, ActivityService } from '../activity/activity.service.ts';
import type { Executor, Transactor } from '../db/executor.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import { conflictFor, type ServerAccess } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { ServerRow } from '../servers/server.table.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import {
  AppError,
  BadRequestError,
  ConflictError,
  DisplayError,
  ForbiddenError,
  NotFoundError,
} from '../shared/errors.ts';
import { loadPage, type Page, type PageRequest } from '../shared/page.ts';
import { assertText } from '../shared/text.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { ArchiveError, type Progress } from '../storage/archive/archive.types.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import { sha256File } from '../storage/archive/checksum.ts';
import { verifyArchive } from '../storage/archive/verify-archive.ts';
import { archiveVolume } from './backup-archive.ts';
import { extractBackup } from './backup-extract.ts';
import { removeTree } from '../storage/directory-root.ts';
import {
  ProgressReporter,
  threadProgressInterval,
  toCounts,
  type ProgressSettings,
} from './backup-progress.ts';
import type { BackupDeletion, BackupDeletionRepository } from './backup-deletion.repository.ts';
import type { BackupRepository } from './backup.repository.ts';
import { pathParts } from './backup-path.ts';
import type { BackupFiles } from './backup-files.ts';
import { archivePathStream } from '../storage/stores/archive-path.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { CreateBackupBody } from './backup.schema.ts';
import type { Backup, BackupFormat } from './backup.ts';
import type { PathDownload, SnapshotBackups } from './snapshot-backups.ts';
import type { CheckProgress, CheckReport } from '../storage/repository/check.ts';
import type { PruneProgress, PruneReport } from '../storage/repository/prune.ts';
import type { DownloadSigner } from './download-signer.ts';
import { parseIgnored } from './ignore-patterns.ts';
import { explainedDownload } from './download-failure.ts';

const DOWNLOAD_LINK_SECONDS = 15 * 60;
/** How often a backup made from the command line shows a sign of life when no progress comes. */
const HEARTBEAT_MS = 60_000;

/** A download link: a URL the backup store presigned, or a path on Aerie carrying a signed token. */
/** What a signed download link sends: the body, its file name, size (when known) and media type. */
export interface Download {
  stream: Readable;
  filename: string;
  bytes: number | null;
  type: string;
}

export type DownloadLink = { kind: 'presigned'; url: string } | { kind: 'signed'; path: string };

/** What a schedule's backup task asks for. */
export interface ScheduledBackupRequest {
  scheduleId: number;
  scheduleName: string;
  /** The task's payload: gitignore rules, one a line. */
  ignored: string;
}

/** What a delete of several backups did: each one deleted, or refused with the error a single delete gives. */
export interface BulkDeleteResult {
  deleted: Backup[];
  refused: { reference: string; error: AppError }[];
}

/** What `backup create` and `backup import` print. */
export interface BackupRecord {
  uuid: string;
  name: string;
  format: BackupFormat;
  /** A snapshot: the size of its files. An archive: the archive's size. */
  bytes: number;
  files: number;
  /** What a snapshot added to storage; null for an archive (all of it is new). */
  added_bytes: number | null;
  checksum: string;
}

export interface BackupManagementDeps {
  backups: BackupRepository;
  /** Where each deleted backup is recorded, with the delete of its row. */
  deletions: BackupDeletionRepository;
  servers: ServerRepository;
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
  /** Where and how often a backup made from the command line writes its progress. */
  progress: ProgressSettings;
  volumeOf: (server: Pick<ServerRow, 'id'>) => string;
  /** How new backups are stored (AERIE_BACKUP_FORMAT). */
  format: BackupFormat;
  /** Backups kept as snapshots: made, removed, downloaded. */
  snapshots: SnapshotBackups;
  /** What a backup holds (its catalog): what one path of an archive backup is. */
  files: Pick<BackupFiles, 'entryOf' | 'sliceOf' | 'forget'>;
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

  /** The storage the server's backups take (see BackupRepository.storageOfServer). */
  storageOf(access: ServerAccess): Promise<number> {
    return this.deps.backups.storageOfServer(access.server.id);
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
      isAutomatic: false,
      scheduleId: null,
      createdAt: now,
      completedAt: null,
      files: null,
      format: this.deps.format,
      addedBytes: null,
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

  /**
   * Records an automatic backup, made by a schedule, and queues its job: as `create`, but at the
   * backup limit the oldest unlocked successful backup is deleted first, one per run, as
   * Pterodactyl does (through the same steps as a delete by hand: the record of its deletion, its
   * activity entry, its archive removed after the commit). When every backup is locked it is
   * refused with Pterodactyl's message, and the refusal is recorded on the server. The limit and
   * the server's state are read once its row is held. The entries have no actor: the schedule is
   * their origin (`schedule_id`, `schedule_name`). `context` is the schedule run's, when it has one.
   */
  async createScheduled(
    server: ServerRow,
    request: ScheduledBackupRequest,
    context: RequestContext = { batch: randomUUID(), ip: null, userAgent: '' },
  ): Promise<Backup> {
    const { servers, backups, jobs, activity, transaction, clock } = this.deps;
    const now = toStoredTime(clock());
    const origin = { schedule_id: request.scheduleId, schedule_name: request.scheduleName };
    const backup: Backup = {
      id: randomUUID(),
      serverId: server.id,
      name: `Backup at ${now.slice(0, 19).replace('T', ' ')}`,
      ignoredFiles: parseIgnored(request.ignored),
      disk: this.deps.storage.disk,
      sha256: null,
      bytes: 0,
      isSuccessful: false,
      isLocked: false,
      isAutomatic: true,
      scheduleId: request.scheduleId,
      createdAt: now,
      completedAt: null,
      files: null,
      format: this.deps.format,
      addedBytes: null,
      progress: null,
    };
    let rotated: Backup | undefined;
    try {
      await transaction(async (trx) => {
        await servers.lock(server.id, trx);
        const current = await servers.findByReference(server.id, trx);
        if (current === undefined) throw new NotFoundError();
        if (current.status !== null) throw conflictFor(current.status);
        if (current.backup_limit === 0) throw new ForbiddenError('Backups are disabled for this server.');
        if ((await backups.countForServer(server.id, trx)) >= current.backup_limit) {
          const oldest = await backups.oldestRotatable(server.id, trx);
          if (oldest === undefined) {
            throw new DisplayError(
              `Cannot create a new backup, this server has reached its limit of ${current.backup_limit} backups.`,
            );
          }
          rotated = await this.deleteHeld(context, server.id, oldest.id, trx, (deleted) =>
            systemEntry('server:backup.delete', deleted, { ...origin, rotated: true }),
          );
        }
        await backups.insert(backup, trx);
        await jobs.enqueue(
          {
            kind: 'backup.create',
            payload: { serverId: server.id, backupId: backup.id, actorId: null, ip: null },
            batch: context.batch,
          },
          now,
          trx,
        );
        await activity.record(context, systemEntry('server:backup.start', backup, origin), trx);
      });
    } catch (error) {
      if (
        error instanceof DisplayError ||
        error instanceof ForbiddenError ||
        error instanceof ConflictError
      ) {
        await activity.record(context, {
          event: 'server:backup.fail',
          actor: null,
          properties: { name: backup.name, reason: error.message, ...origin },
          subjects: [{ type: 'server', id: server.id }],
        });
      }
      throw error;
    }
    if (rotated !== undefined) await this.removeArchive(rotated);
    return backup;
  }

  /**
   * Locks an unlocked backup, unlocks a locked one. A locked backup cannot be deleted. Decided on
   * the backup as it is once the server's row is held, as a delete is: of a lock and a delete
   * sent at once, one sees the other's outcome (a locked backup is not deleted; a deleted one is
   * not locked).
   */
  async toggleLock(context: AuthenticatedContext, backup: Backup): Promise<Backup> {
    const { servers, backups, activity, transaction } = this.deps;
    return transaction(async (trx) => {
      await servers.lock(backup.serverId, trx);
      const current = await backups.findOfServer(backup.serverId, backup.id, trx);
      if (current === undefined) throw new NotFoundError();
      const isLocked = !current.isLocked;
      await backups.setLocked(current, isLocked, trx);
      const event = isLocked ? 'server:backup.lock' : 'server:backup.unlock';
      await activity.record(context, entry(context, event, current), trx);
      return { ...current, isLocked };
    });
  }

  /**
   * Deletes a finished, unlocked backup of a server that is not restoring, then its archive.
   *
   * Deleting a backup, restoring it and locking it each first take the server's row, so the
   * database decides them one after the other, on rows read fresh once it is held, whichever API
   * process each request reached: of a delete and a restore of one backup, one wins and the
   * other is refused (409 while the restore runs, 404 once the backup is gone); of two deletes,
   * the second is a 404 and records nothing. The row goes in that transaction, with its activity
   * entry and the record of its deletion; the archive after the commit. An archive left behind
   * (the store unreachable, or the process dying in between) is removed by `backup reconcile`,
   * which the record tells that it is garbage.
   */
  async delete(context: AuthenticatedContext, access: ServerAccess, backup: Backup): Promise<void> {
    const { servers, transaction } = this.deps;
    const deleted = await transaction(async (trx) => {
      await servers.lock(access.server.id, trx);
      return this.deleteHeld(context, access.server.id, backup.id, trx, (current) =>
        entry(context, 'server:backup.delete', current),
      );
    });
    await this.removeArchive(deleted);
  }

  /**
   * Deletes several backups of a server at once, each as `delete` would, under one hold of the
   * server's row: those a single delete would refuse (unknown or another server's: 404; locked:
   * 400; in progress or the server restoring: 409) are listed with that error, and the others
   * deleted, each with its own activity entry. A reference given twice counts once. The archives
   * are removed after the commit.
   */
  async deleteMany(
    context: AuthenticatedContext,
    access: ServerAccess,
    references: readonly string[],
  ): Promise<BulkDeleteResult> {
    const { servers, transaction } = this.deps;
    const unique = [...new Set(references.map((reference) => reference.trim().toLowerCase()))];
    const result = await transaction(async (trx) => {
      await servers.lock(access.server.id, trx);
      const done: BulkDeleteResult = { deleted: [], refused: [] };
      for (const reference of unique) {
        try {
          done.deleted.push(
            await this.deleteHeld(context, access.server.id, reference, trx, (current) =>
              entry(context, 'server:backup.delete', current),
            ),
          );
        } catch (error) {
          // Every refusal is thrown before the delete writes anything, so the transaction goes on.
          if (!(error instanceof AppError)) throw error;
          done.refused.push({ reference, error });
        }
      }
      return done;
    });
    for (const deleted of result.deleted) await this.removeArchive(deleted);
    return result;
  }

  /**
   * The steps of a delete once the server's row is held in `trx`: the backup as it is now, refused
   * if locked (400), in progress (409) or while the server restores (409); then its row, the record
   * of its deletion and its activity entry (`describe` says whose). The caller removes the archive
   * after the commit (`removeArchive`).
   */
  async deleteHeld(
    context: RequestContext,
    serverId: string,
    backupId: string,
    trx: Executor,
    describe: (backup: Backup) => ActivityEntry,
  ): Promise<Backup> {
    const { servers, backups, deletions, activity, clock } = this.deps;
    const current = await backups.findOfServer(serverId, backupId, trx);
    if (current === undefined) throw new NotFoundError();
    if (current.isLocked) throw new DisplayError('Cannot delete a backup that is marked as locked.');
    if (current.completedAt === null) {
      throw new ConflictError('This backup is still being made; it can be deleted once it is done.');
    }
    const server = await servers.findByReference(serverId, trx);
    if (server?.status === 'restoring_backup') throw conflictFor(server.status);
    if (!(await backups.deleteIfDeletable(current, trx))) throw new NotFoundError();
    await deletions.record(deletionOf(current, toStoredTime(clock())), trx);
    await activity.record(context, describe(current), trx);
    return current;
  }

  /**
   * Removes a deleted backup's archive from its store. A failure is logged, not thrown: the row
   * is gone and its deletion recorded, so `backup reconcile` removes what is left later.
   */
  async removeArchive(deleted: Backup): Promise<void> {
    await this.removeStored(deleted).catch((error: unknown) => {
      this.deps.logger.warn(
        { err: error, backup: deleted.id },
        'could not delete a backup archive; `backup reconcile` removes it later',
      );
    });
  }

  /**
   * The snapshot repositories of one server (`serverRef`) or of every server, in every store this
   * process is set up for: the current one, and local disk for backups made before it changed.
   */
  async repositories(serverRef?: string): Promise<{ serverId: string; identifier: string; disk: string }[]> {
    const servers =
      serverRef === undefined ? await this.deps.servers.all() : [await this.serverByReference(serverRef)];
    const disks = [...new Set([this.deps.storage.disk, 'local'])];
    return servers.flatMap((server) =>
      disks.map((disk) => ({ serverId: server.id, identifier: server.identifier, disk })),
    );
  }

  /** `aerie backup prune`: reclaims what no snapshot uses, repository by repository. */
  async pruneRepositories(
    serverRef?: string,
    onProgress?: (progress: PruneProgress) => void,
  ): Promise<
    {
      serverId: string;
      identifier: string;
      disk: string;
      report: PruneReport;
      garbageSnapshotsRemoved: number;
    }[]
  > {
    const done = [];
    for (const repository of await this.repositories(serverRef)) {
      // Records of failed backups, and of deleted ones (their deletion is recorded), go first. A
      // record nobody knows is kept: after a database is restored from an older dump, it is a
      // backup made since.
      const rows = await this.deps.backups.allOfServer(repository.serverId);
      const deleted = (await this.deps.deletions.all()).map((d) => d.backupId);
      const failed = rows.filter((b) => !b.isSuccessful && b.completedAt !== null).map((b) => b.id);
      const garbage = new Set([...failed, ...deleted]);
      const dropped = await this.deps.snapshots.dropRecords(repository.serverId, repository.disk, garbage);
      const report = await this.deps.snapshots.prune(repository.serverId, repository.disk, onProgress);
      done.push({ ...repository, report, garbageSnapshotsRemoved: dropped.length });
    }
    return done;
  }

  /** `aerie backup check`: checks every repository; `readData` reads and hashes every chunk. */
  async checkRepositories(
    serverRef: string | undefined,
    readData: boolean,
    onProgress?: (progress: CheckProgress) => void,
  ): Promise<{ serverId: string; identifier: string; disk: string; report: CheckReport }[]> {
    const done = [];
    for (const repository of await this.repositories(serverRef)) {
      const report = await this.deps.snapshots.check(
        repository.serverId,
        repository.disk,
        readData,
        onProgress,
      );
      done.push({ ...repository, report });
    }
    return done;
  }

  private async serverByReference(reference: string): Promise<ServerRow> {
    const server = await this.deps.servers.findByReference(reference);
    if (server === undefined) throw new NotFoundError(`No server "${reference}".`);
    return server;
  }

  /**
   * Prunes the repositories that deleted snapshot backups were in, so their chunks no other
   * snapshot uses are reclaimed. A failure is logged, not thrown: `aerie backup prune` (or the
   * next retention run) reclaims them later.
   */
  async pruneAfterDelete(deleted: readonly Backup[]): Promise<void> {
    const repositories = new Map<string, Backup>();
    for (const backup of deleted)
      if (backup.format === 'snapshot') repositories.set(`${backup.disk}:${backup.serverId}`, backup);
    for (const backup of repositories.values()) {
      try {
        const report = await this.deps.snapshots.prune(backup.serverId, backup.disk);
        this.deps.logger.info(
          { server: backup.serverId, before: report.before.bytes, after: report.after.bytes },
          'pruned the backup repository',
        );
      } catch (error) {
        this.deps.logger.warn(
          { err: error, server: backup.serverId },
          'could not prune the backup repository; `aerie backup prune` reclaims its space later',
        );
      }
    }
  }

  /** Removes what storage keeps of a backup: its archive, or its snapshot record. */
  private async removeStored(backup: Backup): Promise<void> {
    // This node's catalog of it first: a cache, of a backup about to be gone.
    await this.deps.files.forget(backup);
    if (backup.format === 'snapshot') return this.deps.snapshots.remove(backup);
    return this.deps.storageOf(backup.disk).delete(backup.serverId, backup.id);
  }

  /**
   * A link that downloads the archive without credentials, for 15 minutes: presigned by the
   * store when it can (S3), else Aerie's own path with a token Aerie signed. Which host that path
   * is on is the HTTP layer's to say (AERIE_PUBLIC_URL), never the service's.
   */
  async downloadLink(context: AuthenticatedContext, backup: Backup): Promise<DownloadLink> {
    if (!backup.isSuccessful) {
      throw new DisplayError('This backup cannot be downloaded: not completed or failed.');
    }
    const store = this.deps.storageOf(backup.disk);
    // A snapshot is made into a .tar.gz by Aerie as it is sent: there is no object to presign;
    // its store must be one this process can read, as an archive's must.
    const presigned = await (
      backup.format === 'snapshot'
        ? Promise.resolve().then(() => (store.repository(backup.serverId), null))
        : store.downloadUrl(backup.serverId, backup.id, DOWNLOAD_LINK_SECONDS, downloadName(backup))
    ).catch((error: unknown) => {
      if (error instanceof ArchiveError)
        throw new DisplayError('This backup cannot be downloaded: its archive is not available here.');
      throw error;
    });
    const expires = Math.floor(this.deps.clock().getTime() / 1000) + DOWNLOAD_LINK_SECONDS;
    const link: DownloadLink =
      presigned !== null
        ? { kind: 'presigned', url: presigned }
        : {
            kind: 'signed',
            path: `/download/backup?token=${this.deps.signer.sign({ serverId: backup.serverId, backupId: backup.id, expires })}`,
          };
    await this.deps.activity.record(context, entry(context, 'server:backup.download', backup));
    return link;
  }

  /** The archive a download link points at. */
  async openDownload(token: string): Promise<Download> {
    const grant = this.deps.signer.verify(token, Math.floor(this.deps.clock().getTime() / 1000));
    if (grant === null) throw new ForbiddenError('This download link is invalid or has expired.');
    const backup = await this.deps.backups.findOfServer(grant.serverId, grant.backupId);
    if (backup === undefined || !backup.isSuccessful) throw new NotFoundError();
    if (grant.path !== undefined) return this.openPath(backup, grant.path);
    if (backup.format === 'snapshot') {
      // Its size is known only once sent: the response is chunked.
      const stream = await this.deps.snapshots.download(backup).catch((error: unknown) => {
        if (error instanceof ArchiveError && error.reason === 'not-found')
          throw new NotFoundError('This backup is missing from storage.');
        if (error instanceof ArchiveError)
          throw new DisplayError(`This backup cannot be downloaded: ${error.message}.`);
        throw error;
      });
      return {
        stream: explainedDownload(stream, 'This backup'),
        filename: downloadName(backup),
        bytes: null,
        type: 'application/gzip',
      };
    }
    const stream = await this.deps.storageOf(backup.disk).get(grant.serverId, grant.backupId);
    return { stream, filename: downloadName(backup), bytes: backup.bytes, type: 'application/gzip' };
  }

  /** One path of a backup (a signed link from BackupFiles): a file, or a directory's .tar.gz. */
  private async openPath(backup: Backup, normalized: string): Promise<Download> {
    const found = await this.openPathOf(backup, normalized).catch((error: unknown) => {
      if (error instanceof ArchiveError && error.reason === 'not-found')
        throw new NotFoundError('This backup is missing from storage.');
      if (error instanceof ArchiveError)
        throw new DisplayError(`This file cannot be downloaded: ${error.message}.`);
      throw error;
    });
    if (found === null) throw new NotFoundError('This backup has no such file.');
    found.stream.on('error', (error) =>
      this.deps.logger.warn(
        { backup: backup.id, path: normalized, err: error },
        'a download of one path failed',
      ),
    );
    // A header-safe name: what the browser saves it as.
    const name = safeName(path.posix.basename(normalized)) || safeName(backup.name) || 'backup';
    const stream = explainedDownload(found.stream, found.kind === 'file' ? 'This file' : 'This directory');
    return found.kind === 'file'
      ? { stream, filename: name, bytes: found.bytes, type: 'application/octet-stream' }
      : { stream, filename: `${name}.tar.gz`, bytes: null, type: 'application/gzip' };
  }

  /** A snapshot's path from its trees; an archive's read from the archive, as its catalog says it is. */
  private async openPathOf(backup: Backup, normalized: string): Promise<PathDownload | null> {
    if (backup.format === 'snapshot') return this.deps.snapshots.downloadPath(backup, pathParts(normalized));
    if (normalized === '/') {
      // The backup's root: the archive itself.
      const stream = await this.deps.storageOf(backup.disk).get(backup.serverId, backup.id);
      return { kind: 'directory', stream, bytes: backup.bytes };
    }
    const entry = await this.deps.files.entryOf(backup, normalized);
    if (entry === null) return null;
    const archive = await fromStore(() =>
      this.deps.storageOf(backup.disk).locate(backup.serverId, backup.id),
    );
    const kind = entry.directory ? 'directory' : 'file';
    // Only the pieces of the archive that hold the path, when its catalog says which they are.
    const slice = await this.deps.files.sliceOf(backup, entry);
    const stream = archivePathStream(
      {
        archive,
        rel: normalized.slice(1),
        kind,
        sha256: backup.sha256,
        ...(slice === null ? {} : { slice }),
      },
      (archiveBytes) =>
        this.deps.logger.debug(
          { backup: backup.id, path: normalized, archiveBytes, ranged: slice !== null },
          'one path read from a backup archive',
        ),
    );
    return { kind, stream, bytes: entry.directory ? null : entry.size };
  }

  /** Stores an existing .tar.gz as a backup of a server, after reading it through to prove it whole. */
  async importArchive(
    serverRef: string,
    name: string,
    file: string,
    onProgress?: (p: Progress) => void,
  ): Promise<BackupRecord> {
    const server = await this.serverFor(serverRef, name);
    let files: number;
    try {
      ({ files } = await verifyArchive(file, onProgress));
    } catch (error) {
      // Said to whoever runs the import (an AppError is a message, not a stack trace).
      if (error instanceof ArchiveError)
        throw new BadRequestError(`${file} cannot be imported: ${error.message}.`);
      throw error;
    }
    const { storage, format, snapshots } = this.deps;
    if (format === 'snapshot') {
      // Unpacked into a scratch directory beside the store's files (as a restore reads it: every
      // path judged, links left out), then taken as a snapshot of that directory.
      return this.store(server, name, 'snapshot', async (backup, report) => {
        const scratch = `${await storage.scratchFile(server.id, backup.id)}.d`;
        try {
          await extractBackup(scratch, file);
          const parent = await snapshots.parentOf(backup);
          return await snapshots.take(backup, parent, { volume: scratch, onProgress: report });
        } finally {
          await removeTree(scratch);
        }
      });
    }
    return this.store(server, name, 'archive', async ({ id }) => {
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
    options: { full?: boolean } = {},
  ): Promise<BackupRecord> {
    const server = await this.serverFor(serverRef, name);
    const { storage } = this.deps;
    const { format, snapshots } = this.deps;
    return this.store(server, name, format, async (backup, report) => {
      const progress = (p: Progress) => {
        onProgress?.(p);
        report(p);
      };
      const progressIntervalMs = threadProgressInterval(this.deps.progress.intervalMs);
      if (format === 'snapshot') {
        const parent = await snapshots.parentOf(backup);
        return snapshots.take(backup, parent, { onProgress: progress, progressIntervalMs, ...options });
      }
      // A scratch file moved into place, or (S3) an upload made while the archive is written.
      const target = await storage.newArchive(server.id, backup.id);
      try {
        const summary = await archiveVolume(this.deps.volumeOf(server), target, {
          onProgress: progress,
          progressIntervalMs,
        });
        await storage.keep(server.id, backup.id, target);
        return { sha256: summary.sha256, bytes: summary.archiveBytes, files: summary.files };
      } finally {
        await storage.discard(target);
      }
    });
  }

  /**
   * Keeps a server's files as they are now as an automatic snapshot backup named for the restore
   * about to replace them (its job id in the name: a retried job finds the one it took), so the
   * restore can be undone. Taken while the server is `restoring_backup`: nothing else writes its
   * files meanwhile. It counts against the backup limit (nothing is rotated out during a restore);
   * the retention policy treats it as any automatic backup. If it cannot be taken, it throws, and
   * the restore fails before replacing anything.
   */
  async takeUndoBackup(
    serverId: string,
    restored: Backup,
    jobId: number,
    context: RequestContext,
  ): Promise<Backup> {
    const { backups, activity, transaction, clock } = this.deps;
    const name = `Before restoring ${restored.name}`.slice(0, 160) + ` (restore #${jobId})`;
    const taken = await backups.findSuccessfulByName(serverId, name);
    if (taken !== undefined) return taken;
    const now = toStoredTime(clock());
    const backup: Backup = {
      id: randomUUID(),
      serverId,
      name,
      ignoredFiles: [],
      disk: this.deps.storage.disk,
      sha256: null,
      bytes: 0,
      isSuccessful: false,
      isLocked: false,
      isAutomatic: true,
      scheduleId: null,
      createdAt: now,
      completedAt: null,
      files: null,
      format: 'snapshot',
      addedBytes: null,
      progress: null,
    };
    await backups.insert(backup);
    const origin = { restore_of: restored.name };
    try {
      const parent = await this.deps.snapshots.parentOf(backup);
      const made = await this.deps.snapshots.take(backup, parent);
      await transaction(async (trx) => {
        await backups.complete(backup, made, toStoredTime(clock()), trx);
        await activity.record(context, systemEntry('server:backup.complete', backup, origin), trx);
      });
      return { ...backup, isSuccessful: true, sha256: made.sha256, bytes: made.bytes, files: made.files };
    } catch (error) {
      await transaction(async (trx) => {
        await backups.markFailed(backup, toStoredTime(clock()), trx);
        await activity.record(
          context,
          systemEntry('server:backup.fail', backup, { ...origin, reason: (error as Error).message }),
          trx,
        );
      });
      await this.deps.snapshots.remove(backup).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Writes a backup's files into `directory` (empty, or not there yet): disaster recovery
   * without the API (`aerie backup extract`). Every path is judged as a restore judges it.
   */
  async extractTo(
    serverRef: string,
    backupRef: string,
    directory: string,
    onProgress?: (p: Progress) => void,
  ): Promise<{ backup: Backup; files: number; directories: number; bytes: number; skipped: number }> {
    const { backup } = await this.completedBackup(serverRef, backupRef);
    const source =
      backup.format === 'snapshot'
        ? { repository: this.deps.snapshots.repositoryOf(backup), backupId: backup.id, sha256: backup.sha256 }
        : await this.deps.storageOf(backup.disk).locate(backup.serverId, backup.id);
    try {
      const extract = () => extractBackup(directory, source, onProgress);
      const report =
        backup.format === 'snapshot' ? await this.deps.snapshots.reading(backup, extract) : await extract();
      const skipped = report.skipped.length + (report.skippedOmitted ?? 0);
      return { backup, files: report.files, directories: report.directories, bytes: report.bytes, skipped };
    } catch (error) {
      if (error instanceof ArchiveError)
        throw new BadRequestError(`The backup could not be extracted: ${error.message}.`);
      throw error;
    }
  }

  /** A finished, successful backup of a server, and the server, by references as an operator types them. */
  async completedBackup(
    serverRef: string,
    backupRef: string,
  ): Promise<{ backup: Backup; server: ServerRow }> {
    const server = await this.serverByReference(serverRef);
    const backup = await this.deps.backups.findOfServer(server.id, backupRef);
    if (backup === undefined)
      throw new NotFoundError(`No backup "${backupRef}" of server ${server.identifier}.`);
    if (!backup.isSuccessful) throw new BadRequestError(`Backup ${backup.id} is not completed, or failed.`);
    return { backup, server };
  }

  /**
   * The server a backup made or imported from the command line is of. The backup's name meets the
   * API's rule (shared/text.ts) first, before anything is read or archived.
   */
  private async serverFor(reference: string, backupName: string): Promise<ServerRow> {
    assertText('name', backupName, 'single-line');
    const server = await this.deps.servers.findByReference(reference);
    if (server === undefined) throw new NotFoundError(`No server "${reference}".`);
    return server;
  }

  /**
   * Records a new backup in progress, stores its archive with `write`, then records it finished.
   * The row comes first, as for a backup made through the API, so that whatever a store holds of
   * an archive is named by a backup from its first byte (the rule `backup reconcile` relies on to
   * tell leftovers from work in progress). While `write` runs, progress reaches the row at least
   * every minute, its sign of life: a row left in progress by a process that died stops showing
   * one, and reconcile marks it failed. If `write` fails, what it stored and the row are removed,
   * and the row's delete is recorded unless the archive is known to be gone (see below).
   */
  private async store(
    server: ServerRow,
    name: string,
    format: BackupFormat,
    write: (
      backup: Backup,
      report: (p: Progress) => void,
    ) => Promise<{ sha256: string; bytes: number; files: number; addedBytes?: number }>,
  ): Promise<BackupRecord> {
    const { storage, backups, deletions, transaction, clock, logger } = this.deps;
    const now = toStoredTime(clock());
    const trimmed = name.trim();
    const backup: Backup = {
      id: randomUUID(),
      serverId: server.id,
      name: trimmed === '' ? `Backup at ${now}` : trimmed.slice(0, 191),
      ignoredFiles: [],
      disk: storage.disk,
      sha256: null,
      bytes: 0,
      isSuccessful: false,
      isLocked: false,
      isAutomatic: false,
      scheduleId: null,
      createdAt: now,
      completedAt: null,
      files: null,
      format,
      addedBytes: null,
      progress: null,
    };
    await backups.insert(backup);
    const progress = new ProgressReporter({ ...this.deps.progress, backups, clock }, backup, {
      operation: 'backup',
      phase: 'archiving',
      bytesTotal: null,
      filesTotal: null,
    });
    const heartbeat = setInterval(() => progress.report({}), HEARTBEAT_MS);
    heartbeat.unref();
    let stored = false;
    try {
      const made = await write(backup, (p) => progress.report(toCounts(p, format), p.phase));
      stored = true;
      clearInterval(heartbeat);
      await progress.stop();
      await backups.complete(backup, made, toStoredTime(clock()));
      return {
        uuid: backup.id,
        name: backup.name,
        format,
        bytes: made.bytes,
        files: made.files,
        added_bytes: made.addedBytes ?? null,
        checksum: `sha256:${made.sha256}`,
      };
    } catch (error) {
      clearInterval(heartbeat);
      await progress.clear();
      // The archive first, then the row: a process that dies in between leaves a row in progress
      // without a sign of life, which reconcile marks failed (and then removes what it kept).
      // The row's delete is recorded when an archive may be left: its removal failed (the store
      // unreachable), or it was never reported stored (a store may have kept it although the
      // call failed). Without the record, reconcile could not tell such an archive from a real
      // backup whose row is missing, and would only report it.
      const removed =
        stored &&
        (await this.removeStored(backup).then(
          () => true,
          () => false,
        ));
      await transaction(async (trx) => {
        await backups.delete(backup, trx);
        if (!removed) await deletions.record(deletionOf(backup, toStoredTime(clock())), trx);
      }).catch((cause: unknown) => {
        logger.warn({ err: cause, backup: backup.id }, 'could not remove the row of a backup that failed');
      });
      throw error;
    }
  }
}

/** The file name a download is saved under. */
function downloadName(backup: Backup): string {
  return `${safeName(backup.name) || 'backup'}.tar.gz`;
}

/** A name for a Content-Disposition header: letters, digits, `.`, `_` and `-` only, 100 at most. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 100);
}

function deletionOf(backup: Backup, deletedAt: string): BackupDeletion {
  return { backupId: backup.id, serverId: backup.serverId, disk: backup.disk, deletedAt };
}

function entry(context: AuthenticatedContext, event: ActivityEvent, backup: Backup): ActivityEntry {
  return backupEntry(event, context.actor, backup);
}

/** An entry about a backup that the system wrote (a schedule, a retention policy), with no actor. */
export function systemEntry(
  event: ActivityEvent,
  backup: Backup,
  properties: Record<string, unknown>,
): ActivityEntry {
  return backupEntry(event, null, backup, properties);
}

export function backupEntry(
  event: ActivityEvent,
  actor: Actor | null,
  backup: Backup,
  properties: Record<string, unknown> = {},
): ActivityEntry {
  return {
    event,
    actor,
    properties: { name: backup.name, ...properties },
    subjects: [
      { type: 'server', id: backup.serverId },
      { type: 'backup', id: backup.id },
    ],
  };
}
