import type { Generated, Selectable } from 'kysely';

/**
 * A server's schedule: a cron expression (five fields, as text, evaluated in AERIE_TIMEZONE) and
 * the state of its runs. Flags are 0/1 on every engine, read as booleans by the repository.
 */
export interface ScheduleTable {
  /** An integer, as Pterodactyl's. */
  id: Generated<number>;
  server_id: string;
  name: string;
  cron_minute: string;
  cron_hour: string;
  cron_day_of_month: string;
  cron_month: string;
  cron_day_of_week: string;
  is_active: number;
  /** 1 from the moment a run is claimed until its last task has ended (or the run was stopped). */
  is_processing: Generated<number>;
  only_when_online: number;
  /** When the last run started. */
  last_run_at: string | null;
  /** When the tick next starts it; null when the expression has no time left. */
  next_run_at: string | null;
  /**
   * The job carrying the current run (its queued or running `schedule.task` job); null between
   * runs. It is the run's identity: a job that is not this one belongs to a run that has ended.
   */
  run_job_id: number | null;
  created_at: string;
  updated_at: string;
}
export type ScheduleRow = Selectable<ScheduleTable>;

export interface ScheduleTaskTable {
  id: Generated<number>;
  schedule_id: number;
  /** 1, 2, 3…: the order a run takes the tasks in. */
  sequence_id: number;
  action: string;
  /** For a backup: the ignored files, one pattern a line (may be empty). */
  payload: string;
  /** Seconds to wait after the previous task (for the first, after the run starts). */
  time_offset: number;
  /** 1 while the task's job waits to run. */
  is_queued: Generated<number>;
  continue_on_failure: number;
  created_at: string;
  updated_at: string;
}
export type ScheduleTaskRow = Selectable<ScheduleTaskTable>;
