import type { Generated, Insertable, Selectable } from 'kysely';

export interface ActivityLogTable {
  id: Generated<number>;
  batch: string;
  event: string;
  ip: string | null;
  /** The user who caused the entry; null for the system. */
  actor_id: string | null;
  /** The API key the actor used, when the request came through one. */
  api_key_id: number | null;
  /** JSON object. */
  properties: string;
  timestamp: string;
}
export type ActivityLogRow = Selectable<ActivityLogTable>;
export type NewActivityLogRow = Insertable<ActivityLogTable>;

export interface ActivityLogSubjectTable {
  activity_log_id: number;
  subject_type: string;
  subject_id: string;
  /** A copy of the entry's timestamp, so a feed is one index range scan. */
  timestamp: string;
  /** Copies of the entry's event, IP and actor, in the feed index: filters read the index alone. */
  event: string;
  ip: string | null;
  actor_id: string | null;
}

/** How many entries a feed holds: written in the transaction that adds or deletes them. */
export interface ActivityFeedCountTable {
  subject_type: string;
  subject_id: string;
  entries: number;
}
