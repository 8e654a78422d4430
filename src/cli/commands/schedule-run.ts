import type { Command } from 'commander';
import { toWireTime } from '../../shared/time.ts';
import { positiveInteger, printRecord } from '../output.ts';
import { cliContext, recordAction } from '../with-runtime.ts';

interface ScheduleRunOptions {
  server: string;
  schedule: string;
  json: boolean;
}

/**
 * `aerie schedule run`: runs a schedule now, active or not, as `POST …/schedules/{id}/execute`
 * does: its first task's job is queued at once, and the workers of the server's node run the
 * tasks (`serve` or `worker` must be running). Recorded as `server:schedule.execute`, by no user.
 */
export function scheduleRunCommand(schedule: Command): void {
  const run = schedule
    .command('run')
    .description("run a schedule now, as the API's execute does (a worker runs its tasks)")
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--schedule <id>', 'schedule id');
  recordAction(run, async (o: ScheduleRunOptions, { services }) => {
    const id = positiveInteger(o.schedule);
    const started = await services.scheduleRuns.runFromCli(cliContext(), o.server, id);
    printRecord(
      o.json,
      {
        id: started.id,
        name: started.name,
        server: started.serverId,
        is_processing: started.isProcessing,
        last_run_at: toWireTime(started.lastRunAt),
        next_run_at: toWireTime(started.nextRunAt),
      },
      [`started schedule ${started.name} (${started.id}); a worker runs its tasks`],
    );
  });
}
