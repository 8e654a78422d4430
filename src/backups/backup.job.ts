import type { ActivityService } from '../activity/activity.service.ts';
import type { ActivityEvent } from '../activity/activity.events.ts';
import type { Transactor } from '../db/executor.ts';
import { Type } from '@sinclair/typebox';
import { payloadSchema, type JobContext, type JobHandler } from '../jobs/job-handler.ts';
import type { JobPayloads } from '../jobs/job-kinds.ts';
import type { JobResult } from '../jobs/job-observer.ts';
import type { RequestContext } from '../shared/context.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { toUser } from '../users/user.ts';
import type { BackupRepository } from './backup.repository.ts';
import { archiveVolume } from './backup-archive.ts';
import {
  ProgressReporter,
  threadProgressInterval,
  toCounts,
  type ProgressReporterDeps,
} from './backup-progress.ts';
import { tellingTheQueue } from './job-errors.ts';
import type { SnapshotBackups } from './snapshot-backups.ts';
import type { Backup } from './backup.ts';

type Payload = JobPayloads['backup.create'];

/**
 * What every job on a backup holds: its server and backup, and who asked and from where (the
 * job's activity entries are theirs).
 */
export const backupJobFields = {
  serverId: Type.String(),
  backupId: Type.String(),
  actorId: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
};

/** What a backup.create job holds: checked by the worker before the job runs. */
export const BackupJobPayloadSchema = payloadSchema('backup.create', Type.Object(backupJobFields));

export interface BackupArchiveJobDeps {
  backups: BackupRepository;
  users: UserRepository;
  activity: ActivityService;
  storage: BackupStorage;
  transaction: Transactor;
  clock: Clock;
  volumeOf: (server: { id: string }) => string;
  /** Where and how often the job's progress is written. */
  progress: Omit<ProgressReporterDeps, 'backups' | 'clock'>;
  /** Backups kept as snapshots (a backup whose `format` is `snapshot`). */
  snapshots: SnapshotBackups;
  /** Applies the server's retention policy once an automatic backup succeeded (never throws). */
  retention?: { applyAfterBackup(serverId: string, context: RequestContext): Promise<void> };
}

/**
 * Archives a server's volume into the backup its request created, then marks the backup
 * successful (with its size and checksum) or failed. Running it again after a crash simply
 * starts the archive over. Its progress is on the backup's row while it runs. An automatic
 * backup (a schedule's) that succeeds is followed by the server's retention policy.
 */
export class BackupArchiveJob implements JobHandler<Payload> {
  readonly payload = BackupJobPayloadSchema;

  constructor(private readonly deps: BackupArchiveJobDeps) {}

  /**
   * Archives, and says how many bytes the archive holds. An archive, a store or a volume that
   * fails is reported to the queue as permanent or unreachable (job-errors.ts).
   */
  run(job: JobContext<Payload>): Promise<JobResult> {
    return tellingTheQueue(() => this.archive(job));
  }

  private async archive(job: JobContext<Payload>): Promise<JobResult> {
    const { serverId, backupId } = job.payload;
    const backup = await this.deps.backups.findOfServer(serverId, backupId);
    if (backup === undefined) return {}; // deleted while queued: nothing to do
    if (backup.format === 'snapshot') return this.snapshot(job, backup);
    // A scratch file to move into place, or (S3) an upload made while the archive is written.
    const target = await fromStore(() => this.deps.storage.newArchive(serverId, backupId));
    const progress = new ProgressReporter(
      { ...this.deps.progress, backups: this.deps.backups, clock: this.deps.clock },
      backup,
      { operation: 'backup', phase: 'archiving', bytesTotal: null, filesTotal: null },
    );
    let recorded = false;
    try {
      const summary = await archiveVolume(this.deps.volumeOf({ id: serverId }), target, {
        ignored: backup.ignoredFiles,
        signal: job.signal,
        progressIntervalMs: threadProgressInterval(this.deps.progress.intervalMs),
        onProgress: (p) => progress.report(toCounts(p, 'archive'), p.phase),
      });
      await fromStore(() => this.deps.storage.keep(serverId, backupId, target));
      await progress.stop();
      const made = { sha256: summary.sha256, bytes: summary.archiveBytes, files: summary.files };
      await this.completed(job, backup, made);
      recorded = true;
      return { bytes: summary.archiveBytes };
    } finally {
      if (!recorded) await progress.clear();
      await this.deps.storage.discard(target);
    }
  }

  /**
   * Takes the backup as a snapshot against the server's last one. Its progress counts against
   * the totals of that one (what this backup will roughly hold).
   */
  private async snapshot(job: JobContext<Payload>, backup: Backup): Promise<JobResult> {
    const { snapshots } = this.deps;
    const parent = await snapshots.parentOf(backup);
    const progress = new ProgressReporter(
      { ...this.deps.progress, backups: this.deps.backups, clock: this.deps.clock },
      backup,
      {
        operation: 'backup',
        phase: 'archiving',
        bytesTotal: parent?.bytes ?? null,
        filesTotal: parent?.files ?? null,
      },
    );
    let recorded = false;
    try {
      const made = await snapshots.take(backup, parent, {
        signal: job.signal,
        progressIntervalMs: threadProgressInterval(this.deps.progress.intervalMs),
        onProgress: (p) => progress.report(toCounts(p, 'snapshot'), p.phase),
      });
      await progress.stop();
      await this.completed(job, backup, made);
      recorded = true;
      return { bytes: made.bytes };
    } finally {
      if (!recorded) await progress.clear();
    }
  }

  /** Records the backup successful (and the end of its progress, in the same write), then retention. */
  private async completed(
    job: JobContext<Payload>,
    backup: Backup,
    made: { sha256: string; bytes: number; files: number; addedBytes?: number },
  ): Promise<void> {
    await this.record(job, 'server:backup.complete', { name: backup.name }, (trx, now) =>
      this.deps.backups.complete(backup, made, now, trx),
    );
    if (backup.isAutomatic) {
      await this.deps.retention?.applyAfterBackup(backup.serverId, {
        batch: job.batch,
        ip: null,
        userAgent: '',
      });
    }
  }

  async fail(job: JobContext<Payload>, reason: string): Promise<void> {
    const backup = await this.deps.backups.findOfServer(job.payload.serverId, job.payload.backupId);
    if (backup === undefined) return;
    await this.record(job, 'server:backup.fail', { name: backup.name, reason }, (trx, now) =>
      this.deps.backups.markFailed(backup, now, trx),
    );
    // A failed backup keeps no archive: one stored before a later step failed is removed. If the
    // store cannot be reached now, `backup reconcile` removes it later (and any upload or scratch
    // file an attempt left), as it does whatever a failed backup still has in storage. A failed
    // snapshot's record goes; the chunks it stored are garbage for the next prune.
    const removal =
      backup.format === 'snapshot'
        ? this.deps.snapshots.remove(backup)
        : this.deps.storage.delete(backup.serverId, backup.id);
    await removal.catch(() => undefined);
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
