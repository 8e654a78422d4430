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
    /** Who asked, and from where: the completion entry is theirs too. */
    actorId: string | null;
    ip: string | null;
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
  'backup.create': 10,
};
