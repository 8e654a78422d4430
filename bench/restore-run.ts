/**
 * The measured part, end to end as a user sees it: one process with a running job worker (as
 * `aerie serve` has) asks for the restore as the API does, and waits until the server's status
 * clears. Prints the milliseconds from the request to that moment.
 *
 *   BENCH_BUILD=<dist dir> [BENCH_UNDO=false] node restore-run.mjs <data dir> <server id> <backup uuid> <truncate: true|false>
 *
 * It runs over Aerie's compiled build (BENCH_BUILD, default dist/: `npm run build` first), as
 * `aerie serve` runs in production. bench/restore.sh runs it transpiled to plain JavaScript, not
 * through a TypeScript loader: the loader would start in the restore's worker thread too, and
 * cost both about 20 MB. A build of an earlier commit (to compare before and after) must sit
 * beside a node_modules.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type Config = typeof import('../src/config.ts');
type Connection = typeof import('../src/db/connection.ts');
type Services = typeof import('../src/services.ts');
type CounterStore = typeof import('../src/shared/counter-store.ts');
type Time = typeof import('../src/shared/time.ts');

const [dataDir, serverId, backupUuid, truncate] = process.argv.slice(2);
if (dataDir === undefined || serverId === undefined || backupUuid === undefined)
  throw new Error('usage: restore-run.ts DATA_DIR SERVER_ID BACKUP_UUID [true|false]');
const build = process.env.BENCH_BUILD || fileURLToPath(new URL('../dist', import.meta.url));
const load = <T>(module: string): Promise<T> =>
  import(pathToFileURL(path.resolve(build, `${module}.js`)).href) as Promise<T>;
const { loadConfig } = await load<Config>('config');
const { connect } = await load<Connection>('db/connection');
const { createServices } = await load<Services>('services');
const { MemoryCounterStore } = await load<CounterStore>('shared/counter-store');
const { systemClock } = await load<Time>('shared/time');

const config = loadConfig({
  AERIE_DATA_DIR: dataDir,
  DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
});
const db = connect(config.database);
const services = createServices({ config, db, clock: systemClock, counters: new MemoryCounterStore() });
const user = await services.users.findByLogin('bench');
if (user === undefined) throw new Error('no bench user: run bench/restore-setup.ts first');
const actor = { user, apiKeyId: null, sessionId: null };
const access = await services.access.resolve(actor, serverId);
const backup = await services.backupManagement.find(serverId, backupUuid);
if (backup === undefined) throw new Error('the imported backup is missing');
const worker = services.createWorker('bench');
worker.start();

const status = async (): Promise<string | null> =>
  (
    await db.kysely
      .selectFrom('servers')
      .select('status')
      .where('id', '=', serverId)
      .executeTakeFirstOrThrow()
  ).status;
const started = process.hrtime.bigint();
await services.backupRestore.requestRestore(
  { batch: randomUUID(), ip: '127.0.0.1', userAgent: 'bench', actor },
  access,
  backup,
  // BENCH_UNDO=false: no undo backup first (the default takes one, as the panel does).
  { truncate: truncate !== 'false', ...(process.env.BENCH_UNDO === 'false' ? { undo_backup: false } : {}) },
);
while ((await status()) !== null) await new Promise((resolve) => setTimeout(resolve, 10));
const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
await worker.stop();
const job = await db.kysely
  .selectFrom('jobs')
  .select(['state', 'error'])
  .where('kind', '=', 'backup.restore')
  .orderBy('id', 'desc')
  .executeTakeFirstOrThrow();
await db.destroy();
if (job.state !== 'succeeded')
  throw new Error(`the restore did not succeed: ${job.state} ${job.error ?? ''}`);
process.stdout.write(`${elapsedMs.toFixed(0)}\n`);
