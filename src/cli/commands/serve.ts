import { Option, type Command } from 'commander';
import type { App } from '../../app.ts';
import { ConfigError, loadConfig } from '../../config.ts';
import { openRuntime } from '../../runtime.ts';
import { DEFAULT_NODE, nodeName } from '../../servers/node-name.ts';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { bootstrapAdministrator, panelUrl } from '../bootstrap.ts';
import { positiveInteger } from '../output.ts';
import { stopOnSignal } from '../stop-on-signal.ts';

interface ServeOptions {
  role: 'all' | 'api';
  node: string;
  host?: string;
  port?: string;
}

/**
 * `aerie serve`: the HTTP API, and with `--role all` (the default) a worker beside it for the jobs
 * of one node's servers (`--node`, `local` by default). `--role api` runs no jobs at all.
 */
export function serveCommand(cli: Command): void {
  cli
    .command('serve')
    .description('serve the HTTP API (migrates the database first)')
    .addOption(
      new Option('--role <role>', 'all: the API and a job worker; api: the API alone, no jobs')
        .choices(['all', 'api'])
        .default('all'),
    )
    .option('--node <name>', "with --role all: the node whose servers' jobs this process runs", DEFAULT_NODE)
    .option('--host <host>', 'address to listen on (HOST)')
    .option('--port <port>', 'port to listen on (PORT)')
    .action(serve);
}

async function serve(options: ServeOptions): Promise<void> {
  const node = nodeName(options.node);
  const config = loadConfig();
  const host = options.host ?? config.host;
  const port = options.port === undefined ? config.port : positiveInteger(options.port);
  const runtime = await openRuntime(config);
  // Download links and deletions go through the S3 client in this thread: load it while starting.
  runtime.services.backupStores.preload();
  let app: App | undefined;
  let started: (outcome: boolean) => void = () => undefined;
  try {
    // The HTTP layer is loaded by the command that serves it, not by every command.
    const { buildApp } = await import('../../app.ts');
    app = await buildApp(runtime);
    await bootstrapAdministrator(runtime.services, {
      dataDir: config.dataDir,
      panelUrl: panelUrl(config.publicUrl, host, port),
      out: process.stdout,
    });
    // `--role api` runs no jobs: no worker, and so no connection listening for queued jobs.
    const worker = options.role === 'all' ? runtime.services.createWorker(undefined, node) : undefined;
    // Before Fastify says it is listening: a SIGTERM sent on reading that line must find the
    // handler. A signal during the rest of start-up waits for it to end, then stops everything.
    stopOnSignal(runtime, {
      http: app.http,
      ...(worker ? { worker } : {}),
      started: new Promise<boolean>((resolve) => (started = resolve)),
    });
    await app.http.listen({ host, port });
    // The metrics listener, when it has an address of its own, and retention beside the worker.
    await runtime.ops.start({ jobs: options.role === 'all', http: true });
    worker?.start();
    // The scheduler's tick runs beside the worker: where jobs run, schedules are started.
    if (worker) runtime.services.scheduleTicker.start();
    started(true);
    // Loading the program grew V8's young generation to 32 MiB, which V8 keeps while the server
    // idles: given back once started, the server holds 100 MiB instead of 137 (resident, on
    // bench/backup-browse-s3.ts), and its later peaks are about as much lower. One memory-reducing
    // collection, about 65 ms.
    collectGarbage('reduce');
  } catch (error) {
    // Whoever signals now finds a process already stopping: this path closes and exits.
    started(false);
    await app?.http.close();
    await runtime.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(`port ${port} on ${host} is already in use (set PORT or --port)`);
    }
    throw error;
  }
}
