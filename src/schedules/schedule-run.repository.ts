import type { ExpressionBuilder } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Executor } from '../db/executor.ts';
import { updatedOne } from '../db/row-count.ts';
import { toTask, type ScheduleTask } from './schedule.ts';
import type { ScheduleRow } from './schedule.table.ts';

/** What the tick reads of a due schedule: enough to claim it and to work out its next time. */
export type DueSchedule = Pick<
  ScheduleRow,
  | 'id'
  | 'server_id'
  | 'name'
  | 'next_run_at'
  | 'cron_minute'
  | 'cron_hour'
  | 'cron_day_of_month'
  | 'cron_month'
  | 'cron_day_of_week'
>;

/** A schedule left processing by a run whose job has ended (see `stuck`). */
export interface StuckRun {
  id: number;
  runJobId: number | null;
}

/**
 * The runs of schedules: the tick's query, the claims that make each due time start one run
 * whatever the number of processes, and the steps of a run (each guarded by the run's job, so
 * that a step taken twice, by a job tried again, takes effect once).
 */
export class ScheduleRunRepository {
  constructor(private readonly db: Executor) {}

  /**
   * The tick's one query: active schedules not processing whose time has come, of servers without
   * a status (as Pterodactyl: a busy server's schedules wait until it is idle, then run once).
   * Served by `schedules_due_index` (is_processing, is_active, next_run_at).
   */
  async due(now: string, limit: number): Promise<DueSchedule[]> {
    const rows = await this.db
      .selectFrom('schedules')
      .innerJoin('servers', 'servers.id', 'schedules.server_id')
      .select([
        'schedules.id',
        'schedules.server_id',
        'schedules.name',
        'schedules.next_run_at',
        'schedules.cron_minute',
        'schedules.cron_hour',
        'schedules.cron_day_of_month',
        'schedules.cron_month',
        'schedules.cron_day_of_week',
      ])
      .where('schedules.is_processing', '=', 0)
      .where('schedules.is_active', '=', 1)
      .where('schedules.next_run_at', '<=', now)
      .where('servers.status', 'is', null)
      .orderBy('schedules.next_run_at')
      .orderBy('schedules.id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...row, id: Number(row.id) }));
  }

  /** The task a run starts with, or takes after `afterSequence`. */
  async nextTask(
    scheduleId: number,
    afterSequence: number,
    db: Executor = this.db,
  ): Promise<ScheduleTask | undefined> {
    const row = await db
      .selectFrom('schedule_tasks')
      .selectAll()
      .where('schedule_id', '=', scheduleId)
      .where('sequence_id', '>', afterSequence)
      .orderBy('sequence_id')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    return row && toTask(row);
  }

  /**
   * Claims a due time: the schedule starts processing, its last run is now and its next time is
   * `next`, only if it is still active, still not processing and still due at `dueAt` (the time the
   * tick read). Of any number of processes claiming one due time, exactly one gets a row: the
   * others find `is_processing` set or `next_run_at` moved (PostgreSQL and MariaDB re-read a row
   * another transaction changed, once it commits; SQLite writes one at a time).
   */
  claimDue(id: number, dueAt: string, now: string, next: string | null, db: Executor): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('schedules')
        .set({ is_processing: 1, last_run_at: now, next_run_at: next, updated_at: now })
        .where('id', '=', id)
        .where('is_active', '=', 1)
        .where('is_processing', '=', 0)
        .where('next_run_at', '=', dueAt),
    );
  }

  /**
   * A due time of a schedule without tasks: nothing runs, its next time moves on (Pterodactyl
   * leaves it due, and reads it again every minute). Claimed as `claimDue` claims.
   */
  skipDue(id: number, dueAt: string, now: string, next: string | null, db: Executor): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('schedules')
        .set({ next_run_at: next, updated_at: now })
        .where('id', '=', id)
        .where('is_active', '=', 1)
        .where('is_processing', '=', 0)
        .where('next_run_at', '=', dueAt),
    );
  }

  /** A run started by hand, active or not; false while another run is in progress. */
  claimNow(id: number, now: string, next: string | null, db: Executor): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('schedules')
        .set({ is_processing: 1, last_run_at: now, next_run_at: next, updated_at: now })
        .where('id', '=', id)
        .where('is_processing', '=', 0),
    );
  }

  /** Hands the run to `jobId` (the job of its next task), and marks that task queued. */
  async queue(scheduleId: number, taskId: number, jobId: number, db: Executor): Promise<void> {
    await db.updateTable('schedule_tasks').set({ is_queued: 1 }).where('id', '=', taskId).execute();
    await db.updateTable('schedules').set({ run_job_id: jobId }).where('id', '=', scheduleId).execute();
  }

  /**
   * The task's turn has come: it is no longer queued. False when it was not queued in the run of
   * `jobId`: an earlier try of this job already started it (and did not finish).
   */
  startTask(scheduleId: number, taskId: number, jobId: number): Promise<boolean> {
    return updatedOne(
      this.db
        .updateTable('schedule_tasks')
        .set({ is_queued: 0 })
        .where('id', '=', taskId)
        .where('is_queued', '=', 1)
        .where((eb) => eb.exists(runOf(eb, scheduleId, jobId))),
    );
  }

  /**
   * Holds the schedule's row for the rest of the transaction if the run is still `jobId`'s; false
   * when it is not (the run ended, or this step was already taken).
   */
  holdRun(scheduleId: number, jobId: number, db: Executor): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('schedules')
        .set((eb) => ({ run_job_id: eb.ref('run_job_id') }))
        .where('id', '=', scheduleId)
        .where('run_job_id', '=', jobId),
    );
  }

  /** Ends the run of `jobId` (none of its tasks is queued any more); false when it was not that run. */
  async endRun(scheduleId: number, jobId: number, now: string, db: Executor): Promise<boolean> {
    const ended = await updatedOne(
      db
        .updateTable('schedules')
        .set({ is_processing: 0, run_job_id: null, updated_at: now })
        .where('id', '=', scheduleId)
        .where('run_job_id', '=', jobId),
    );
    if (ended)
      await db
        .updateTable('schedule_tasks')
        .set({ is_queued: 0 })
        .where('schedule_id', '=', scheduleId)
        .execute();
    return ended;
  }

  /**
   * Schedules left processing by a run that cannot go on: its job has ended (failed, or finished
   * without handing the run on, which only a crash between the two could do) or is gone. A run
   * whose job is queued or running is never one of them. Served by `schedules_due_index`.
   */
  async stuck(limit: number): Promise<StuckRun[]> {
    const rows = await this.db
      .selectFrom('schedules')
      .select(['id', 'run_job_id'])
      .where('is_processing', '=', 1)
      .where((eb) => eb.not(eb.exists(liveJob(eb))))
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: Number(row.id),
      runJobId: row.run_job_id === null ? null : Number(row.run_job_id),
    }));
  }

  /** Ends a stuck run, if it is still the one `stuck` found and still stuck. */
  async recover(run: StuckRun, now: string, db: Executor): Promise<boolean> {
    const recovered = await updatedOne(
      db
        .updateTable('schedules')
        .set({ is_processing: 0, run_job_id: null, updated_at: now })
        .where('id', '=', run.id)
        .where('is_processing', '=', 1)
        .where('run_job_id', run.runJobId === null ? 'is' : '=', run.runJobId)
        .where((eb) => eb.not(eb.exists(liveJob(eb)))),
    );
    if (recovered)
      await db
        .updateTable('schedule_tasks')
        .set({ is_queued: 0 })
        .where('schedule_id', '=', run.id)
        .execute();
    return recovered;
  }
}

/** The schedule `scheduleId`, while its run is `jobId`'s. */
function runOf(eb: ExpressionBuilder<Database, 'schedule_tasks'>, scheduleId: number, jobId: number) {
  return eb
    .selectFrom('schedules')
    .select('schedules.id')
    .where('schedules.id', '=', scheduleId)
    .where('schedules.run_job_id', '=', jobId);
}

/** The schedule's run job, while it is queued or running. */
function liveJob(eb: ExpressionBuilder<Database, 'schedules'>) {
  return eb
    .selectFrom('jobs')
    .select('jobs.id')
    .whereRef('jobs.id', '=', 'schedules.run_job_id')
    .where('jobs.state', 'in', ['queued', 'running']);
}
