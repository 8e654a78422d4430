/**
 * Peak memory of the long-running processes while they make a backup, as users run them: the
 * compiled `aerie serve` with its worker beside it (`--role all`), and `aerie serve --role api`
 * with `aerie worker` making the backup. Each round starts the processes afresh, reads each one's
 * peak RSS (VmHWM) once it is ready and idle, asks for a backup through the API, waits until it
 * is complete, and reads the peaks again. Prints each round, then medians (min–max).
 *
 *   DATABASE_URL=... AERIE_DATA_DIR=... TOKEN=... SERVER=... \
 *     node --import tsx bench/backup-memory.ts [--runs 3]
 *
 * bench/backup-memory.sh prepares all of that (a user, a key, a server holding the bench tree).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { apiClient } from './api-client.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const token = process.env.TOKEN ?? '';
const server = process.env.SERVER ?? '';
if (token === '' || server === '') throw new Error('set TOKEN and SERVER');
const PORT = 18722;
const base = `http://127.0.0.1:${PORT}`;

function start(args: string[]): ChildProcess {
  return spawn(process.execPath, ['dist/main.js', ...args], {
    env: { ...process.env, AERIE_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** The process's peak resident set so far, in MiB. */
function peakMiB(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kib = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
  return Math.round(kib / 1024);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const api = apiClient(base, token);

async function untilReady(): Promise<void> {
  for (let i = 0; ; i += 1) {
    try {
      await api('GET', `/api/client/servers/${server}/backups`);
      return;
    } catch (error) {
      if (i > 300) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

interface Backup {
  attributes: { uuid: string; completed_at: string | null; is_successful: boolean; bytes: number };
}

/** Makes one backup through the API; resolves once it is complete. */
async function backup(name: string): Promise<number> {
  const created = (await api('POST', `/api/client/servers/${server}/backups`, { name })) as Backup;
  const began = Date.now();
  for (;;) {
    const done = (await api(
      'GET',
      `/api/client/servers/${server}/backups/${created.attributes.uuid}`,
    )) as Backup;
    if (done.attributes.completed_at !== null) {
      if (!done.attributes.is_successful) throw new Error('the backup failed');
      await api('DELETE', `/api/client/servers/${server}/backups/${created.attributes.uuid}`);
      return (Date.now() - began) / 1000;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

type Row = Record<string, number>;
const rows: { layout: string; row: Row }[] = [];

async function round(run: number, layout: 'all' | 'split'): Promise<void> {
  const processes: Record<string, ChildProcess> =
    layout === 'all'
      ? { serve: start(['serve', '--port', String(PORT)]) }
      : { serve: start(['serve', '--port', String(PORT), '--role', 'api']), worker: start(['worker']) };
  try {
    await untilReady();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the worker settles too
    const row: Row = {};
    for (const [name, child] of Object.entries(processes)) row[`${name} idle`] = peakMiB(child);
    row.seconds = await backup(`memory-${layout}-${run}`);
    for (const [name, child] of Object.entries(processes)) row[`${name} after`] = peakMiB(child);
    rows.push({ layout, row });
    process.stdout.write(
      `run ${run} ${layout}: ` +
        Object.entries(row)
          .map(([key, value]) => `${key} ${key === 'seconds' ? value.toFixed(1) + ' s' : value + ' MiB'}`)
          .join(', ') +
        '\n',
    );
  } finally {
    for (const child of Object.values(processes)) await stop(child);
  }
}

for (let run = 1; run <= Number(values.runs); run += 1) {
  await round(run, 'all');
  await round(run, 'split');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
process.stdout.write(
  '\n| layout | process | peak RSS idle, MiB | peak RSS after a backup, MiB | backup, s |\n|---|---|---|---|---|\n',
);
for (const layout of ['all', 'split']) {
  const mine = rows.filter((r) => r.layout === layout).map((r) => r.row);
  const spread = (key: string) => {
    const xs = mine.map((row) => row[key] ?? NaN);
    return `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`;
  };
  const seconds = mine.map((row) => row.seconds ?? NaN);
  const secondsText = `${median(seconds).toFixed(1)} (${Math.min(...seconds).toFixed(1)}–${Math.max(...seconds).toFixed(1)})`;
  for (const name of layout === 'all' ? ['serve'] : ['serve', 'worker'])
    process.stdout.write(
      `| ${layout === 'all' ? 'serve --role all' : 'serve --role api + worker'} | ${name} | ${spread(`${name} idle`)} | ${spread(`${name} after`)} | ${secondsText} |\n`,
    );
}
process.exit(0);
