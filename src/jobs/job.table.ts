import type { ColumnType, Generated, Selectable } from 'kysely';

export type JobState = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobTable {
  id: Generated<number>;
  kind: string;
  /** JSON, typed per kind. */
  payload: string;
  state: JobState;
  /** The activity batch of the request that queued the job; its entries share it. */
  batch: string;
  /**
   * The node of the job's server, copied when it is queued: only that node's workers run it.
   * Null for a job of no server, which a worker of any node may run.
   */
  node: string | null;
  /**
   * Which of the due jobs a worker claims first: the lowest (JOB_PRIORITY in job-kinds.ts), then the
   * one due longest.
   */
  priority: Generated<number>;
  attempts: number;
  max_attempts: number;
  /**
   * Tries that failed because the backup store or the database could not be reached: they are
   * tried again for the retry window and do not count against `max_attempts`.
   */
  unreachable_retries: Generated<number>;
  /** When the first of those failed; null while none has. */
  unreachable_at: ColumnType<string | null, string | null | undefined, string | null>;
  run_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}
export type JobRow = Selectable<JobTable>;
