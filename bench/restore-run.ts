/**
 * The measured part, end to end as a user sees it: one process with a running job worker (as
 * `aerie serve` has) asks for the restore as the API does, and waits until the server's status
 * clears. Prints the milliseconds from the request to that moment.
 *
 *   [BENCH_UNDO=false] node <build>/restore-run.js <data dir> <server id> <backup uuid> <truncate: true|false>
 *
 * It runs as production runs, bundled with the program and its thread modules (bench/restore.sh
 * and bench/snapshot-restore.sh build it: `node --import tsx scripts/bundle.ts --out <build>
 * bench/restore-run.ts`), as plain JavaScript: a TypeScript loader would start in the restore's
 * worker thread too, and cost both about 20 MB. To compare with an earlier commit, build it the
 * same way in a checkout of that commit (one that has scripts/bundle.ts) beside a node_modules.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/connection.ts';
import { createServices } from '../src/services.ts';
import { MemoryCounterStore } from '../src/shared/counter-store.ts';
import { systemClock } from '../src/shared/time.ts';

const [dataDir, serverId, backupUuid, truncate] = process.argv.slice(2);
if (dataDir === undefined || serverId === undefined || backupUuid === undefined)
  throw new Error('usage: restore-run.ts DATA_DIR SERVER_ID BACKUP_UUID [true|false]');

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
