import type { Command } from 'commander';
import { loadConfig } from '../../config.ts';
import { DEFAULT_NODE, nodeName } from '../../servers/node-name.ts';
import { openRuntime } from '../../runtime.ts';
import { stopOnSignal } from '../stop-on-signal.ts';

/**
 * `aerie worker`: runs the background jobs (backups, restores, schedules' tasks) of one node's
 * servers, and the scheduler's tick, without HTTP.
 */
export function workerCommand(cli: Command): void {
  cli
    .command('worker')
    .description("run background jobs (backups, restores) of one node's servers, without serving HTTP")
    .option(
      '--node <name>',
      'run the jobs of the servers on this node (and of no server); also names the worker in logs and leases',
      DEFAULT_NODE,
    )
    .action(work);
}

async function work(options: { node: string }): Promise<void> {
  const node = nodeName(options.node);
  const runtime = await openRuntime(loadConfig());
  // Retention runs in the worker role; the metrics listener, when it has an address.
  await runtime.ops.start({ jobs: true, http: false }).catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  const worker = runtime.services.createWorker(node, node);
  worker.start();
  // The scheduler's tick: every process that runs jobs looks for due schedules.
  runtime.services.scheduleTicker.start();
  // Before saying it has started: a SIGTERM sent on reading that line must find the handler.
  stopOnSignal(runtime, { worker });
  runtime.logger.info({ owner: worker.owner, node }, 'worker started');
}
