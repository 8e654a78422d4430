import type { ActivityEvent } from '../activity/activity.events.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Executor, Transactor } from '../db/executor.ts';
import type { ServerAccess } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import { BadRequestError, ForbiddenError, NotFoundError, ValidationError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { AuthenticatedContext } from '../users/actor.ts';
import { checkedNextRun, type CronFields } from './cron.ts';
import type { ScheduleRepository } from './schedule.repository.ts';
import type { ScheduleBody, TaskBody } from './schedule.schema.ts';
import {
  SCHEDULE_LIMIT,
  TASK_LIMIT,
  type Schedule,
  type ScheduleTask,
  type ScheduleWithTasks,
} from './schedule.ts';

/** Pterodactyl's code for a limit reached (a 400). */
const LIMIT_CODE = 'ServiceLimitExceededException';
const TASK_LIMIT_MESSAGE = `Schedules may not have more than ${TASK_LIMIT} tasks associated with them. Creating this task would put this schedule over the limit.`;
const BACKUPS_DISABLED = "A backup task cannot be created when the server's backup limit is set to 0.";
/** Why power and command tasks are refused (422, on `action`). */
export const NO_PROCESS =
  'Aerie controls no server process, so it cannot send power actions or console commands: only backup tasks can be scheduled.';

export interface ScheduleServiceDeps {
  schedules: ScheduleRepository;
  servers: ServerRepository;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
  /** The IANA time zone cron expressions are read in (AERIE_TIMEZONE). */
  timezone: string;
}

/**
 * A server's schedules and their tasks, as Pterodactyl's API manages them: the rules, in its
 * order (the body, 422; the cron expression, 400; the limits), each change and its activity
 * entry in one transaction. Running them is ScheduleRunner's.
 */
export class ScheduleService {
  constructor(private readonly deps: ScheduleServiceDeps) {}

  list(access: ServerAccess): Promise<ScheduleWithTasks[]> {
    return this.deps.schedules.listOfServer(access.server.id);
  }

  /** A schedule of this server, or nothing: another server's is as good as unknown. */
  find(serverId: string, id: number): Promise<ScheduleWithTasks | undefined> {
    return this.deps.schedules.findOfServer(serverId, id);
  }

  async create(
    context: AuthenticatedContext,
    access: ServerAccess,
    body: ScheduleBody,
  ): Promise<ScheduleWithTasks> {
    const { schedules, servers, transaction } = this.deps;
    const { server } = access;
    const input = this.read(body);
    return transaction(async (trx) => {
      await servers.lock(server.id, trx);
      if ((await schedules.countOfServer(server.id, trx)) >= SCHEDULE_LIMIT)
        throw new BadRequestError(`A server may not have more than ${SCHEDULE_LIMIT} schedules.`, LIMIT_CODE);
      const id = await schedules.insert(
        { server_id: server.id, ...input.columns, created_at: input.now, updated_at: input.now },
        trx,
      );
      await this.record(context, 'server:schedule.create', server.id, { name: input.columns.name }, trx);
      return this.reread(server.id, id, trx);
    });
  }

  /**
   * Replaces a schedule's settings (Pterodactyl's update takes the whole body again). Turning it
   * on or off also ends a run in progress, as Pterodactyl resets `is_processing` then: the way out
   * of a run that seems stuck.
   */
  async update(
    context: AuthenticatedContext,
    access: ServerAccess,
    schedule: Schedule,
    body: ScheduleBody,
  ): Promise<ScheduleWithTasks> {
    const { schedules, transaction } = this.deps;
    const input = this.read(body);
    return transaction(async (trx) => {
      const current = await this.held(access, schedule.id, trx);
      await schedules.update(current.id, { ...input.columns, updated_at: input.now }, trx);
      if (current.isActive !== body.is_active) await schedules.stopRun(current.id, input.now, trx);
      await this.record(
        context,
        'server:schedule.update',
        current.serverId,
        { name: input.columns.name, active: body.is_active },
        trx,
      );
      return this.reread(current.serverId, current.id, trx);
    });
  }

  async delete(context: AuthenticatedContext, schedule: Schedule): Promise<void> {
    await this.deps.transaction(async (trx) => {
      if (!(await this.deps.schedules.delete(schedule.id, trx))) throw new NotFoundError();
      await this.record(context, 'server:schedule.delete', schedule.serverId, { name: schedule.name }, trx);
    });
  }

  /** The task `taskId` of this schedule, or nothing. */
  findTask(schedule: ScheduleWithTasks, taskId: number): ScheduleTask | undefined {
    return schedule.tasks.find((task) => task.id === taskId);
  }

  /**
   * Adds a task at `sequence_id` (the tasks from there on move one place down) or, without one,
   * last. Refused past 10 tasks, and for a backup when the server may have none.
   */
  async createTask(
    context: AuthenticatedContext,
    access: ServerAccess,
    schedule: Schedule,
    body: TaskBody,
  ): Promise<ScheduleTask> {
    const { schedules, transaction, clock } = this.deps;
    refuseUncontrolled(body);
    const now = toStoredTime(clock());
    return transaction(async (trx) => {
      const current = await this.held(access, schedule.id, trx);
      const tasks = await schedules.tasksOf(current.id, trx);
      if (tasks.length >= TASK_LIMIT) throw new BadRequestError(TASK_LIMIT_MESSAGE, LIMIT_CODE);
      refuseDisabledBackups(access, body);
      const end = tasks.length + 1;
      const place = Math.min(body.sequence_id ?? end, end);
      if (place < end) await schedules.shiftDown(current.id, place, null, trx);
      const id = await schedules.insertTask(
        {
          schedule_id: current.id,
          sequence_id: place,
          action: body.action,
          payload: body.payload ?? '',
          time_offset: body.time_offset,
          continue_on_failure: body.continue_on_failure ? 1 : 0,
          created_at: now,
          updated_at: now,
        },
        trx,
      );
      await this.recordTask(context, 'server:task.create', current, body, trx);
      return this.rereadTask(current.id, id, trx);
    });
  }

  /** Changes a task; a new `sequence_id` moves it there, and the tasks in between one place. */
  async updateTask(
    context: AuthenticatedContext,
    access: ServerAccess,
    schedule: Schedule,
    task: ScheduleTask,
    body: TaskBody,
  ): Promise<ScheduleTask> {
    const { schedules, transaction, clock } = this.deps;
    refuseUncontrolled(body);
    refuseDisabledBackups(access, body);
    const now = toStoredTime(clock());
    return transaction(async (trx) => {
      const current = await this.held(access, schedule.id, trx);
      const was = await schedules.findTask(current.id, task.id, trx);
      if (was === undefined) throw new NotFoundError();
      const count = (await schedules.tasksOf(current.id, trx)).length;
      const place = Math.min(body.sequence_id ?? was.sequenceId, count);
      if (place < was.sequenceId) await schedules.shiftDown(current.id, place, was.sequenceId, trx);
      else if (place > was.sequenceId) await schedules.shiftUp(current.id, was.sequenceId, place, trx);
      await schedules.updateTask(
        was.id,
        {
          sequence_id: place,
          action: body.action,
          payload: body.payload ?? '',
          time_offset: body.time_offset,
          continue_on_failure: body.continue_on_failure ? 1 : 0,
          updated_at: now,
        },
        trx,
      );
      await this.recordTask(context, 'server:task.update', current, body, trx);
      return this.rereadTask(current.id, was.id, trx);
    });
  }

  /** Removes a task; the tasks after it move one place up, so that no gap is left. */
  async deleteTask(
    context: AuthenticatedContext,
    access: ServerAccess,
    schedule: Schedule,
    task: ScheduleTask,
  ): Promise<void> {
    const { schedules, transaction } = this.deps;
    await transaction(async (trx) => {
      const current = await this.held(access, schedule.id, trx);
      const was = await schedules.findTask(current.id, task.id, trx);
      if (was === undefined || !(await schedules.deleteTask(was.id, trx))) throw new NotFoundError();
      await schedules.shiftUp(current.id, was.sequenceId, null, trx);
      await this.record(context, 'server:task.delete', current.serverId, { name: current.name }, trx);
    });
  }

  /** The body's settings as columns, with the next run time (a 400 when the expression is not one). */
  private read(body: ScheduleBody) {
    const now = this.deps.clock();
    const name = body.name.trim();
    if (name === '')
      throw new ValidationError([
        { field: 'name', rule: 'required', message: 'The name field is required.' },
      ]);
    const cron: CronFields = {
      minute: body.minute.trim(),
      hour: body.hour.trim(),
      day_of_month: body.day_of_month.trim(),
      month: body.month.trim(),
      day_of_week: body.day_of_week.trim(),
    };
    const next = checkedNextRun(cron, now, this.deps.timezone);
    return {
      now: toStoredTime(now),
      columns: {
        name,
        cron_minute: cron.minute,
        cron_hour: cron.hour,
        cron_day_of_month: cron.day_of_month,
        cron_month: cron.month,
        cron_day_of_week: cron.day_of_week,
        is_active: body.is_active ? 1 : 0,
        only_when_online: body.only_when_online ? 1 : 0,
        next_run_at: toStoredTime(next),
      },
    };
  }

  /** The schedule, its row held for the rest of the transaction; 404 once it is gone. */
  private async held(access: ServerAccess, id: number, trx: Executor): Promise<Schedule> {
    await this.deps.schedules.lock(id, trx);
    const current = await this.deps.schedules.findOfServer(access.server.id, id, trx);
    if (current === undefined) throw new NotFoundError();
    return current;
  }

  private async reread(serverId: string, id: number, trx: Executor): Promise<ScheduleWithTasks> {
    const schedule = await this.deps.schedules.findOfServer(serverId, id, trx);
    if (schedule === undefined) throw new Error(`schedule ${id} vanished in its own transaction`);
    return schedule;
  }

  private async rereadTask(scheduleId: number, id: number, trx: Executor): Promise<ScheduleTask> {
    const task = await this.deps.schedules.findTask(scheduleId, id, trx);
    if (task === undefined) throw new Error(`task ${id} vanished in its own transaction`);
    return task;
  }

  private record(
    context: AuthenticatedContext,
    event: ActivityEvent,
    serverId: string,
    properties: Record<string, unknown>,
    trx: Executor,
  ): Promise<void> {
    return this.deps.activity.record(
      context,
      { event, actor: context.actor, properties, subjects: [{ type: 'server', id: serverId }] },
      trx,
    );
  }

  private recordTask(
    context: AuthenticatedContext,
    event: ActivityEvent,
    schedule: Schedule,
    body: TaskBody,
    trx: Executor,
  ): Promise<void> {
    const properties = { name: schedule.name, action: body.action, payload: body.payload ?? '' };
    return this.record(context, event, schedule.serverId, properties, trx);
  }
}

/** Power and command tasks need a process to act on, which Aerie does not run: refused, never stored. */
function refuseUncontrolled(body: TaskBody): void {
  if (body.action === 'backup') return;
  throw new ValidationError([{ field: 'action', rule: 'in', message: NO_PROCESS }]);
}

/** As Pterodactyl: no backup task on a server that may keep no backups. */
function refuseDisabledBackups(access: ServerAccess, body: TaskBody): void {
  if (body.action === 'backup' && access.server.backup_limit === 0)
    throw new ForbiddenError(BACKUPS_DISABLED);
}
