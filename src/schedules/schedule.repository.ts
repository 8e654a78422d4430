import { sql, type Insertable, type Updateable } from 'kysely';
import type { DatabaseKind } from '../config.ts';
import type { Executor } from '../db/executor.ts';
import { insertReturningId } from '../db/insert-id.ts';
import { deletedOne } from '../db/row-count.ts';
import { toSchedule, toTask, type Schedule, type ScheduleTask, type ScheduleWithTasks } from './schedule.ts';
import type { ScheduleTable, ScheduleTaskTable } from './schedule.table.ts';

type NewSchedule = Insertable<ScheduleTable>;
type NewTask = Insertable<ScheduleTaskTable>;

/** Schedules and their tasks as the API reads and changes them (the runs: ScheduleRunRepository). */
export class ScheduleRepository {
  constructor(
    private readonly db: Executor,
    private readonly kind: DatabaseKind,
  ) {}

  /** A server's schedules, oldest first, each with its tasks in sequence order. */
  async listOfServer(serverId: string, db: Executor = this.db): Promise<ScheduleWithTasks[]> {
    const rows = await db
      .selectFrom('schedules')
      .selectAll()
      .where('server_id', '=', serverId)
      .orderBy('id')
      .execute();
    const schedules = rows.map(toSchedule);
    if (schedules.length === 0) return [];
    const tasks = await db
      .selectFrom('schedule_tasks')
      .selectAll()
      .where(
        'schedule_id',
        'in',
        schedules.map((s) => s.id),
      )
      .orderBy('schedule_id')
      .orderBy('sequence_id')
      .orderBy('id')
      .execute();
    const bySchedule = new Map<number, ScheduleTask[]>(schedules.map((s) => [s.id, []]));
    for (const task of tasks.map(toTask)) bySchedule.get(task.scheduleId)?.push(task);
    return schedules.map((s) => ({ ...s, tasks: bySchedule.get(s.id) ?? [] }));
  }

  /** The schedule `id` of this server, with its tasks; nothing for another server's. */
  async findOfServer(
    serverId: string,
    id: number,
    db: Executor = this.db,
  ): Promise<ScheduleWithTasks | undefined> {
    const row = await db
      .selectFrom('schedules')
      .selectAll()
      .where('id', '=', id)
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return { ...toSchedule(row), tasks: await this.tasksOf(Number(row.id), db) };
  }

  async find(id: number, db: Executor = this.db): Promise<Schedule | undefined> {
    const row = await db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toSchedule(row);
  }

  async countOfServer(serverId: string, db: Executor = this.db): Promise<number> {
    const row = await db
      .selectFrom('schedules')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('server_id', '=', serverId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  insert(values: NewSchedule, db: Executor = this.db): Promise<number> {
    return insertReturningId(this.kind, db.insertInto('schedules').values(values));
  }

  async update(id: number, values: Updateable<ScheduleTable>, db: Executor = this.db): Promise<void> {
    await db.updateTable('schedules').set(values).where('id', '=', id).execute();
  }

  /** Deletes a schedule (its tasks go with it); false when it was already gone. */
  delete(id: number, db: Executor = this.db): Promise<boolean> {
    return deletedOne(db.deleteFrom('schedules').where('id', '=', id));
  }

  /**
   * Holds the schedule's row for the rest of the transaction, with a no-op write: changes to its
   * tasks (the 10-task limit, the shifting of sequence ids) are made one at a time.
   */
  async lock(id: number, db: Executor): Promise<void> {
    await db
      .updateTable('schedules')
      .set({ updated_at: sql`updated_at` })
      .where('id', '=', id)
      .execute();
  }

  /** Ends the run in progress, if any: nothing is processing or queued any more. */
  async stopRun(id: number, now: string, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('schedules')
      .set({ is_processing: 0, run_job_id: null, updated_at: now })
      .where('id', '=', id)
      .execute();
    await db.updateTable('schedule_tasks').set({ is_queued: 0 }).where('schedule_id', '=', id).execute();
  }

  async tasksOf(scheduleId: number, db: Executor = this.db): Promise<ScheduleTask[]> {
    const rows = await db
      .selectFrom('schedule_tasks')
      .selectAll()
      .where('schedule_id', '=', scheduleId)
      .orderBy('sequence_id')
      .orderBy('id')
      .execute();
    return rows.map(toTask);
  }

  async findTask(
    scheduleId: number,
    taskId: number,
    db: Executor = this.db,
  ): Promise<ScheduleTask | undefined> {
    const row = await db
      .selectFrom('schedule_tasks')
      .selectAll()
      .where('id', '=', taskId)
      .where('schedule_id', '=', scheduleId)
      .executeTakeFirst();
    return row && toTask(row);
  }

  /** Moves the tasks at `from` and after (before `before`, when given) one place down the order. */
  async shiftDown(scheduleId: number, from: number, before: number | null, db: Executor): Promise<void> {
    await db
      .updateTable('schedule_tasks')
      .set((eb) => ({ sequence_id: eb('sequence_id', '+', 1) }))
      .where('schedule_id', '=', scheduleId)
      .where('sequence_id', '>=', from)
      .$if(before !== null, (q) => q.where('sequence_id', '<', before!))
      .execute();
  }

  /** Moves the tasks after `after` (up to `upTo`, when given) one place up the order. */
  async shiftUp(scheduleId: number, after: number, upTo: number | null, db: Executor): Promise<void> {
    await db
      .updateTable('schedule_tasks')
      .set((eb) => ({ sequence_id: eb('sequence_id', '-', 1) }))
      .where('schedule_id', '=', scheduleId)
      .where('sequence_id', '>', after)
      .$if(upTo !== null, (q) => q.where('sequence_id', '<=', upTo!))
      .execute();
  }

  insertTask(values: NewTask, db: Executor = this.db): Promise<number> {
    return insertReturningId(this.kind, db.insertInto('schedule_tasks').values(values));
  }

  async updateTask(id: number, values: Updateable<ScheduleTaskTable>, db: Executor = this.db): Promise<void> {
    await db.updateTable('schedule_tasks').set(values).where('id', '=', id).execute();
  }

  deleteTask(id: number, db: Executor = this.db): Promise<boolean> {
    return deletedOne(db.deleteFrom('schedule_tasks').where('id', '=', id));
  }
}
