import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { JobPayloads } from '../jobs/job-kinds.ts';
import type { ServerAccessService } from '../servers/server-access.ts';
import { conflictFor } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { BackupRow, ServerRow } from '../servers/server.table.ts';
import type { AuthenticatedContext } from '../shared/context.ts';
import { BadRequestError, NotFoundError, ValidationError, type FieldError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { ArchiveError, type Progress } from '../storage/archive.types.ts';
import type { BackupStorage } from '../storage/backup-storage.ts';
import { sha256File } from '../storage/checksum.ts';
import { verifyArchive } from '../storage/verify-archive.ts';
import { archiveVolume } from './archive-volume.ts';
import type { BackupRepository } from './backup.repository.ts';
import type { BackupParams, RestoreBody } from './backup.schema.ts';
import type { RestoreThrottle } from './restore-throttle.ts';

export interface BackupRecord {
  uuid: string;
  name: string;
  bytes: number;
  checksum: string;
}

const RESTORING = 'restoring_backup';

export class BackupService {
  constructor(
    private readonly backups: BackupRepository,
    private readonly servers: ServerRepository,
    private readonly access: ServerAccessService,
    private readonly jobs: JobRepository,
    private readonly activity: ActivityService,
    private readonly storage: BackupStorage,
    private readonly transaction: Transactor,
    private readonly clock: Clock,
    private readonly volumeOf: (server: Pick<ServerRow, 'id'>) => string,
    private readonly throttle: RestoreThrottle,
  ) {}

  /**
   * Queues a restore. The checks run in the reference panel's order — visibility (404), the
   * backup's server (404), the server's state (409), permission (403), the body (422), the
   * backup's success (400) — and the state change, the job and the audit entry are one
   * transaction, so of two simultaneous requests exactly one wins.
   */
  async requestRestore(
    context: AuthenticatedContext,
    params: BackupParams,
    body: RestoreBody,
    bodyErrors: FieldError[] | null,
  ): Promise<void> {
    const access = await this.access.resolve(context.actor, params.server);
    const backup = await this.backups.findOfServer(access.server.id, params.backup);
    if (backup === undefined) throw new NotFoundError();
    this.access.assertIdle(access);
    this.access.assertCan(access, 'backup.restore');
    if (bodyErrors !== null) throw new ValidationError(bodyErrors);
    if (backup.is_successful !== 1 || backup.completed_at === null) {
      throw new BadRequestError('This backup cannot be restored at this time: not completed or failed.');
    }

    const truncate = body.truncate;
    const now = toStoredTime(this.clock());
    await this.throttle.run(access.server.id, () =>
      this.transaction(async (trx) => {
        if (!(await this.servers.claimStatus(access.server.id, RESTORING, now, trx))) {
          const current = await this.servers.findByReference(access.server.id, trx);
          throw conflictFor(current?.status ?? RESTORING);
        }
        const payload: JobPayloads['backup.restore'] = {
          serverId: access.server.id,
          backupId: backup.id,
          truncate,
          actorId: context.actor.user.id,
          ip: context.ip,
        };
        await this.jobs.enqueue({ kind: 'backup.restore', payload, batch: context.batch }, now, trx);
        await this.activity.record(
          context,
          {
            event: 'server:backup.restore',
            actor: context.actor,
            properties: { name: backup.name, truncate },
            subjects: [
              { type: 'server', id: access.server.id },
              { type: 'backup', id: backup.id },
            ],
          },
          trx,
        );
      }),
    );
  }

  /** Stores an existing .tar.gz as a backup of a server, after reading it through to prove it whole. */
  async importArchive(serverRef: string, name: string, file: string, onProgress?: (p: Progress) => void) {
    const server = await this.serverFor(serverRef);
    try {
      await verifyArchive(file, onProgress);
    } catch (error) {
      // Said to whoever runs the import (an AppError is a message, not a stack trace).
      if (error instanceof ArchiveError)
        throw new BadRequestError(`${file} cannot be imported: ${error.message}.`);
      throw error;
    }
    const id = randomUUID();
    const scratch = await this.storage.scratchFile(server.id, id);
    try {
      await fs.copyFile(file, scratch);
      const { sha256, bytes } = await sha256File(scratch);
      await this.storage.put(server.id, id, scratch);
      return await this.record(server, id, name, sha256, bytes);
    } finally {
      await fs.rm(scratch, { force: true });
    }
  }

  /** Archives a server's volume as it is now into a new backup, and waits until it is stored. */
  async createNow(serverRef: string, name: string, onProgress?: (p: Progress) => void) {
    const server = await this.serverFor(serverRef);
    const id = randomUUID();
    const scratch = await this.storage.scratchFile(server.id, id);
    try {
      const summary = await archiveVolume(this.volumeOf(server), scratch, onProgress ? { onProgress } : {});
      await this.storage.put(server.id, id, scratch);
      return await this.record(server, id, name, summary.sha256, summary.archiveBytes);
    } finally {
      await fs.rm(scratch, { force: true });
    }
  }

  private async serverFor(reference: string): Promise<ServerRow> {
    const server = await this.servers.findByReference(reference);
    if (server === undefined) throw new NotFoundError(`No server "${reference}".`);
    return server;
  }

  private async record(
    server: ServerRow,
    id: string,
    name: string,
    sha256: string,
    bytes: number,
  ): Promise<BackupRecord> {
    const trimmed = name.trim();
    const now = toStoredTime(this.clock());
    const row: BackupRow = {
      id,
      server_id: server.id,
      name: trimmed === '' ? `Backup at ${now}` : trimmed.slice(0, 191),
      ignored_files: '[]',
      disk: 'local',
      sha256,
      bytes,
      is_successful: 1,
      is_locked: 0,
      created_at: now,
      completed_at: now,
    };
    await this.backups.insert(row);
    return { uuid: id, name: row.name, bytes, checksum: `sha256:${sha256}` };
  }
}
