import type { Command } from 'commander';
import { loadConfig } from '../../config.ts';
import { defaultNodeName } from '../../jobs/worker.ts';
import { openRuntime } from '../../runtime.ts';
import { stopOnSignal } from '../stop-on-signal.ts';

/** `aerie worker`: runs background jobs (backups, restores) without serving HTTP. */
export function workerCommand(cli: Command): void {
  cli
    .command('worker')
    .description('run background jobs (restores) without serving HTTP')
    .option('--node <name>', 'a name for this worker in logs and job leases', defaultNodeName())
    .action(work);
}

async function work(options: { node: string }): Promise<void> {
  const runtime = await openRuntime(loadConfig());
  const worker = runtime.services.createWorker(options.node);
  worker.start();
  runtime.logger.info({ owner: worker.owner }, 'worker started');
  stopOnSignal(runtime, { worker });
}
