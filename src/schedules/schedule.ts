import type { CronFields } from './cron.ts';
import type { ScheduleRow, ScheduleTaskRow } from './schedule.table.ts';

/** What a task does. Aerie runs backups; it controls no server process, so power and command are refused. */
export const TASK_ACTIONS = ['backup', 'command', 'power'] as const;
export type TaskAction = (typeof TASK_ACTIONS)[number];

/** At most this many tasks a schedule (Pterodactyl's `per_schedule_task_limit`). */
export const TASK_LIMIT = 10;
/** At most this many schedules a server (beyond Pterodactyl, which sets none). */
export const SCHEDULE_LIMIT = 100;
/** The longest wait between two tasks, in seconds. */
export const MAX_TIME_OFFSET = 900;

export interface ScheduleTask {
  id: number;
  scheduleId: number;
  sequenceId: number;
  action: string;
  payload: string;
  timeOffset: number;
  isQueued: boolean;
  continueOnFailure: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Schedule {
  id: number;
  serverId: string;
  name: string;
  cron: CronFields;
  isActive: boolean;
  isProcessing: boolean;
  onlyWhenOnline: boolean;
  lastRunAt: string | null;
  nextRunAt: string | null;
  /** The job carrying the run in progress (see ScheduleTable.run_job_id); null between runs. */
  runJobId: number | null;
  createdAt: string;
  updatedAt: string;
}

/** A schedule with its tasks, in sequence order: what the API shows. */
export interface ScheduleWithTasks extends Schedule {
  tasks: ScheduleTask[];
}

/** A flag as the engines hand it back (0/1, or a boolean), read once. */
const flag = (value: unknown): boolean => value === true || Number(value) === 1;

export function toSchedule(row: ScheduleRow): Schedule {
  return {
    id: Number(row.id),
    serverId: row.server_id,
    name: row.name,
    cron: {
      minute: row.cron_minute,
      hour: row.cron_hour,
      day_of_month: row.cron_day_of_month,
      month: row.cron_month,
      day_of_week: row.cron_day_of_week,
    },
    isActive: flag(row.is_active),
    isProcessing: flag(row.is_processing),
    onlyWhenOnline: flag(row.only_when_online),
    lastRunAt: row.last_run_at,
    nextRunAt: row.next_run_at,
    runJobId: row.run_job_id === null ? null : Number(row.run_job_id),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toTask(row: ScheduleTaskRow): ScheduleTask {
  return {
    id: Number(row.id),
    scheduleId: Number(row.schedule_id),
    sequenceId: Number(row.sequence_id),
    action: row.action,
    payload: row.payload,
    timeOffset: Number(row.time_offset),
    isQueued: flag(row.is_queued),
    continueOnFailure: flag(row.continue_on_failure),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
