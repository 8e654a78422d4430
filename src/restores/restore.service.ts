import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import { conflictFor, type ServerAccess } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { AuthenticatedContext } from '../users/actor.ts';
import type { RequestContext } from '../shared/context.ts';
import type { ServerRow } from '../servers/server.table.ts';
import { BadRequestError, NotFoundError, ValidationError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { BackupRepository } from '../backups/backup.repository.ts';
import type { Backup } from '../backups/backup.ts';
import type { RestoreBody } from '../backups/backup.schema.ts';
import { backupPath } from '../backups/backup-path.ts';
import type { RestoreThrottle } from './restore-throttle.ts';
import type { ServerChanges } from '../servers/server-changes.ts';

export interface BackupRestoreDeps {
  servers: ServerRepository;
  backups: BackupRepository;
  jobs: JobRepository;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
  throttle: RestoreThrottle;
  /** Whether a restore keeps the files it replaces as a backup when the request does not say. */
  undoBackup: boolean;
  /** Told when the server's status changes (event streams of this process). */
  changes?: ServerChanges;
  /** What a backup holds: a partial restore's paths must be in it. */
  files: {
    /** The first of `paths` (normalized, from the backup's root) that the backup lacks; null if none. */
    missing(backup: Backup, paths: readonly string[]): Promise<string | null>;
  };
}

/** Puts a server's files back as one of its backups holds them (the work itself is a job). */
export class BackupRestoreService {
  constructor(private readonly deps: BackupRestoreDeps) {}

  /**
   * Queues a restore asked for from the command line (`aerie backup restore`), by no user, with
   * the same checks and records as one asked for through the API; returns the job's id.
   */
  async restoreFromCli(
    context: RequestContext,
    server: ServerRow,
    backup: Backup,
    body: RestoreBody,
  ): Promise<number> {
    const files = await this.chosenPaths(backup, body.files);
    const jobId = await this.queue(context, null, server.id, backup, body, files);
    this.deps.changes?.notify(server.id);
    return jobId;
  }

  /**
   * Queues a restore of a backup the caller may restore (the route has checked visibility, the
   * server's state and the permission, then the body), within the server's restore throttle.
   */
  async requestRestore(
    context: AuthenticatedContext,
    access: ServerAccess,
    backup: Backup,
    body: RestoreBody,
  ): Promise<void> {
    assertRestorable(backup); // before the throttle: a refused request is not counted
    const files = await this.chosenPaths(backup, body.files);
    const serverId = access.server.id;
    await this.deps.throttle.run(serverId, () =>
      this.queue(context, context.actor, serverId, backup, body, files),
    );
    this.deps.changes?.notify(serverId);
  }

  /**
   * A partial restore's paths, normalized (`/world/region`), each one the backup holds; undefined
   * for a restore of everything (no paths given, or `/` among them). A path that escapes is a
   * 422, one the backup lacks a 404.
   */
  private async chosenPaths(backup: Backup, given: string[] | undefined): Promise<string[] | undefined> {
    if (given === undefined) return undefined;
    const paths = [
      ...new Set(
        given.map((file, i) => {
          const normalized = backupPath(file, `files.${i}`);
          // `""` or `.` is more likely a slip than a wish to restore everything: only `/` says that.
          if (normalized === '/' && !file.startsWith('/'))
            throw new ValidationError([
              {
                field: `files.${i}`,
                rule: 'path',
                message: 'Each path must name a file or directory; `/` is the whole backup.',
              },
            ]);
          return normalized;
        }),
      ),
    ];
    if (paths.includes('/')) return undefined;
    const missing = await this.deps.files.missing(backup, paths);
    if (missing !== null) throw new NotFoundError(`This backup has no ${missing}.`);
    return paths;
  }

  /**
   * The state change, the job and the audit entry, in one transaction, so of two simultaneous
   * requests exactly one wins. Claiming the server's status holds its row, as a delete of one of
   * its backups does first: the backup is looked up again once it is held, so a restore never
   * starts on a backup a delete has just removed (it is a 404), and a delete that comes after
   * sees the server restoring (a 409). Returns the job's id.
   */
  private async queue(
    context: RequestContext,
    actor: AuthenticatedContext['actor'] | null,
    serverId: string,
    backup: Backup,
    body: RestoreBody,
    files: string[] | undefined,
  ): Promise<number> {
    assertRestorable(backup);
    const { servers, backups, jobs, activity, transaction, clock } = this.deps;
    const { truncate } = body;
    const undoBackup = body.undo_backup ?? this.deps.undoBackup;
    const now = toStoredTime(clock());
    return transaction(async (trx) => {
      if (!(await servers.claimStatus(serverId, 'restoring_backup', now, trx))) {
        const current = await servers.findByReference(serverId, trx);
        throw conflictFor(current?.status ?? 'restoring_backup');
      }
      if ((await backups.findOfServer(serverId, backup.id, trx)) === undefined) throw new NotFoundError();
      const id = await jobs.enqueue(
        {
          kind: 'backup.restore',
          payload: {
            serverId,
            backupId: backup.id,
            truncate,
            undoBackup,
            ...(files === undefined ? {} : { files: files.map((file) => file.slice(1)) }),
            actorId: actor?.user.id ?? null,
            ip: context.ip,
          },
          batch: context.batch,
        },
        now,
        trx,
      );
      await activity.record(
        context,
        {
          event: 'server:backup.restore',
          actor,
          properties: {
            name: backup.name,
            truncate,
            undo_backup: undoBackup,
            ...(files === undefined ? {} : { files }),
          },
          subjects: [
            { type: 'server', id: serverId },
            { type: 'backup', id: backup.id },
          ],
        },
        trx,
      );
      return id;
    });
  }
}

function assertRestorable(backup: Backup): void {
  if (!backup.isSuccessful || backup.completedAt === null) {
    throw new BadRequestError('This backup cannot be restored at this time: not completed or failed.');
  }
}
