import type { Generated, Selectable } from 'kysely';

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
  attempts: number;
  max_attempts: number;
  run_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}
export type JobRow = Selectable<JobTable>;
