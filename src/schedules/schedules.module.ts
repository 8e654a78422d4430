import type { ActivityService } from '../activity/activity.service.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { ModuleContext } from '../module-context.ts';
import type { ServersModule } from '../servers/servers.module.ts';
import { ScheduleRunRepository } from './schedule-run.repository.ts';
import { ScheduleRunner } from './schedule-runner.ts';
import { ScheduleTaskJob, type ScheduledBackups } from './schedule-task.job.ts';
import { ScheduleTicker } from './schedule-ticker.ts';
import { ScheduleRepository } from './schedule.repository.ts';
import { ScheduleService } from './schedule.service.ts';

export interface SchedulesModuleDeps {
  activity: ActivityService;
  servers: ServersModule;
  jobs: JobRepository;
  /** Makes a schedule's backups (BackupManagementService.createScheduled). */
  backups: ScheduledBackups;
}

/**
 * Schedules: Pterodactyl's schedules API (ScheduleService), the runs (ScheduleRunner: the tick,
 * `execute`, `aerie schedule run`), the tick's timer (ScheduleTicker, started by the processes
 * that run jobs) and the `schedule.task` job.
 */
export function createSchedulesModule(
  { config, db, transaction, clock, logger }: ModuleContext,
  { activity, servers, jobs, backups }: SchedulesModuleDeps,
) {
  const schedules = new ScheduleRepository(db.kysely, db.kind);
  const runs = new ScheduleRunRepository(db.kysely);
  const { timezone, tickMs } = config.schedules;
  const runner = new ScheduleRunner({
    schedules,
    runs,
    servers: servers.repository,
    jobs,
    activity,
    transaction,
    clock,
    logger,
    timezone,
  });
  return {
    schedules: new ScheduleService({
      schedules,
      servers: servers.repository,
      activity,
      transaction,
      clock,
      timezone,
    }),
    scheduleRuns: runner,
    scheduleTicker: new ScheduleTicker(runner, logger, { intervalMs: tickMs }),
    handlers: {
      'schedule.task': new ScheduleTaskJob({
        schedules,
        runs,
        servers: servers.repository,
        jobs,
        backups,
        transaction,
        clock,
        logger,
      }),
    },
  };
}
