/**
 * Memory of `aerie serve` under a flood of refused logins, as an attacker without any credential
 * sends them: every attempt names a username never seen before (191 characters, the reference
 * panel's longest), from one address that is over its limit after the first few, so all but
 * those few are answered 429. Reads the process's resident set (VmRSS) once it is ready, after
 * `--batch` attempts, and after as many again: what the second batch adds is what the process
 * keeps for attempts it refused (the first batch also grows the heap to its working size).
 *
 *   node --import tsx bench/refused-logins.ts [--batch 50000] [--parallel 32] [--sources]
 *
 * Runs the compiled `dist/main.js` (npm run build), or the TypeScript sources with --sources,
 * on a fresh SQLite data directory of its own. The target: the second batch adds under 10 MB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    batch: { type: 'string', default: '50000' },
    parallel: { type: 'string', default: '32' },
    sources: { type: 'boolean', default: false },
  },
});
const batch = Number(values.batch);
const parallel = Number(values.parallel);
const PORT = 18723;
const base = `http://127.0.0.1:${PORT}`;
const dataDir = mkdtempSync(path.join(tmpdir(), 'aerie-refused-logins-'));

const entry = values.sources ? ['--import', 'tsx', 'src/main.ts'] : ['dist/main.js'];
const child: ChildProcess = spawn(process.execPath, [...entry, 'serve', '--port', String(PORT)], {
  env: {
    ...process.env,
    AERIE_DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
    LOG_LEVEL: 'silent',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});

/** The process's resident set now, in MiB. */
function rssMiB(): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

async function untilReady(): Promise<void> {
  for (let i = 0; ; i += 1) {
    try {
      if ((await fetch(`${base}/health/live`)).ok) return;
    } catch (error) {
      if (i > 600) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let sent = 0;
const statuses = new Map<number, number>();

/** `total` logins under new names, `parallel` at a time. */
async function flood(total: number): Promise<number> {
  const began = performance.now();
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < total) {
      next += 1;
      sent += 1;
      const user = `${sent}-${randomBytes(96).toString('hex')}`.slice(0, 191);
      const res = await fetch(`${base}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ user, password: 'guess' }),
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: parallel }, one));
  return (performance.now() - began) / 1000;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 2000));

try {
  await untilReady();
  await settle();
  const idle = rssMiB();
  const firstSeconds = await flood(batch);
  await settle();
  const first = rssMiB();
  const secondSeconds = await flood(batch);
  await settle();
  const second = rssMiB();
  const answered = [...statuses].map(([status, n]) => `${n} × ${status}`).join(', ');
  process.stdout.write(
    `answers: ${answered}\n` +
      `| RSS idle, MiB | after ${batch}, MiB | after ${2 * batch}, MiB | second batch added, MiB | seconds per batch |\n` +
      `|---|---|---|---|---|\n` +
      `| ${idle.toFixed(1)} | ${first.toFixed(1)} | ${second.toFixed(1)} | ${(second - first).toFixed(1)} | ` +
      `${firstSeconds.toFixed(0)}, ${secondSeconds.toFixed(0)} |\n`,
  );
} finally {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
}
