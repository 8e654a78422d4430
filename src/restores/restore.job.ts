import type { Logger } from 'pino';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import { Type } from '@sinclair/typebox';
import { PermanentJobError } from '../jobs/job-failure.ts';
import { payloadSchema, type JobContext, type JobHandler } from '../jobs/job-handler.ts';
import type { JobPayloads } from '../jobs/job-kinds.ts';
import type { JobResult } from '../jobs/job-observer.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { RequestContext } from '../shared/context.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { toUser } from '../users/user.ts';
import { shownPath, skippedTotal, type ExtractReport } from '../storage/archive/archive.types.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import {
  discardReport,
  emptyTrash,
  recoverRestore,
  restorePaths,
  savedReport,
  swapIn,
} from '../storage/volumes/restore-files.ts';
import { stageRestoreInThread, type ArchiveSlicesSource } from '../storage/volumes/stage-restore.ts';
import type { ArchiveSlice } from '../storage/catalog/archive-pieces.ts';
import type { ArchiveLocation } from '../storage/stores/backup-storage.ts';
import { RestoreSelection } from '../storage/volumes/restore-selection.ts';
import { RESTORE_FILES_MAX } from '../backups/backup.schema.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import {
  ProgressReporter,
  threadProgressInterval,
  toCounts,
  type ProgressReporterDeps,
} from '../backups/backup-progress.ts';
import type { BackupRepository } from '../backups/backup.repository.ts';
import type { Backup } from '../backups/backup.ts';
import { backupJobFields } from '../backups/backup.job.ts';
import { tellingTheQueue } from '../backups/job-errors.ts';
import type { ServerChanges } from '../servers/server-changes.ts';

type Payload = JobPayloads['backup.restore'];

/** What a backup.restore job holds: checked by the worker before the job runs. */
export const RestoreJobPayloadSchema = payloadSchema(
  'backup.restore',
  Type.Object({
    ...backupJobFields,
    truncate: Type.Boolean(),
    undoBackup: Type.Optional(Type.Boolean()),
    files: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: RESTORE_FILES_MAX })),
  }),
);

const MIB = 1024 * 1024;
const RESTORING = 'restoring_backup';
/** How many skipped entries the completion entry lists by name. */
const SKIPPED_SHOWN = 20;

type Recovered =
  { outcome: 'clean' | 'rolled-back' } | { outcome: 'completed'; report: ExtractReport | null };

export interface RestoreJobDeps {
  backups: BackupRepository;
  servers: ServerRepository;
  users: UserRepository;
  activity: ActivityService;
  /** The store a backup's archive is in, by the backup's `disk`. */
  storageOf: (disk: string) => BackupStorage;
  transaction: Transactor;
  clock: Clock;
  volumesDir: string;
  logger: Logger;
  /** Where and how often the job's progress is written. */
  progress: Omit<ProgressReporterDeps, 'backups' | 'clock'>;
  /** Told when the server's status returns to idle (event streams of this process). */
  changes?: ServerChanges;
  /**
   * Keeps the server's files as they are as an automatic backup named for the restore (once per
   * job: a retried job finds the one it took). Returns that backup.
   */
  snapshots?: {
    /** Holds a snapshot's repository while it is read (a prune waits meanwhile). */
    reading<T>(backup: Backup, work: () => Promise<T>, signal?: AbortSignal): Promise<T>;
    /** Records the tree a restore wrote (restored-tree.ts) for the server's next snapshot. */
    keepRestored(backup: Backup, tree: string): Promise<void>;
  };
  /**
   * The pieces of a .tar.gz backup's archive that a partial restore of `paths` reads (from this
   * node's catalog of it); null to read the archive whole.
   */
  slices?: {
    restoreSlices(backup: Backup, paths: readonly string[]): Promise<ArchiveSlice[] | null>;
  };
  undo?: {
    takeUndoBackup(
      serverId: string,
      restored: Backup,
      jobId: number,
      context: RequestContext,
    ): Promise<Backup>;
  };
}

/**
 * Restores a backup onto a server's volume. The archive is checked (present, checksum) and
 * extracted into a staging directory beside the volume (inside it, for a volume that is a mount
 * point); only then is the volume touched, by swapping the staging directory (or its entries) in.
 * A restore picked up again after its worker died first finishes or undoes whatever that worker
 * left (`recoverRestore`).
 */
export class RestoreJob implements JobHandler<Payload> {
  readonly payload = RestoreJobPayloadSchema;

  constructor(private readonly deps: RestoreJobDeps) {}

  /**
   * Restores, and says how many bytes of file content it wrote to the volume. An archive, a store
   * or a volume that fails is reported to the queue as permanent or unreachable (job-errors.ts).
   */
  run(job: JobContext<Payload>): Promise<JobResult> {
    return tellingTheQueue(() => this.restore(job));
  }

  private async restore(job: JobContext<Payload>): Promise<JobResult> {
    const { serverId, backupId, truncate, files } = job.payload;
    const only = files === undefined ? undefined : new RestoreSelection(files);
    const paths = restorePaths(this.deps.volumesDir, serverId, job.id, job.attempt);
    const recovered = await this.recoverEarlierAttempts(job);
    if (recovered.outcome !== 'clean')
      this.deps.logger.warn({ job: job.id, recovered: recovered.outcome }, 'restore picked up after a crash');
    const backup = await this.deps.backups.findOfServer(serverId, backupId);
    if (backup === undefined) throw new PermanentJobError('the backup no longer exists');
    if (recovered.outcome === 'completed') {
      await this.finish(job, 'server:backup.restore-complete', {
        name: backup.name,
        ...this.completionDetails(job, recovered.report),
      });
      return {
        ...(recovered.report === null ? {} : { bytes: recovered.report.bytes }),
        afterwards: () => emptyTrash(this.deps.volumesDir),
      };
    }
    let undoBackup: Backup | null = null;
    if (job.payload.undoBackup === true && this.deps.undo !== undefined) {
      // Before anything is replaced: the files as they are now, kept so that this can be undone.
      undoBackup = await this.deps.undo.takeUndoBackup(serverId, backup, job.id, {
        batch: job.batch,
        ip: job.payload.ip,
        userAgent: '',
      });
    }
    const progress = this.startProgress(backup, only === undefined);
    let recorded = false;
    try {
      const server = await this.deps.servers.findByReference(serverId);
      const maxBytes = server !== undefined && server.disk_mb > 0 ? server.disk_mb * MIB : null;
      // Extraction runs in a worker thread, which reads the archive itself (a file, or a stream
      // from S3); the job's signal ends it and removes its staging.
      const archive =
        backup.format === 'snapshot'
          ? {
              repository: this.deps.storageOf(backup.disk).repository(serverId),
              backupId,
              sha256: backup.sha256,
              // A partial restore writes some of the volume: the tree of it describes nothing.
              keepRestoredTree: this.deps.snapshots !== undefined && only === undefined,
            }
          : await this.archiveSource(backup, only);
      const stage = () =>
        stageRestoreInThread(
          paths,
          archive,
          {
            truncate,
            maxBytes,
            ...(only === undefined ? {} : { only }),
            signal: job.signal,
            progressIntervalMs: threadProgressInterval(this.deps.progress.intervalMs),
          },
          (p) => progress.report(toCounts(p, backup.format), p.phase),
        );
      const report =
        backup.format === 'snapshot' && this.deps.snapshots !== undefined
          ? await this.deps.snapshots.reading(backup, stage, job.signal)
          : await stage();
      // The checksum is taken during extraction; a mismatch throws the staged tree away unused.
      if (backup.sha256 !== null && report.archiveSha256 !== backup.sha256) {
        await recoverRestore(paths);
        throw new PermanentJobError('the backup archive does not match its checksum');
      }
      // The swap must happen once: only while this worker still holds the job.
      if (!(await job.renewLease())) {
        await recoverRestore(paths); // only this attempt's staging: the new owner's are its own
        throw new Error('the job lease was lost before the swap');
      }
      progress.phase('swapping');
      await swapIn(paths);
      if (report.restoredTree !== undefined) await this.keepRestored(backup, report.restoredTree);
      await progress.stop();
      await this.finish(job, 'server:backup.restore-complete', {
        name: backup.name,
        ...this.completionDetails(job, report),
        ...(undoBackup === null ? {} : { undo_backup: undoBackup.id }),
      });
      recorded = true;
      // The replaced tree is deleted once the job is recorded: the server is released already.
      return { bytes: report.bytes, afterwards: () => emptyTrash(this.deps.volumesDir) };
    } finally {
      if (!recorded) await progress.clear();
    }
  }

  /**
   * Where a .tar.gz backup is read from: its archive, or for a partial restore (when this node's
   * catalog says where the chosen paths are) only the pieces of it that hold them.
   */
  private async archiveSource(
    backup: Backup,
    only: RestoreSelection | undefined,
  ): Promise<ArchiveLocation | ArchiveSlicesSource> {
    const archive = await fromStore(() =>
      this.deps.storageOf(backup.disk).locate(backup.serverId, backup.id),
    );
    if (only === undefined || this.deps.slices === undefined) return archive;
    const slices = await this.deps.slices.restoreSlices(backup, only.paths).catch((error: unknown) => {
      this.deps.logger.warn(
        { backup: backup.id, err: error },
        'the catalog could not say where the paths are',
      );
      return null;
    });
    return slices === null ? archive : { archive, slices, sha256: backup.sha256 };
  }

  /**
   * Tells the repository what the restore wrote, so that the next snapshot does not read it all
   * again. Failing costs that next snapshot time, not this restore: logged only.
   */
  private async keepRestored(backup: Backup, tree: string): Promise<void> {
    try {
      await this.deps.snapshots?.keepRestored(backup, tree);
    } catch (error) {
      this.deps.logger.warn({ backup: backup.id, err: error }, 'the restored tree was not recorded');
    }
  }

  /**
   * The restore's progress on the backup's row: for a whole restore it knows the archive's size
   * and, often, its files.
   */
  private startProgress(backup: Backup, whole: boolean): ProgressReporter {
    const { backups, clock } = this.deps;
    // A partial restore writes some of the backup: its totals are not the backup's, and unknown.
    return new ProgressReporter({ ...this.deps.progress, backups, clock }, backup, {
      operation: 'restore',
      phase: 'extracting',
      bytesTotal: whole && backup.bytes > 0 ? backup.bytes : null,
      filesTotal: whole ? backup.files : null,
    });
  }

  /**
   * Finishes or undoes what earlier attempts (and this one) left: 'completed', with the report
   * saved before its swap, when one of them had already swapped the restored tree in; 'clean' or
   * 'rolled-back' otherwise.
   */
  private async recoverEarlierAttempts(job: JobContext<Payload>): Promise<Recovered> {
    let recovered: Recovered = { outcome: 'clean' };
    for (let attempt = 1; attempt <= job.attempt; attempt++) {
      const paths = restorePaths(this.deps.volumesDir, job.payload.serverId, job.id, attempt);
      const outcome = await recoverRestore(paths);
      if (outcome === 'completed') recovered = { outcome, report: await savedReport(paths) };
      else if (outcome === 'rolled-back' && recovered.outcome === 'clean') recovered = { outcome };
    }
    return recovered;
  }

  /** The completion entry's `files` and skipped entries (the true count; the first few by name). */
  private completionDetails(job: JobContext<Payload>, report: ExtractReport | null): Record<string, unknown> {
    if (report === null) {
      this.deps.logger.warn({ job: job.id }, 'restore completed by recovery without a saved report');
      return {};
    }
    const details: Record<string, unknown> = { files: report.files };
    if (job.payload.files !== undefined) details.paths = job.payload.files.map((rel) => `/${rel}`);
    const skippedCount = skippedTotal(report);
    if (skippedCount > 0) {
      // Links and special files in an archive are never created; the user is told which.
      details.skipped = report.skipped
        .slice(0, SKIPPED_SHOWN)
        .map(({ path, kind }) => ({ path: shownPath(path), kind }));
      details.skipped_count = skippedCount;
    }
    return details;
  }

  async fail(job: JobContext<Payload>, reason: string): Promise<void> {
    // Whatever a worker left half-done is finished or undone before the server is released.
    const recovered = await this.recoverEarlierAttempts(job);
    const name = await this.nameOf(job);
    if (recovered.outcome === 'completed') {
      await this.finish(job, 'server:backup.restore-complete', {
        name,
        ...this.completionDetails(job, recovered.report),
      });
      return;
    }
    await this.finish(job, 'server:backup.restore-failed', { name, reason });
  }

  private async nameOf(job: JobContext<Payload>): Promise<string> {
    const backup = await this.deps.backups.findOfServer(job.payload.serverId, job.payload.backupId);
    return backup?.name ?? job.payload.backupId;
  }

  /**
   * Releases the server, shows that the restore no longer runs and records the outcome, in the
   * batch of the request that asked for it.
   */
  private async finish(
    job: JobContext<Payload>,
    event: 'server:backup.restore-complete' | 'server:backup.restore-failed',
    properties: Record<string, unknown>,
  ): Promise<void> {
    const { serverId, backupId, actorId, ip } = job.payload;
    const userRow = actorId === null ? undefined : await this.deps.users.findById(actorId);
    const context: RequestContext = { batch: job.batch, ip, userAgent: '' };
    const actor = userRow === undefined ? null : { user: toUser(userRow), apiKeyId: null, sessionId: null };
    await this.deps.transaction(async (trx) => {
      await this.deps.servers.releaseStatus(serverId, RESTORING, toStoredTime(this.deps.clock()), trx);
      await this.deps.backups.clearProgress({ id: backupId, serverId }, null, trx);
      await this.deps.activity.record(
        context,
        {
          event,
          actor,
          properties,
          subjects: [
            { type: 'server', id: serverId },
            { type: 'backup', id: backupId },
          ],
        },
        trx,
      );
    });
    this.deps.changes?.notify(serverId);
    // Recorded: the reports saved for recovery have served their purpose.
    for (let attempt = 1; attempt <= job.attempt; attempt++)
      await discardReport(restorePaths(this.deps.volumesDir, serverId, job.id, attempt));
  }
}
