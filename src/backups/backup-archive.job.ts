import type { ActivityService } from '../activity/activity.service.ts';
import type { ActivityEvent } from '../activity/activity.events.ts';
import type { Transactor } from '../db/executor.ts';
import type { JobPayloads } from '../jobs/job-kinds.ts';
import type { JobResult } from '../jobs/job-observer.ts';
import type { JobContext, JobHandler } from '../jobs/worker.ts';
import type { RequestContext } from '../shared/context.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { BackupStorage } from '../storage/backup-storage.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { toUser } from '../users/user.ts';
import type { BackupRepository } from './backup.repository.ts';
import { archiveVolume } from './archive-volume.ts';

type Payload = JobPayloads['backup.create'];

export interface BackupArchiveJobDeps {
  backups: BackupRepository;
  users: UserRepository;
  activity: ActivityService;
  storage: BackupStorage;
  transaction: Transactor;
  clock: Clock;
  volumeOf: (server: { id: string }) => string;
}

/**
 * Archives a server's volume into the backup its request created, then marks the backup
 * successful (with its size and checksum) or failed. Running it again after a crash simply
 * starts the archive over.
 */
export class BackupArchiveJob implements JobHandler<Payload> {
  constructor(private readonly deps: BackupArchiveJobDeps) {}

  /** Archives, and says how many bytes the archive holds. */
  async run(job: JobContext<Payload>): Promise<JobResult> {
    const { serverId, backupId } = job.payload;
    const backup = await this.deps.backups.findOfServer(serverId, backupId);
    if (backup === undefined) return {}; // deleted while queued: nothing to do
    // A scratch file to move into place, or (S3) an upload made while the archive is written.
    const target = await this.deps.storage.newArchive(serverId, backupId);
    try {
      const summary = await archiveVolume(this.deps.volumeOf({ id: serverId }), target, {
        ignored: backup.ignoredFiles,
        signal: job.signal,
      });
      await this.deps.storage.keep(serverId, backupId, target);
      await this.record(job, 'server:backup.complete', { name: backup.name }, (trx, now) =>
        this.deps.backups.complete(backupId, summary.sha256, summary.archiveBytes, now, trx),
      );
      return { bytes: summary.archiveBytes };
    } finally {
      await this.deps.storage.discard(target);
    }
  }

  async fail(job: JobContext<Payload>, reason: string): Promise<void> {
    const backup = await this.deps.backups.findOfServer(job.payload.serverId, job.payload.backupId);
    if (backup === undefined) return;
    await this.record(job, 'server:backup.fail', { name: backup.name, reason }, (trx, now) =>
      this.deps.backups.markFailed(backup.id, now, trx),
    );
    // A failed backup keeps no archive: one stored before a later step failed is removed. If the
    // store cannot be reached now, the object stays until the backup is deleted.
    await this.deps.storage.delete(backup.serverId, backup.id).catch(() => undefined);
  }

  private async record(
    job: JobContext<Payload>,
    event: ActivityEvent,
    properties: Record<string, unknown>,
    change: (trx: Parameters<Parameters<Transactor>[0]>[0], now: string) => Promise<void>,
  ): Promise<void> {
    const { serverId, backupId, actorId, ip } = job.payload;
    const userRow = actorId === null ? undefined : await this.deps.users.findById(actorId);
    const context: RequestContext = { batch: job.batch, ip, userAgent: '' };
    await this.deps.transaction(async (trx) => {
      await change(trx, toStoredTime(this.deps.clock()));
      await this.deps.activity.record(
        context,
        {
          event,
          actor: userRow === undefined ? null : { user: toUser(userRow), apiKeyId: null, sessionId: null },
          properties,
          subjects: [
            { type: 'server', id: serverId },
            { type: 'backup', id: backupId },
          ],
        },
        trx,
      );
    });
  }
}
