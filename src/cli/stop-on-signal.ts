import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Worker } from '../jobs/worker.ts';
import type { Runtime } from '../runtime.ts';

/**
 * How `serve` and `worker` stop, on the first SIGINT or SIGTERM: requests in flight and the job
 * in hand get until `config.shutdownTimeoutMs`; then open connections are closed, the job is left
 * to its lease, the runtime is closed and the process exits (0, or 1 if stopping failed). A
 * second signal exits at once.
 *
 * Installed before the process says it has started, so that a signal sent on reading that line
 * finds it. With `started`, a signal that comes while start-up is still under way waits for it:
 * once started (true), everything is stopped as usual; if start-up failed (false), the code that
 * started it closes what it opened and exits, and the signal changes nothing.
 */
export function stopOnSignal(
  runtime: Runtime,
  running: { http?: FastifyInstance; worker?: Worker; started?: Promise<boolean> },
): void {
  const { config, logger } = runtime;
  const { http, worker, started = Promise.resolve(true) } = running;
  let stopping = false;
  const stop = async () => {
    const deadline = config.shutdownTimeoutMs;
    const forceClose = http && setTimeout(() => http.server.closeAllConnections(), deadline);
    await Promise.all([http?.close(), stopWorker(worker, deadline, logger)]);
    clearTimeout(forceClose);
    await runtime.close();
  };
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, http ? 'shutting down' : 'worker stopping after the job in hand');
    started
      .then((ok) => (ok ? stop().then(() => process.exit(0)) : undefined))
      .then(
        () => undefined,
        (error: unknown) => {
          logger.error({ err: error }, 'could not stop cleanly');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}

/** Waits up to the deadline for the job in hand, then leaves it to its lease. */
async function stopWorker(worker: Worker | undefined, deadlineMs: number, logger: Logger): Promise<void> {
  if (worker === undefined) return;
  const { abandoned } = await worker.stop(deadlineMs);
  if (abandoned) {
    logger.warn(
      { deadlineSeconds: deadlineMs / 1000 },
      'the job in hand did not end in time; another worker will take it over when its lease runs out',
    );
  }
}
