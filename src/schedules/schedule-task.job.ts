import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Transactor } from '../db/executor.ts';
import { payloadSchema, type JobContext, type JobHandler } from '../jobs/job-handler.ts';
import type { JobPayloads } from '../jobs/job-kinds.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { ServerRow } from '../servers/server.table.ts';
import type { RequestContext } from '../shared/context.ts';
import { AppError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { ScheduleRunRepository } from './schedule-run.repository.ts';
import type { ScheduleRepository } from './schedule.repository.ts';
import type { Schedule, ScheduleTask } from './schedule.ts';

type Payload = JobPayloads['schedule.task'];

export const ScheduleTaskPayloadSchema = payloadSchema(
  'schedule.task',
  Type.Object({
    serverId: Type.String(),
    scheduleId: Type.Integer(),
    taskId: Type.Integer(),
    manual: Type.Boolean(),
    first: Type.Boolean(),
  }),
);

/** What a backup task asks of the backups module (BackupManagementService.createScheduled). */
export interface ScheduledBackups {
  createScheduled(
    server: ServerRow,
    request: { scheduleId: number; scheduleName: string; ignored: string },
    context?: RequestContext,
  ): Promise<unknown>;
}

export interface ScheduleTaskJobDeps {
  schedules: ScheduleRepository;
  runs: ScheduleRunRepository;
  servers: ServerRepository;
  jobs: JobRepository;
  backups: ScheduledBackups;
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
}

/** How a task ended. */
type Outcome = { ok: true } | { ok: false; reason: string };

/**
 * One task of a schedule's run. It does the task, then, in one transaction, queues the next task's
 * job (due after that task's offset) and hands the run to it, or ends the run: after the last
 * task, or after a failure of a task without `continue_on_failure`.
 *
 * Every step is tied to the run by the schedule's `run_job_id`: a job that no longer carries the
 * run (the run ended, was stopped by turning the schedule off, or its schedule was deleted) does
 * nothing. Tried again after its worker died, the job does not do its task a second time (the task
 * was marked started before it ran): it counts as failed, and the run goes on or ends as
 * `continue_on_failure` says. A job that fails for good ends its run (`fail`); a run left
 * processing all the same is ended by the runner's recovery.
 */
export class ScheduleTaskJob implements JobHandler<Payload> {
  readonly payload = ScheduleTaskPayloadSchema;

  constructor(private readonly deps: ScheduleTaskJobDeps) {}

  async run(job: JobContext<Payload>): Promise<void> {
    const { schedules, servers } = this.deps;
    const { scheduleId, taskId, serverId, manual, first } = job.payload;
    const log = this.deps.logger.child({ schedule: scheduleId, task: taskId, job: job.id });
    const schedule = await schedules.find(scheduleId);
    if (schedule === undefined || schedule.runJobId !== job.id) {
      log.info('schedule task skipped: its run has ended');
      return;
    }
    const task = await schedules.findTask(scheduleId, taskId);
    if (task === undefined) return this.end(job, log, 'its task was deleted');
    if (!manual && !schedule.isActive) return this.end(job, log, 'the schedule was turned off');
    const server = await servers.findByReference(serverId);
    if (server === undefined) return this.end(job, log, 'its server is gone');
    if (first && schedule.onlyWhenOnline && server.status !== null)
      return this.end(job, log, `the server is not online (${server.status})`);
    const outcome = await this.perform(job, schedule, task, server);
    if (outcome.ok) log.info({ action: task.action }, 'schedule task done');
    else log.warn({ action: task.action, reason: outcome.reason }, 'schedule task failed');
    await this.advance(job, schedule, task, outcome, log);
  }

  async fail(job: JobContext<Payload>, reason: string): Promise<void> {
    const log = this.deps.logger.child({ schedule: job.payload.scheduleId, job: job.id });
    await this.end(job, log, `its job failed: ${reason}`);
  }

  /** Does the task, once: a task an earlier try of this job started is not started again. */
  private async perform(
    job: JobContext<Payload>,
    schedule: Schedule,
    task: ScheduleTask,
    server: ServerRow,
  ): Promise<Outcome> {
    if (!(await this.deps.runs.startTask(schedule.id, task.id, job.id)))
      return { ok: false, reason: 'an earlier try of this task was interrupted' };
    try {
      if (task.action !== 'backup') return { ok: false, reason: `Aerie cannot run ${task.action} tasks` };
      await this.deps.backups.createScheduled(
        server,
        { scheduleId: schedule.id, scheduleName: schedule.name, ignored: task.payload },
        { batch: job.batch, ip: null, userAgent: '' },
      );
      return { ok: true };
    } catch (error) {
      if (!(error instanceof AppError))
        this.deps.logger.error({ err: error, job: job.id }, 'schedule task error');
      return { ok: false, reason: error instanceof AppError ? error.message : 'an internal error occurred' };
    }
  }

  /** Queues the next task and hands it the run, or ends the run; once, however often it is called. */
  private async advance(
    job: JobContext<Payload>,
    schedule: Schedule,
    task: ScheduleTask,
    outcome: Outcome,
    log: Logger,
  ): Promise<void> {
    const { schedules, runs, jobs, transaction, clock } = this.deps;
    const now = clock();
    const stored = toStoredTime(now);
    const ended = await transaction(async (trx) => {
      if (!(await runs.holdRun(schedule.id, job.id, trx))) return null;
      if (!outcome.ok && !task.continueOnFailure) {
        await runs.endRun(schedule.id, job.id, stored, trx);
        return 'a task failed';
      }
      // Its place now: tasks may have moved since the run started.
      const place = (await schedules.findTask(schedule.id, task.id, trx))?.sequenceId ?? task.sequenceId;
      const next = await runs.nextTask(schedule.id, place, trx);
      if (next === undefined) {
        await runs.endRun(schedule.id, job.id, stored, trx);
        return 'its last task ended';
      }
      const jobId = await jobs.enqueue(
        {
          kind: 'schedule.task',
          payload: { ...job.payload, taskId: next.id, first: false },
          batch: job.batch,
          runAt: toStoredTime(new Date(now.getTime() + next.timeOffset * 1000)),
        },
        stored,
        trx,
      );
      await runs.queue(schedule.id, next.id, jobId, trx);
      return undefined;
    });
    if (typeof ended === 'string') log.info({ why: ended }, 'schedule run ended');
  }

  /** Ends the run this job carries (if it still does), saying why. */
  private async end(job: JobContext<Payload>, log: Logger, why: string): Promise<void> {
    const now = toStoredTime(this.deps.clock());
    const ended = await this.deps.transaction((trx) =>
      this.deps.runs.endRun(job.payload.scheduleId, job.id, now, trx),
    );
    if (ended) log.info({ why }, 'schedule run ended');
  }
}
