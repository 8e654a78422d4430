import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openRuntime } from '../../src/runtime.ts';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { freePort, until } from '../support/wait.ts';

const opened: TestApp[] = [];
async function app(env: Record<string, string>): Promise<TestApp> {
  const started = await startTestApp({ env });
  opened.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.close()));
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Reads the Prometheus text format: one sample a line, comments skipped. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find(
    (s) => s.name === name && Object.entries(labels).every(([key, v]) => s.labels[key] === v),
  )?.value;
}

async function listen(a: TestApp): Promise<string> {
  await a.http.listen({ host: '127.0.0.1', port: 0 });
  const { port } = a.http.server.address() as net.AddressInfo;
  return `http://127.0.0.1:${port}`;
}

describe('metrics', () => {
  it('are off by default: /metrics is a 404 like any unknown route', async () => {
    const a = await app({});
    const base = await listen(a);
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(404);
  });

  it('label requests by route pattern and status, never by the path a client sent', async () => {
    const a = await app({ AERIE_METRICS: 'on' });
    const base = await listen(a);
    const user = await createUser(a);
    const { token } = await createApiKey(a, user);
    for (let i = 0; i < 20; i++) {
      await fetch(`${base}/api/client/servers/probe${i}x`, { headers: bearer(token) });
      await fetch(`${base}/nowhere/${i}-secret-path`);
    }
    await fetch(`${base}/api/client/account`, { headers: bearer(token) });

    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).not.toMatch(/probe\d+x|secret-path/);
    const samples = parse(text);
    const count = (route: string, status: string) =>
      value(samples, 'aerie_http_request_duration_seconds_count', { method: 'GET', route, status });
    expect(count('/api/client/servers/:server', '404')).toBe(20);
    expect(count('unmatched', '404')).toBe(20);
    expect(count('/api/client/account', '200')).toBe(1);
    // Every route label is a pattern the app declared (or `unmatched`): bounded, whatever clients send.
    const routes = new Set(
      samples
        .filter((s) => s.name === 'aerie_http_request_duration_seconds_count')
        .map((s) => s.labels.route),
    );
    for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/')).toBe(true);
    expect(routes.size).toBeLessThanOrEqual(3);
    // Process metrics come along.
    expect(value(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('count jobs by kind and outcome, the queue depth, and bytes backed up and restored', async () => {
    const a = await app({ AERIE_METRICS: 'on' });
    const base = await listen(a);
    const owner = await createUser(a);
    const { token } = await createApiKey(a, owner);
    const server = await createServer(a, owner);
    fs.writeFileSync(path.join(server.volume, 'world.dat'), Buffer.alloc(300_000, 7));
    const headers = { ...bearer(token), 'content-type': 'application/json' };
    const backups = `${base}/api/client/servers/${server.identifier}/backups`;

    const created = await fetch(backups, { method: 'POST', headers, body: JSON.stringify({ name: 'one' }) });
    expect(created.status).toBe(200);
    const { uuid } = ((await created.json()) as { attributes: { uuid: string } }).attributes;
    let samples = parse(await (await fetch(`${base}/metrics`)).text());
    expect(value(samples, 'aerie_jobs_queued', { kind: 'backup.create' })).toBe(1);
    expect(value(samples, 'aerie_jobs_queued', { kind: 'backup.restore' })).toBe(0);

    expect(await drainJobs(a)).toBe(1);
    const restore = await fetch(`${backups}/${uuid}/restore`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ truncate: true }),
    });
    expect(restore.status).toBe(204);
    expect(await drainJobs(a)).toBe(1);

    samples = parse(await (await fetch(`${base}/metrics`)).text());
    expect(value(samples, 'aerie_jobs_queued', { kind: 'backup.create' })).toBe(0);
    expect(value(samples, 'aerie_jobs_total', { kind: 'backup.create', outcome: 'succeeded' })).toBe(1);
    expect(value(samples, 'aerie_jobs_total', { kind: 'backup.restore', outcome: 'succeeded' })).toBe(1);
    expect(
      value(samples, 'aerie_job_duration_seconds_count', { kind: 'backup.create', outcome: 'succeeded' }),
    ).toBe(1);
    const backup = await a.db.kysely
      .selectFrom('backups')
      .select('bytes')
      .where('id', '=', uuid)
      .executeTakeFirstOrThrow();
    expect(value(samples, 'aerie_backup_written_bytes_total')).toBe(Number(backup.bytes));
    expect(value(samples, 'aerie_backup_restored_bytes_total')).toBe(300_000);
  });

  it('are served on their own address with AERIE_METRICS_ADDRESS, and not on the API listener', async () => {
    const port = await freePort();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-metrics-'));
    const runtime = await openRuntime(
      loadConfig({
        AERIE_DATA_DIR: dataDir,
        AERIE_METRICS_ADDRESS: `127.0.0.1:${port}`,
        LOG_LEVEL: 'silent',
      }),
    );
    const api = await buildApp(runtime);
    try {
      await runtime.ops.start({ jobs: false, http: true });
      await api.http.listen({ host: '127.0.0.1', port: 0 });
      const { port: apiPort } = api.http.server.address() as net.AddressInfo;
      expect((await fetch(`http://127.0.0.1:${apiPort}/metrics`)).status).toBe(404);
      await fetch(`http://127.0.0.1:${apiPort}/health/live`);

      const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(scraped.status).toBe(200);
      const samples = parse(await scraped.text());
      expect(
        value(samples, 'aerie_http_request_duration_seconds_count', { route: '/health/live', status: '200' }),
      ).toBe(1);
      // Only /metrics lives there, and only for reading.
      const elsewhere = await fetch(`http://127.0.0.1:${port}/api/client`);
      expect(elsewhere.status).toBe(404);
      expect(await elsewhere.json()).toMatchObject({ errors: [{ status: '404' }] });
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await api.http.close();
      await runtime.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    // Closing the runtime closes the metrics listener.
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
  });

  it('stop a second process from starting on an address already taken, naming the variable', async () => {
    const port = await freePort();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-metrics-'));
    const runtime = await openRuntime(
      loadConfig({
        AERIE_DATA_DIR: dataDir,
        AERIE_METRICS_ADDRESS: `127.0.0.1:${port}`,
        LOG_LEVEL: 'silent',
      }),
    );
    try {
      await expect(runtime.ops.start({ jobs: false, http: false })).rejects.toThrow(
        /AERIE_METRICS_ADDRESS 127\.0\.0\.1:\d+ is already in use/,
      );
    } finally {
      await runtime.close();
      await new Promise((resolve) => blocker.close(resolve));
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('of jobs come from the process that ran them: a real `aerie worker` on its own metrics address', async () => {
    const a = await app({});
    const port = await freePort();
    const owner = await createUser(a);
    const { token } = await createApiKey(a, owner);
    const server = await createServer(a, owner);
    fs.writeFileSync(path.join(server.volume, 'a.txt'), 'hello');
    const child = spawn(process.execPath, aerieArgv(['worker']), {
      cwd: ROOT,
      env: {
        ...process.env,
        AERIE_DATA_DIR: a.dataDir,
        DATABASE_URL: a.config.database.url,
        AERIE_WORKER_POLL_MS: '50',
        AERIE_METRICS_ADDRESS: `127.0.0.1:${port}`,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const scrape = async () => parse(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      const context = () => `worker output:\n${output.slice(-3000)}`;
      await until(async () => (await scrape()).length > 0, { what: "the worker's metrics", context });
      const created = await a.http.inject({
        method: 'POST',
        url: `/api/client/servers/${server.identifier}/backups`,
        headers: bearer(token),
        payload: { name: 'by the worker' },
      });
      expect(created.statusCode).toBe(200);
      await until(
        async () =>
          value(await scrape(), 'aerie_jobs_total', { kind: 'backup.create', outcome: 'succeeded' }) === 1,
        { timeoutMs: 60_000, what: 'the backup job to succeed in the worker', context },
      );
      expect(value(await scrape(), 'aerie_backup_written_bytes_total')).toBeGreaterThan(0);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    expect(output).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});
