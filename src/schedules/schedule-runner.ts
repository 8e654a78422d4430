import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Executor, Transactor } from '../db/executor.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import { conflictFor } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { ServerRow } from '../servers/server.table.ts';
import type { RequestContext } from '../shared/context.ts';
import { DisplayError, NotFoundError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import { nextRunAfter, type CronFields } from './cron.ts';
import type { DueSchedule, ScheduleRunRepository } from './schedule-run.repository.ts';
import type { ScheduleRepository } from './schedule.repository.ts';
import type { Schedule, ScheduleTask } from './schedule.ts';

/** Pterodactyl's words for a run asked of a schedule without tasks. */
const NO_TASKS = 'Cannot process schedule for task execution: no tasks are registered.';
const ALREADY_RUNNING = 'This schedule is already running; it can be run again once its run has ended.';
/** Due schedules claimed per tick at most; the rest are claimed at the next. */
const TICK_BATCH = 100;
/** Stuck runs ended per recovery at most. */
const RECOVERY_BATCH = 100;

export interface ScheduleRunnerDeps {
  schedules: ScheduleRepository;
  runs: ScheduleRunRepository;
  servers: ServerRepository;
  jobs: JobRepository;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
  /** The IANA time zone cron expressions are read in (AERIE_TIMEZONE). */
  timezone: string;
}

/** What one tick did. */
export interface TickReport {
  /** Schedules whose run this tick started. */
  started: number[];
  /** Due schedules without tasks: their next time moved on, nothing ran. */
  skipped: number[];
  /** Due schedules another process claimed first. */
  lost: number[];
}

/**
 * Starts schedules' runs: by the tick (every AERIE_SCHEDULE_TICK_SECONDS, in each process that
 * runs jobs), by `execute` and by `aerie schedule run`. A run is the `schedule.task` job of its
 * first task, queued in the transaction that claims the schedule; each task's job then queues
 * the next (ScheduleTaskJob).
 *
 * Exactly once per due time: the tick makes one query for the schedules that are due, and claims
 * each with a conditional UPDATE (still active, still not processing, `next_run_at` still the one
 * read), which one process alone can win; the winner's transaction also moves `next_run_at` to
 * the first time after now, so a schedule missed while Aerie was down runs once, not once per
 * missed time.
 */
export class ScheduleRunner {
  constructor(private readonly deps: ScheduleRunnerDeps) {}

  /** Claims and starts every schedule that is due (up to 100 a tick). */
  async tick(): Promise<TickReport> {
    const now = this.deps.clock();
    const report: TickReport = { started: [], skipped: [], lost: [] };
    const due = await this.deps.runs.due(toStoredTime(now), TICK_BATCH);
    for (const schedule of due) {
      try {
        const outcome = await this.claim(schedule, now);
        report[outcome].push(schedule.id);
        if (outcome === 'started')
          this.deps.logger.info(
            { schedule: schedule.id, server: schedule.server_id },
            'schedule run started',
          );
      } catch (error) {
        // Left due: the next tick tries again.
        this.deps.logger.warn({ err: error, schedule: schedule.id }, 'could not start a due schedule');
      }
    }
    return report;
  }

  /** `POST …/schedules/{schedule}/execute`: a run now, active or not (202). */
  async execute(context: AuthenticatedContext, schedule: Schedule): Promise<void> {
    await this.startNow(context, context.actor, schedule);
  }

  /**
   * `aerie schedule run`: as `execute`, for an operator. The server must be idle, as `execute`
   * requires of a request.
   */
  async runFromCli(context: RequestContext, serverRef: string, scheduleId: number): Promise<Schedule> {
    const server = await this.deps.servers.findByReference(serverRef);
    if (server === undefined) throw new NotFoundError(`No server "${serverRef}".`);
    const schedule = await this.deps.schedules.findOfServer(server.id, scheduleId);
    if (schedule === undefined) throw new NotFoundError(`Server ${server.id} has no schedule ${scheduleId}.`);
    if (server.status !== null) throw conflictFor(server.status);
    await this.startNow(context, null, schedule);
    return (await this.deps.schedules.find(schedule.id)) ?? schedule;
  }

  /**
   * Ends runs left processing with no job to carry them on (see ScheduleRunRepository.stuck):
   * the job of the run failed for good and could not end it, or is gone. Run about once a minute
   * by the ticker; says how many it ended.
   */
  async recoverStuck(): Promise<number> {
    const now = toStoredTime(this.deps.clock());
    let recovered = 0;
    for (const run of await this.deps.runs.stuck(RECOVERY_BATCH)) {
      if (await this.deps.transaction((trx) => this.deps.runs.recover(run, now, trx))) {
        recovered += 1;
        this.deps.logger.warn(
          { schedule: run.id, job: run.runJobId },
          'schedule run ended: it was left processing with no job to carry it on',
        );
      }
    }
    return recovered;
  }

  private async claim(schedule: DueSchedule, now: Date): Promise<'started' | 'skipped' | 'lost'> {
    const { runs, transaction } = this.deps;
    const dueAt = schedule.next_run_at;
    if (dueAt === null) return 'lost';
    const stored = toStoredTime(now);
    const next = this.nextAfter(schedule.id, cronOf(schedule), now);
    return transaction(async (trx) => {
      const first = await runs.nextTask(schedule.id, 0, trx);
      if (first === undefined)
        return (await runs.skipDue(schedule.id, dueAt, stored, next, trx)) ? 'skipped' : 'lost';
      if (!(await runs.claimDue(schedule.id, dueAt, stored, next, trx))) return 'lost';
      await this.queueFirst(trx, schedule.id, schedule.server_id, first, {
        manual: false,
        // The first task waits its offset after the run starts, as Pterodactyl's does.
        runAt: new Date(now.getTime() + first.timeOffset * 1000),
        batch: randomUUID(),
        now: stored,
      });
      return 'started';
    });
  }

  /**
   * A run by hand: its first task at once (Pterodactyl's "run now" does not wait the first
   * offset), then the others after their offsets. One run at a time: refused while one is in
   * progress. Its `next_run_at` moves to the first time after now, as Pterodactyl's does.
   */
  private async startNow(context: RequestContext, actor: Actor | null, schedule: Schedule): Promise<void> {
    const { runs, activity, transaction } = this.deps;
    const now = this.deps.clock();
    const stored = toStoredTime(now);
    const next = this.nextAfter(schedule.id, schedule.cron, now);
    await transaction(async (trx) => {
      const first = await runs.nextTask(schedule.id, 0, trx);
      if (first === undefined) throw new DisplayError(NO_TASKS);
      if (!(await runs.claimNow(schedule.id, stored, next, trx))) {
        if ((await this.deps.schedules.find(schedule.id, trx)) === undefined) throw new NotFoundError();
        throw new DisplayError(ALREADY_RUNNING);
      }
      await this.queueFirst(trx, schedule.id, schedule.serverId, first, {
        manual: true,
        runAt: now,
        batch: context.batch,
        now: stored,
      });
      await activity.record(
        context,
        {
          event: 'server:schedule.execute',
          actor,
          properties: { name: schedule.name },
          subjects: [{ type: 'server', id: schedule.serverId }],
        },
        trx,
      );
    });
    this.deps.logger.info(
      { schedule: schedule.id, server: schedule.serverId },
      'schedule run started by hand',
    );
  }

  private async queueFirst(
    trx: Executor,
    scheduleId: number,
    serverId: ServerRow['id'],
    task: ScheduleTask,
    run: { manual: boolean; runAt: Date; batch: string; now: string },
  ): Promise<void> {
    const jobId = await this.deps.jobs.enqueue(
      {
        kind: 'schedule.task',
        payload: { serverId, scheduleId, taskId: task.id, manual: run.manual, first: true },
        batch: run.batch,
        runAt: toStoredTime(run.runAt),
      },
      run.now,
      trx,
    );
    await this.deps.runs.queue(scheduleId, task.id, jobId, trx);
  }

  /** The first time after `now`, stored; null (never again) when the stored expression has none or is broken. */
  private nextAfter(scheduleId: number, cron: CronFields, now: Date): string | null {
    try {
      const next = nextRunAfter(cron, now, this.deps.timezone);
      return next === null ? null : toStoredTime(next);
    } catch (error) {
      this.deps.logger.error(
        { err: error, schedule: scheduleId },
        'a stored cron expression does not evaluate',
      );
      return null;
    }
  }
}

function cronOf(row: DueSchedule): CronFields {
  return {
    minute: row.cron_minute,
    hour: row.cron_hour,
    day_of_month: row.cron_day_of_month,
    month: row.cron_month,
    day_of_week: row.cron_day_of_week,
  };
}
