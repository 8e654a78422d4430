/**
 * Every kind of job, with its payload. A worker must have a handler for each (checked by the type);
 * the handler holds the schema its payloads are checked against when a job is claimed, made with
 * `payloadSchema` (job-handler.ts), which keeps it and the type here one.
 */
export interface JobPayloads {
  'backup.create': {
    serverId: string;
    backupId: string;
    actorId: string | null;
    ip: string | null;
  };
  'backup.restore': {
    serverId: string;
    backupId: string;
    truncate: boolean;
    /** Keep the files about to be replaced as a backup first (absent in jobs queued before it existed). */
    undoBackup?: boolean;
    /** A partial restore: the paths brought back, relative to the volume (RestoreSelection). */
    files?: string[];
    /** Who asked, and from where: the completion entry is theirs too. */
    actorId: string | null;
    ip: string | null;
  };
  /**
   * One task of a schedule's run (src/schedules/). Each task's job queues the next task's, due
   * after that task's time offset, so no worker waits through an offset.
   */
  'schedule.task': {
    serverId: string;
    scheduleId: number;
    taskId: number;
    /** Started by hand (`execute`, `aerie schedule run`): it runs even if the schedule is inactive. */
    manual: boolean;
    /** The run's first task, where `only_when_online` is checked. */
    first: boolean;
  };
}

export type JobKind = keyof JobPayloads;

/**
 * The order in which a node's due jobs are claimed: the lowest priority first, then the job due
 * longest. A restore goes before backups: its server sits in `restoring_backup` (refusing backups
 * and deletes) from the request until the restore ends, so each backup ahead of it in the queue
 * would lengthen that wait. Restores cannot hold backups back for long: a server has one at a
 * time, and their number is limited per server (AERIE_RESTORE_LIMIT_PER_15_MINUTES).
 */
export const JOB_PRIORITY: { readonly [K in JobKind]: number } = {
  'backup.restore': 0,
  // A task only starts its work (a backup is its own job) and queues the next: over in a moment,
  // it goes before the backups, so that a schedule's offsets are not lengthened by them.
  'schedule.task': 5,
  'backup.create': 10,
};
