/**
 * The measured part: one worker claims the queued restore and runs it, as `aerie worker` would.
 * Prints the job's wall time in milliseconds.
 *
 *   node --import tsx bench/restore-run.ts <data dir>
 *
 * It runs Aerie's compiled build (dist/, `npm run build` first), as `aerie worker` runs in
 * production: the restore's worker thread then loads plain JavaScript, not the TypeScript
 * loader. BENCH_SOURCES=1 runs the TypeScript sources instead.
 */
import path from 'node:path';

type Config = typeof import('../src/config.ts');
type Connection = typeof import('../src/db/connection.ts');
type Services = typeof import('../src/services.ts');
type CounterStore = typeof import('../src/shared/counter-store.ts');
type Time = typeof import('../src/shared/time.ts');

const [dataDir] = process.argv.slice(2);
if (dataDir === undefined) throw new Error('usage: restore-run.ts DATA_DIR');
const root = process.env.BENCH_SOURCES === '1' ? '../src' : '../dist';
const ext = root === '../src' ? '.ts' : '.js';
const load = <T>(module: string): Promise<T> => import(`${root}/${module}${ext}`) as Promise<T>;
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
const started = process.hrtime.bigint();
const ran = await services.createWorker('bench').runOnce();
const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
const job = await db.kysely.selectFrom('jobs').select(['state', 'error']).executeTakeFirstOrThrow();
await db.destroy();
if (!ran || job.state !== 'succeeded')
  throw new Error(`the restore did not succeed: ${job.state} ${job.error ?? ''}`);
process.stdout.write(`${elapsedMs.toFixed(0)}\n`);
