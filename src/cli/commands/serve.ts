import { Option, type Command } from 'commander';
import { buildApp, type App } from '../../app.ts';
import { ConfigError, loadConfig } from '../../config.ts';
import { openRuntime } from '../../runtime.ts';
import { bootstrapAdministrator } from '../bootstrap.ts';
import { positiveInteger } from '../output.ts';
import { stopOnSignal } from '../stop-on-signal.ts';

interface ServeOptions {
  role: 'all' | 'api';
  host?: string;
  port?: string;
}

/** `aerie serve`: the HTTP API, and with `--role all` (the default) a job worker beside it. */
export function serveCommand(cli: Command): void {
  cli
    .command('serve')
    .description('serve the HTTP API (migrates the database first)')
    .addOption(new Option('--role <role>', 'what this process runs').choices(['all', 'api']).default('all'))
    .option('--host <host>', 'address to listen on (HOST)')
    .option('--port <port>', 'port to listen on (PORT)')
    .action(serve);
}

async function serve(options: ServeOptions): Promise<void> {
  const config = loadConfig();
  const host = options.host ?? config.host;
  const port = options.port === undefined ? config.port : positiveInteger(options.port);
  const runtime = await openRuntime(config);
  let app: App | undefined;
  try {
    app = await buildApp(runtime);
    await bootstrapAdministrator(runtime.services, (text) => process.stdout.write(`${text}\n`));
    await app.http.listen({ host, port });
  } catch (error) {
    await app?.http.close();
    await runtime.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(`port ${port} on ${host} is already in use (set PORT or --port)`);
    }
    throw error;
  }
  const worker = options.role === 'all' ? runtime.services.createWorker() : undefined;
  worker?.start();
  stopOnSignal(runtime, { http: app.http, ...(worker ? { worker } : {}) });
}
