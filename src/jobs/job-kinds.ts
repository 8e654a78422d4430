/** Every kind of job, with its payload. A worker must have a handler for each (checked by the type). */
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
