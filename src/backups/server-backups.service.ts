import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import { offsetOf, paginate, type PageUrl } from '../http/pagination.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { ServerAccess, ServerAccessService } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { BackupRow } from '../servers/server.table.ts';
import type { Actor, AuthenticatedContext } from '../shared/context.ts';
import { ConflictError, DisplayError, ForbiddenError, NotFoundError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { BackupStorage } from '../storage/backup-storage.ts';
import type { BackupRepository } from './backup.repository.ts';
import type {
  BackupList,
  BackupListQuery,
  BackupParams,
  BackupResource,
  CreateBackupBody,
  SignedUrl,
} from './backup.schema.ts';
import { toBackupResource } from './backup.transform.ts';
import type { DownloadSigner } from './download-signer.ts';
import { parseIgnored } from './ignore-patterns.ts';

const DOWNLOAD_LINK_SECONDS = 15 * 60;

/** A server's backups as its users manage them: list, make, read, lock, delete, download. */
export class ServerBackupsService {
  constructor(
    private readonly backups: BackupRepository,
    private readonly servers: ServerRepository,
    private readonly access: ServerAccessService,
    private readonly jobs: JobRepository,
    private readonly activity: ActivityService,
    private readonly storage: BackupStorage,
    private readonly signer: DownloadSigner,
    private readonly transaction: Transactor,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async list(
    actor: Actor,
    serverRef: string,
    query: BackupListQuery,
    pageUrl?: PageUrl,
  ): Promise<BackupList> {
    const access = await this.access.resolve(actor, serverRef);
    this.access.assertCan(access, 'backup.read');
    const total = await this.backups.countForServer(access.server.id);
    const offset = offsetOf(query.page, query.per_page);
    const rows = offset >= total ? [] : await this.backups.page(access.server.id, query.per_page, offset);
    return {
      object: 'list',
      data: rows.map(toBackupResource),
      meta: {
        pagination: paginate(total, rows.length, query.per_page, query.page, pageUrl),
        backup_count: total,
      },
    };
  }

  async get(actor: Actor, params: BackupParams): Promise<BackupResource> {
    const { backup } = await this.find(actor, params, 'backup.read');
    return toBackupResource(backup);
  }

  /**
   * Records a backup in progress and queues the job that archives the volume. The server's
   * backup limit is checked under a lock on the server's row, so it holds under concurrency.
   */
  async create(
    context: AuthenticatedContext,
    serverRef: string,
    body: CreateBackupBody,
  ): Promise<BackupResource> {
    const access = await this.access.resolve(context.actor, serverRef);
    this.access.assertCan(access, 'backup.create');
    this.access.assertIdle(access);
    const { server } = access;
    const now = toStoredTime(this.clock());
    const name = body.name?.trim() ? body.name.trim() : `Backup at ${now.slice(0, 19).replace('T', ' ')}`;
    const row: BackupRow = {
      id: randomUUID(),
      server_id: server.id,
      name,
      ignored_files: JSON.stringify(parseIgnored(body.ignored ?? '')),
      disk: 'local',
      sha256: null,
      bytes: 0,
      is_successful: 0,
      is_locked: body.is_locked ? 1 : 0,
      created_at: now,
      completed_at: null,
    };
    await this.transaction(async (trx) => {
      await this.servers.lock(server.id, trx);
      if (server.backup_limit === 0) throw new ForbiddenError('Backups are disabled for this server.');
      if ((await this.backups.countForServer(server.id, trx)) >= server.backup_limit) {
        throw new DisplayError(
          `Cannot create a new backup, this server has reached its limit of ${server.backup_limit} backups.`,
        );
      }
      await this.backups.insert(row, trx);
      await this.jobs.enqueue(
        {
          kind: 'backup.create',
          payload: { serverId: server.id, backupId: row.id, actorId: context.actor.user.id, ip: context.ip },
          batch: context.batch,
        },
        now,
        trx,
      );
      await this.activity.record(context, this.entry(context, 'server:backup.start', access, row), trx);
    });
    return toBackupResource(row);
  }

  /** Locks an unlocked backup, unlocks a locked one. A locked backup cannot be deleted. */
  async toggleLock(context: AuthenticatedContext, params: BackupParams): Promise<BackupResource> {
    const { access, backup } = await this.find(context.actor, params, 'backup.delete');
    const locked = Number(backup.is_locked) !== 1;
    await this.transaction(async (trx) => {
      await this.backups.setLocked(backup.id, locked, trx);
      const event = locked ? 'server:backup.lock' : 'server:backup.unlock';
      await this.activity.record(context, this.entry(context, event, access, backup), trx);
    });
    return toBackupResource({ ...backup, is_locked: locked ? 1 : 0 });
  }

  async delete(context: AuthenticatedContext, params: BackupParams): Promise<void> {
    const { access, backup } = await this.find(context.actor, params, 'backup.delete');
    if (Number(backup.is_locked) === 1)
      throw new DisplayError('Cannot delete a backup that is marked as locked.');
    if (backup.completed_at === null) {
      throw new ConflictError('This backup is still being made; it can be deleted once it is done.');
    }
    if (access.server.status === 'restoring_backup') this.access.assertIdle(access);
    await this.transaction(async (trx) => {
      await this.backups.delete(backup.id, trx);
      await this.activity.record(context, this.entry(context, 'server:backup.delete', access, backup), trx);
    });
    // The record is gone; an archive left behind by a failed delete is only wasted space.
    await this.storage.delete(access.server.id, backup.id).catch((error: unknown) => {
      this.logger.warn({ err: error, backup: backup.id }, 'could not delete a backup archive');
    });
  }

  /** A link that downloads the archive without credentials, for 15 minutes. */
  async downloadLink(
    context: AuthenticatedContext,
    params: BackupParams,
    baseUrl: string,
  ): Promise<SignedUrl> {
    const { access, backup } = await this.find(context.actor, params, 'backup.download');
    if (Number(backup.is_successful) !== 1) {
      throw new DisplayError('This backup cannot be downloaded: not completed or failed.');
    }
    const expires = Math.floor(this.clock().getTime() / 1000) + DOWNLOAD_LINK_SECONDS;
    const token = this.signer.sign({ serverId: access.server.id, backupId: backup.id, expires });
    await this.activity.record(context, this.entry(context, 'server:backup.download', access, backup));
    return { object: 'signed_url', attributes: { url: `${baseUrl}/download/backup?token=${token}` } };
  }

  /** The archive a download link points at. */
  async openDownload(token: string): Promise<{ stream: Readable; filename: string; bytes: number }> {
    const grant = this.signer.verify(token, Math.floor(this.clock().getTime() / 1000));
    if (grant === null) throw new ForbiddenError('This download link is invalid or has expired.');
    const backup = await this.backups.findOfServer(grant.serverId, grant.backupId);
    if (backup === undefined || Number(backup.is_successful) !== 1) throw new NotFoundError();
    const stream = await this.storage.get(grant.serverId, grant.backupId);
    const filename = `${backup.name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 100) || 'backup'}.tar.gz`;
    return { stream, filename, bytes: Number(backup.bytes) };
  }

  private async find(
    actor: Actor,
    params: BackupParams,
    permission: Parameters<ServerAccessService['assertCan']>[1],
  ) {
    const access = await this.access.resolve(actor, params.server);
    const backup = await this.backups.findOfServer(access.server.id, params.backup);
    if (backup === undefined) throw new NotFoundError();
    this.access.assertCan(access, permission);
    return { access, backup };
  }

  private entry(
    context: AuthenticatedContext,
    event: Parameters<ActivityService['record']>[1]['event'],
    access: ServerAccess,
    backup: Pick<BackupRow, 'id' | 'name'>,
  ) {
    return {
      event,
      actor: context.actor,
      properties: { name: backup.name },
      subjects: [
        { type: 'server' as const, id: access.server.id },
        { type: 'backup' as const, id: backup.id },
      ],
    };
  }
}
