import { randomUUID } from 'node:crypto';
import { Command, Option } from 'commander';
import { buildApp } from './app.ts';
import { bootstrapAdministrator } from './cli/bootstrap.ts';
import { collect, positiveInteger, printRecord, progressPrinter } from './cli/output.ts';
import { defaultNodeName, type Worker } from './jobs/worker.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { connect, type Db } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { createLogger } from './logger.ts';
import type { Logger } from 'pino';
import { createServices, type Services } from './services.ts';
import { AppError } from './shared/errors.ts';
import { MemoryCounterStore } from './shared/counter-store.ts';
import { systemClock } from './shared/time.ts';

/** Opens the database, brings its schema up to date, and hands the services to `work`. */
async function withServices<T>(work: (services: Services, config: Config, db: Db) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = connect(config.database);
  try {
    await migrateToLatest(db);
    return await work(
      createServices({ config, db, clock: systemClock, counters: new MemoryCounterStore() }),
      config,
      db,
    );
  } finally {
    await db.destroy();
  }
}

async function migrate(): Promise<void> {
  const config = loadConfig();
  const db = connect(config.database);
  try {
    const result = await migrateToLatest(db);
    const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    process.stdout.write(
      `${config.database.kind}: ${applied.length === 0 ? 'already up to date' : `applied ${applied.join(', ')}`}\n`,
    );
  } finally {
    await db.destroy();
  }
}

/** Work done from the command line is recorded as the system's, with no address. */
function cliContext() {
  return { batch: randomUUID(), ip: null, userAgent: 'aerie-cli' };
}

async function serve(options: { host?: string; port?: string; role: string }): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const db = connect(config.database);
  await migrateToLatest(db);
  const { http, services } = await buildApp({ config, db, logger });
  await bootstrapAdministrator(services, (text) => process.stdout.write(`${text}\n`));
  const port = options.port === undefined ? config.port : positiveInteger(options.port);
  try {
    await http.listen({ host: options.host ?? config.host, port });
  } catch (error) {
    await db.destroy();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(
        `port ${port} on ${options.host ?? config.host} is already in use (set PORT or --port)`,
      );
    }
    throw error;
  }
  const worker = options.role === 'all' ? services.createWorker() : undefined;
  worker?.start();

  onStopSignal(logger, 'shutting down', async () => {
    const deadline = config.shutdownTimeoutMs;
    // Requests in flight get until the deadline; then their connections are closed.
    const forceClose = setTimeout(() => http.server.closeAllConnections(), deadline);
    await Promise.all([http.close(), stopWorker(worker, deadline, logger)]);
    clearTimeout(forceClose);
    await db.destroy();
  });
}

/**
 * Runs `stop` once, on the first SIGINT or SIGTERM, then exits. A second signal exits at once.
 */
function onStopSignal(logger: Logger, message: string, stop: () => Promise<void>): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, message);
    stop().then(
      () => process.exit(0),
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

async function work(options: { node?: string }): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const db = connect(config.database);
  await migrateToLatest(db);
  const services = createServices({
    config,
    db,
    clock: systemClock,
    counters: new MemoryCounterStore(),
    logger,
  });
  const worker = services.createWorker(options.node);
  worker.start();
  logger.info({ owner: worker.owner }, 'worker started');
  onStopSignal(logger, 'worker stopping after the job in hand', async () => {
    await stopWorker(worker, config.shutdownTimeoutMs, logger);
    await db.destroy();
  });
}

function program(): Command {
  const cli = new Command('aerie')
    .description('A Pterodactyl-compatible client API server')
    .showHelpAfterError();

  cli
    .command('serve')
    .description('serve the HTTP API (migrates the database first)')
    .addOption(new Option('--role <role>', 'what this process runs').choices(['all', 'api']).default('all'))
    .option('--host <host>', 'address to listen on (HOST)')
    .option('--port <port>', 'port to listen on (PORT)')
    .action(serve);

  cli
    .command('worker')
    .description('run background jobs (restores) without serving HTTP')
    .option('--node <name>', 'a name for this worker in logs and job leases', defaultNodeName())
    .action(work);

  cli.command('migrate').description('bring the database schema up to date').action(migrate);

  const user = cli.command('user').description('manage users');
  user
    .command('create')
    .requiredOption('--username <username>')
    .requiredOption('--email <email>')
    .option('--password <password>', 'generated and printed when omitted')
    .option('--first-name <name>')
    .option('--last-name <name>')
    .option('--admin', 'make the user an administrator', false)
    .option('--json', 'print the record as JSON', false)
    .action(
      (o: {
        username: string;
        email: string;
        password?: string;
        firstName?: string;
        lastName?: string;
        admin: boolean;
        json: boolean;
      }) =>
        withServices(async (services) => {
          const { user: created, password } = await services.users.create(o);
          const record = {
            uuid: created.id,
            username: created.username,
            email: created.email,
            admin: created.rootAdmin,
          };
          printRecord(o.json, o.password === undefined ? { ...record, password } : record, [
            `created user ${created.username} (${created.id})`,
            ...(o.password === undefined ? [`password: ${password}`] : []),
          ]);
        }),
    );

  cli
    .command('key')
    .description('manage API keys')
    .command('create')
    .requiredOption('--user <login>', 'username or email')
    .option('--description <text>', 'what the key is for', '')
    .option(
      '--allowed-ip <ip>',
      'an address or CIDR range the key may be used from (repeatable)',
      collect,
      [],
    )
    .option('--json', 'print the record as JSON', false)
    .action((o: { user: string; description: string; allowedIp: string[]; json: boolean }) =>
      withServices(async (services) => {
        const owner = await services.users.findByLogin(o.user);
        if (owner === undefined) throw new ConfigError(`no user "${o.user}"`);
        const key = await services.apiKeys.create(
          { ...cliContext(), actor: { user: owner, apiKeyId: null, sessionId: null } },
          { description: o.description, allowed_ips: o.allowedIp },
        );
        const token = key.attributes.identifier + key.meta.secret_token;
        printRecord(o.json, { identifier: key.attributes.identifier, token }, [
          `created API key ${key.attributes.identifier} for ${owner.username}`,
          `token (shown once): ${token}`,
        ]);
      }),
    );

  const server = cli.command('server').description('manage servers');
  server
    .command('create')
    .requiredOption('--owner <login>', 'username or email of the owner')
    .requiredOption('--name <name>')
    .option('--description <text>')
    .option('--disk-mb <mib>', 'disk limit in MiB (0 = none)', positiveInteger, 0)
    .option('--json', 'print the record as JSON', false)
    .action((o: { owner: string; name: string; description?: string; diskMb: number; json: boolean }) =>
      withServices(async (services) => {
        const { server: created, volume } = await services.servers.create(o);
        printRecord(o.json, { uuid: created.id, identifier: created.identifier, volume }, [
          `created server ${created.name} (${created.identifier}, ${created.id})`,
          `volume: ${volume}`,
        ]);
      }),
    );
  server
    .command('add-subuser')
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--user <login>', 'username or email')
    .requiredOption('--permissions <list>', 'comma-separated, e.g. backup.read,backup.restore')
    .option('--json', 'print the record as JSON', false)
    .action((o: { server: string; user: string; permissions: string; json: boolean }) =>
      withServices(async (services) => {
        const permissions = o.permissions
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '');
        const result = await services.subusers.setByLogin(cliContext(), o.server, o.user, permissions);
        printRecord(o.json, result, [
          `${o.user} is now a subuser of ${o.server}: ${result.permissions.join(', ')}`,
        ]);
      }),
    );

  const backup = cli.command('backup').description('manage backups');
  backup
    .command('create')
    .description("archive a server's files as they are now (waits until done)")
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--name <name>')
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; name: string; json: boolean }) =>
      withServices(async (services) => {
        const progress = progressPrinter(o.json);
        const record = await services.backups.createNow(o.server, o.name, progress.update);
        progress.done();
        printRecord(o.json, { ...record }, [
          `created backup ${record.name} (${record.uuid}), ${record.bytes} bytes`,
        ]);
      }),
    );
  backup
    .command('import')
    .description('store an existing .tar.gz as a backup of a server (read through first)')
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .requiredOption('--name <name>')
    .requiredOption('--file <path>', 'a gzip-compressed tar archive')
    .option('--json', 'print only the record, as JSON', false)
    .action((o: { server: string; name: string; file: string; json: boolean }) =>
      withServices(async (services) => {
        const progress = progressPrinter(o.json);
        const record = await services.backups.importArchive(o.server, o.name, o.file, progress.update);
        progress.done();
        printRecord(o.json, { ...record }, [
          `imported backup ${record.name} (${record.uuid}), ${record.bytes} bytes`,
        ]);
      }),
    );
  return cli;
}

try {
  await program().parseAsync(process.argv);
} catch (error) {
  const known = error instanceof ConfigError || error instanceof AppError;
  process.stderr.write(`aerie: ${known ? error.message : String((error as Error).stack ?? error)}\n`);
  process.exitCode = 1;
}
