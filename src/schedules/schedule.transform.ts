import { toWireTime } from '../shared/time.ts';
import type { ScheduleResource, TaskResource } from './schedule.schema.ts';
import type { ScheduleTask, ScheduleWithTasks } from './schedule.ts';

/** Pterodactyl's `server_schedule`, its tasks included (`attributes.relationships.tasks`). */
export function toScheduleResource(schedule: ScheduleWithTasks): ScheduleResource {
  return {
    object: 'server_schedule',
    attributes: {
      id: schedule.id,
      name: schedule.name,
      cron: {
        day_of_week: schedule.cron.day_of_week,
        day_of_month: schedule.cron.day_of_month,
        month: schedule.cron.month,
        hour: schedule.cron.hour,
        minute: schedule.cron.minute,
      },
      is_active: schedule.isActive,
      is_processing: schedule.isProcessing,
      only_when_online: schedule.onlyWhenOnline,
      last_run_at: toWireTime(schedule.lastRunAt),
      next_run_at: toWireTime(schedule.nextRunAt),
      created_at: toWireTime(schedule.createdAt),
      updated_at: toWireTime(schedule.updatedAt),
      relationships: { tasks: { object: 'list', data: schedule.tasks.map(toTaskResource) } },
    },
  };
}

/** Pterodactyl's `schedule_task`. */
export function toTaskResource(task: ScheduleTask): TaskResource {
  return {
    object: 'schedule_task',
    attributes: {
      id: task.id,
      sequence_id: task.sequenceId,
      action: task.action,
      payload: task.payload,
      time_offset: task.timeOffset,
      is_queued: task.isQueued,
      continue_on_failure: task.continueOnFailure,
      created_at: toWireTime(task.createdAt),
      updated_at: toWireTime(task.updatedAt),
    },
  };
}
