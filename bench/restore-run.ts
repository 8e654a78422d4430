/**
 * The measured part: one worker claims the queued restore and runs it, as `aerie worker` would.
 * Prints the job's wall time in milliseconds.
 *
 *   node --import tsx bench/restore-run.ts <data dir>
 */
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/connection.ts';
import { createServices } from '../src/services.ts';
import { MemoryCounterStore } from '../src/shared/counter-store.ts';
import { systemClock } from '../src/shared/time.ts';

const [dataDir] = process.argv.slice(2);
if (dataDir === undefined) throw new Error('usage: restore-run.ts DATA_DIR');
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
