/**
 * What bench/backup-browse.ts and bench/backup-browse-s3.ts share: Aerie built as production runs
 * it (scripts/bundle.ts into a directory of the bench's own under `.bench-dist/`, so no one
 * else's dist/ is touched), its CLI run as a child process, a data directory with a user, a server
 * and an API key, `aerie serve` started on a free port, timed HTTP requests over one keep-alive
 * connection, and the figures (percentiles, medians, the machine line).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * The compiled program's entry point: `build` when given (a directory holding a bundle's
 * main.js), else the working tree's sources bundled into `.bench-dist/<name>` (inside the
 * repository: the bundle's bare imports resolve to its node_modules).
 */
export function buildAerie(name: string, build: string | undefined): string {
  if (build !== undefined) return path.join(path.resolve(build), 'main.js');
  const out = path.join(ROOT, '.bench-dist', name);
  fs.rmSync(out, { recursive: true, force: true });
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/bundle.ts', '--out', out], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return path.join(out, 'main.js');
}

/**
 * Runs a command to its end without blocking this process's event loop (s3rver may run in it);
 * its stdout, or an error with its stderr.
 */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) =>
      status === 0
        ? resolve(stdout)
        : reject(new Error(`${[command, ...args].join(' ')} exited with ${status}: ${stderr}`)),
    );
  });
}

/**
 * The environment of a data directory in `dataDir` (SQLite), beside `extra`. The API's rate limit
 * is off (as in the other HTTP benches): hundreds of requests a minute from one key are the bench.
 */
export function aerieEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    AERIE_DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
    LOG_LEVEL: 'silent',
    AERIE_RATE_LIMIT_PER_MINUTE: '0',
    ...extra,
  };
}

export interface BenchServer {
  identifier: string;
  uuid: string;
  volume: string;
}

/** A migrated data directory with the user "bench", one server it owns and an API key of its. */
export async function setUpData(
  main: string,
  env: NodeJS.ProcessEnv,
): Promise<{ server: BenchServer; token: string }> {
  const aerie = (args: string[]) => run(process.execPath, [main, ...args], env);
  await aerie(['migrate']);
  await aerie([
    'user',
    'create',
    '--username',
    'bench',
    '--email',
    'bench@example.com',
    '--password',
    'bench-password-1',
  ]);
  const server = JSON.parse(
    await aerie(['server', 'create', '--owner', 'bench', '--name', 'bench', '--json']),
  ) as BenchServer;
  const { token } = JSON.parse(await aerie(['key', 'create', '--user', 'bench', '--json'])) as {
    token: string;
  };
  return { server, token };
}

/** A TCP port nothing listens on (asked of the system, then let go). */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export interface Served {
  base: string;
  pid: number;
  /** Peak resident memory so far (VmHWM), KiB. */
  peakKib(): number;
  /** The largest peak resident memory of a process it started (a download's), KiB, read every 20 ms. */
  childPeakKib(): number;
  /** SIGTERM, then waits for the process's end. */
  stop(): Promise<void>;
}

/** Starts a process that serves HTTP on `port`, and waits until `ready` (a path) answers 2xx. */
export async function startProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  port: number,
  ready: string,
  logFile: string,
): Promise<Served> {
  const log = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited: see ${logFile}`);
    const ok = await fetch(`${base}${ready}`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`${args.join(' ')} did not answer within 30 s: see ${logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const pid = child.pid!;
  let childPeak = 0;
  const sampler = setInterval(() => {
    for (const each of childrenOf(pid)) childPeak = Math.max(childPeak, statusKib(each, 'VmHWM', 0));
  }, 20);
  sampler.unref();
  void exited.then(() => clearInterval(sampler));
  return {
    base,
    pid,
    peakKib: () => statusKib(pid, 'VmHWM'),
    childPeakKib: () => childPeak,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `aerie serve` of the build `main` on a free port. */
export async function startAerie(main: string, env: NodeJS.ProcessEnv, logFile: string): Promise<Served> {
  const port = await freePort();
  return startProcess([main, 'serve', '--port', String(port)], env, port, '/health/live', logFile);
}

/** A field of /proc/<pid>/status in KiB (VmHWM: the peak resident set, VmRSS: the current one). */
export function statusKib(pid: number, field: 'VmHWM' | 'VmRSS', ifGone?: number): number {
  let status: string;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch (error) {
    if (ifGone !== undefined) return ifGone;
    throw error;
  }
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (match === null) {
    if (ifGone !== undefined) return ifGone; // a process ending: no memory left to tell
    throw new Error(`no ${field} in /proc/${pid}/status`);
  }
  return Number(match[1]);
}

/** The processes whose parent is `pid`, now. */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

export interface Answer {
  status: number;
  body: Buffer;
  /** From sending the request to the last byte of the body. */
  ms: number;
}

/** One keep-alive connection, requests one after the other, each timed. */
export function httpClient(token: string | null) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const request = (
    method: string,
    url: string,
    body?: unknown,
    sink?: (chunk: Buffer) => void,
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const started = performance.now();
      const req = http.request(
        url,
        {
          method,
          agent,
          headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => (sink === undefined ? chunks.push(chunk) : sink(chunk)));
          res.once('error', reject);
          res.once('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks),
              ms: performance.now() - started,
            }),
          );
        },
      );
      req.once('error', reject);
      req.end(payload);
    });
  return {
    request,
    /** A JSON answer of a 2xx (anything else is thrown). */
    json: async <T>(method: string, url: string, body?: unknown): Promise<{ value: T; ms: number }> => {
      const answer = await request(method, url, body);
      if (answer.status < 200 || answer.status > 299)
        throw new Error(`${method} ${url}: ${answer.status} ${answer.body.toString()}`);
      return {
        value: (answer.status === 204 ? null : JSON.parse(answer.body.toString())) as T,
        ms: answer.ms,
      };
    },
    close: () => agent.destroy(),
  };
}

/** The value below which `p` (0–1) of `xs` fall (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `median (min–max)`, with `digits` decimals. */
export function spread(xs: readonly number[], digits = 1): string {
  const f = (x: number) => x.toFixed(digits);
  return xs.length === 1 ? f(xs[0]!) : `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
}

/** Files under `dir`, their bytes, and the disk they take (allocated blocks). */
export function treeSize(dir: string): { files: number; bytes: number; diskBytes: number } {
  let files = 0;
  let bytes = 0;
  let diskBytes = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const stat = fs.statSync(path.join(entry.parentPath, entry.name));
    diskBytes += stat.blocks * 512;
    if (!entry.isFile()) continue;
    files += 1;
    bytes += stat.size;
  }
  return { files, bytes, diskBytes };
}

export function mib(bytes: number, digits = 1): string {
  return `${(bytes / 2 ** 20).toFixed(digits)} MiB`;
}

/** The machine, Node and the load: printed with every result. */
export function machineLine(): string {
  return (
    `machine: ${os.cpus().length} CPUs (nproc ${execFileSync('nproc', { encoding: 'utf8' }).trim()}), ` +
    `${os.cpus()[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM; node ${process.version}; ` +
    `${os.type()} ${os.release()}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${new Date().toISOString()}`
  );
}

/** The command as it was run. */
export function commandLine(): string {
  return `node --import tsx ${path.relative(ROOT, process.argv[1]!)} ${process.argv.slice(2).join(' ')}`.trim();
}

/** Runs `cleanup` once, on the way out or on Ctrl-C / SIGTERM. */
export function onExit(cleanup: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  const once = () => (done ??= cleanup());
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      void once().finally(() => process.exit(130));
    });
  return once;
}
