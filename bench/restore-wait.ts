/**
 * How long a restore waits in a node's queue behind backups. One worker runs a backlog of
 * `--backups` backup jobs, each taking `--backup-ms`; once the first has started, a restore is
 * queued. The wait is from queueing the restore to its start. Two orders are compared, `--rounds`
 * times each: first-in first-out (the restore given the backups' priority, as every job had
 * before priorities), and the claim's order now (a restore before queued backups). The handlers
 * only sleep: what is measured is the queue, in a scratch database (SQLite by default; on the
 * PostgreSQL or MariaDB server of DATABASE_URL when it names one), dropped at the end.
 *
 *   node --import tsx bench/restore-wait.ts [--backups 40] [--backup-ms 100] [--rounds 5]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/connection.ts';
import { transactorFor } from '../src/db/executor.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { JOB_PRIORITY } from '../src/jobs/job-kinds.ts';
import { JobRepository } from '../src/jobs/job.repository.ts';
import { Worker, type JobHandlers } from '../src/jobs/worker.ts';
import { scratchDatabase } from '../test/support/databases.ts';

const { values } = parseArgs({
  options: {
    backups: { type: 'string', default: '40' },
    'backup-ms': { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
  },
});
const backups = Number(values.backups);
const backupMs = Number(values['backup-ms']);
const rounds = Number(values.rounds);

const scratch = mkdtempSync(path.join(os.tmpdir(), 'aerie-bench-wait-'));
const server = process.env.DATABASE_URL ?? '';
const kind = server.startsWith('postgres') ? 'postgres' : server.startsWith('mysql') ? 'mysql' : null;
const serverDatabase = kind === null ? null : await scratchDatabase({ kind, url: server });
const url = serverDatabase?.url ?? `sqlite:${path.join(scratch, 'aerie.db')}`;
const db = connect(loadConfig({ DATABASE_URL: url, AERIE_DATA_DIR: scratch }).database);
await migrateToLatest(db);
const jobs = new JobRepository(db.kysely, db.kind, transactorFor(db.kysely));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let backupStarted: () => void = () => undefined;
let restoreStarted: (at: number) => void = () => undefined;
const handlers = {
  'backup.create': {
    run: async () => {
      backupStarted();
      await sleep(backupMs);
    },
    fail: () => Promise.resolve(),
  },
  'backup.restore': {
    run: () => {
      restoreStarted(performance.now());
      return Promise.resolve();
    },
    fail: () => Promise.resolve(),
  },
} as unknown as JobHandlers;

const payload = () => ({ serverId: randomUUID(), backupId: randomUUID(), actorId: null, ip: null });

/** One round: the backlog, a restore queued once the first backup runs; the restore's wait in ms. */
async function round(fifo: boolean): Promise<number> {
  await db.kysely.deleteFrom('jobs').execute();
  const now = new Date().toISOString();
  for (let i = 0; i < backups; i++)
    await jobs.enqueue({ kind: 'backup.create', payload: payload(), batch: randomUUID() }, now);
  const firstBackup = new Promise<void>((resolve) => (backupStarted = resolve));
  const restored = new Promise<number>((resolve) => (restoreStarted = resolve));
  const worker = new Worker({
    jobs,
    handlers,
    clock: () => new Date(),
    logger: pino({ level: 'silent' }),
    node: 'bench',
    pollMs: 10,
    leaseMs: 60_000,
    timeoutMs: 600_000,
  });
  worker.start();
  await firstBackup;
  const queuedAt = performance.now();
  const id = await jobs.enqueue(
    { kind: 'backup.restore', payload: { ...payload(), truncate: false }, batch: randomUUID() },
    new Date().toISOString(),
  );
  if (fifo)
    await db.kysely
      .updateTable('jobs')
      .set({ priority: JOB_PRIORITY['backup.create'] })
      .where('id', '=', id)
      .execute();
  const wait = (await restored) - queuedAt;
  await worker.stop(0);
  return wait;
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

try {
  const waits = { fifo: [] as number[], priority: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    waits.fifo.push(await round(true));
    waits.priority.push(await round(false));
  }
  const show = (xs: number[]) =>
    `median ${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  console.log(`${db.kind}: ${backups} backups of ${backupMs} ms queued ahead, one worker, ${rounds} rounds`);
  console.log(`  first-in first-out (before): ${show(waits.fifo)}`);
  console.log(`  restores first (now):        ${show(waits.priority)}`);
  const [before, now] = [median(waits.fifo), median(waits.priority)];
  console.log(`  median wait, now / before: ${(now / before).toFixed(3)}×`);
  console.log(
    `  in backups' time: ${(before / backupMs).toFixed(1)} before, ${(now / backupMs).toFixed(2)} now`,
  );
} finally {
  await db.destroy();
  await serverDatabase?.drop();
  rmSync(scratch, { recursive: true, force: true });
}
