/**
 * `aerie serve`, as real processes, while their database goes away under load: a private
 * PostgreSQL restarted with `pg_ctl restart -m fast` (every session ended, checked-out and idle
 * ones alike, some in the middle of a transaction), and MariaDB with every connection of the
 * application killed. No process may end; each request in flight when it happens answers 503
 * in the envelope (never a 500, never a hang), and the requests after it succeed. On
 * PostgreSQL the worker's LISTEN connection comes back too: a job queued by another process
 * after the restart wakes the worker although its poll is too slow to find it in time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import {
  SERVER_DIALECTS,
  scratchDatabase,
  serverAvailable,
  type ScratchDatabase,
} from '../support/dialects.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { postgresBinDir, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts';
import { freePort, until } from '../support/wait.ts';

const WRITERS = 8;
/** No request may take longer than this, even one caught by the restart. */
const REQUEST_BOUND_MS = 10_000;

interface Proc {
  name: string;
  child: ChildProcess;
  base: string;
  output: () => string;
  exited: Promise<unknown>;
}

/** Starts `aerie serve <args>` on `env`'s database and waits until it answers. */
async function serve(
  name: string,
  args: string[],
  env: Record<string, string>,
  procs: Proc[],
): Promise<Proc> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    aerieArgv(['serve', ...args, '--host', '127.0.0.1', '--port', String(port)]),
    { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const proc: Proc = { name, child, base: `http://127.0.0.1:${port}`, output: () => output, exited };
  procs.push(proc);
  await until(
    () =>
      fetch(`${proc.base}/health/live`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.ok,
        () => false,
      ),
    { timeoutMs: 30_000, what: `${name} to listen`, context: () => output.slice(-3000) },
  );
  return proc;
}

async function stopAll(procs: Proc[]): Promise<void> {
  for (const proc of procs) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
}

interface Outcome {
  writer: number;
  status: number;
  body: unknown;
  retryAfter: string | null;
  ms: number;
  /** When the request was sent, relative to the disruption: before it began, during it, or after it ended. */
  sent: 'before' | 'during' | 'after';
  error?: string;
}

/**
 * Runs `WRITERS` writers, each creating an API key and deleting it again in a loop (two
 * transactions, each with a row lock and an activity entry), against the processes in turn.
 * Once they are all under way, `disrupt` runs; the writers go on until each has succeeded a
 * few times since it ended, then stop. Every response is returned.
 */
async function writeThrough(
  procs: Proc[],
  tokens: string[],
  disrupt: () => Promise<void>,
): Promise<{ outcomes: Outcome[]; inFlightAtDisruption: number }> {
  let phase: Outcome['sent'] = 'before';
  let stop = false;
  let inFlight = 0;
  const outcomes: Outcome[] = [];
  const successesAfter = new Array<number>(WRITERS).fill(0);
  const successesBefore = new Array<number>(WRITERS).fill(0);

  const send = async (writer: number, method: string, url: string, body?: unknown): Promise<Outcome> => {
    const base = procs[writer % procs.length]!.base;
    const sent = phase;
    const started = Date.now();
    inFlight += 1;
    try {
      const response = await fetch(`${base}${url}`, {
        method,
        headers: {
          ...bearer(tokens[writer]!),
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_BOUND_MS),
      });
      const text = await response.text();
      const outcome: Outcome = {
        writer,
        status: response.status,
        body: text === '' ? null : (JSON.parse(text) as unknown),
        retryAfter: response.headers.get('retry-after'),
        ms: Date.now() - started,
        sent,
      };
      outcomes.push(outcome);
      return outcome;
    } catch (error) {
      const outcome: Outcome = {
        writer,
        status: 0,
        body: null,
        retryAfter: null,
        ms: Date.now() - started,
        sent,
        error: error instanceof Error ? error.message : String(error),
      };
      outcomes.push(outcome);
      return outcome;
    } finally {
      inFlight -= 1;
    }
  };

  const writer = async (i: number) => {
    const deadline = Date.now() + 45_000;
    while (!stop && Date.now() < deadline) {
      const created = await send(i, 'POST', '/api/client/account/api-keys', { description: `writer ${i}` });
      let ok = created.status === 200;
      if (ok) {
        const identifier = (created.body as { attributes: { identifier: string } }).attributes.identifier;
        ok = (await send(i, 'DELETE', `/api/client/account/api-keys/${identifier}`)).status === 204;
      }
      if (ok && phase === 'before') successesBefore[i]! += 1;
      if (ok && phase === 'after' && created.sent === 'after') successesAfter[i]! += 1;
      // A refused request comes back at once while the database is away; do not spin on it.
      if (!ok) await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  const running = Array.from({ length: WRITERS }, (_, i) => writer(i));
  let inFlightAtDisruption: number;
  try {
    await until(() => successesBefore.every((n) => n >= 2), {
      timeoutMs: 20_000,
      what: 'every writer under way',
    });
    phase = 'during';
    inFlightAtDisruption = inFlight;
    await disrupt();
    phase = 'after';
    // A process that ended will never answer again: stop there and let the caller say so.
    const ended = () => procs.some((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    await until(() => ended() || successesAfter.every((n) => n >= 3), {
      timeoutMs: 25_000,
      what: 'every writer to succeed again after the disruption',
      context: () => JSON.stringify(outcomes.filter((o) => o.sent === 'after').slice(-5)),
    });
  } finally {
    stop = true;
    await Promise.all(running);
  }
  return { outcomes, inFlightAtDisruption };
}

/** What every test here asserts about the processes and the responses they gave. */
function expectSurvived(procs: Proc[], outcomes: Outcome[], inFlightAtDisruption: number): void {
  const logs = procs.map((p) => `--- ${p.name}\n${p.output().slice(-4000)}`).join('\n');
  for (const proc of procs) {
    expect({ name: proc.name, exitCode: proc.child.exitCode, signal: proc.child.signalCode }, logs).toEqual({
      name: proc.name,
      exitCode: null,
      signal: null,
    });
  }
  // The disruption met requests on their way, not an idle pool.
  expect(inFlightAtDisruption).toBeGreaterThan(0);
  const failed = outcomes.filter((o) => o.status !== 200 && o.status !== 204);
  const unexpected = failed.filter((o) => o.status !== 503);
  expect(unexpected, logs).toEqual([]);
  for (const outcome of failed) {
    expect(outcome.body).toEqual({
      errors: [
        {
          code: 'ServiceUnavailableHttpException',
          status: '503',
          detail: 'The database is unavailable; try again shortly.',
        },
      ],
    });
    expect(Number(outcome.retryAfter)).toBeGreaterThan(0);
  }
  expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(REQUEST_BOUND_MS);
  // Each 503 was logged as a warning, none as an unexpected failure, and no process reported a crash.
  const warnings = procs.flatMap((proc) =>
    logLines(proc.output()).filter((l) => l.msg === 'the database is unavailable; answered 503'),
  );
  expect(warnings.map((l) => l.level)).toEqual(failed.map(() => 40));
  for (const proc of procs) {
    expect(proc.output()).not.toContain('unexpected error while handling a request');
    expect(proc.output()).not.toMatch(/Unhandled 'error' event|uncaught|unhandledRejection/i);
  }
}

/** The JSON log lines a process printed. */
function logLines(output: string): { level: number; msg: string }[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

async function usersWithKeys(app: TestApp): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < WRITERS; i++) {
    const user = await createUser(app);
    tokens.push((await createApiKey(app, user)).token);
  }
  return tokens;
}

describe.runIf(postgresBinDir() !== undefined)(
  'aerie serve while PostgreSQL restarts under 8 writers',
  () => {
    let cluster: PrivatePostgres;
    let app: TestApp;
    const procs: Proc[] = [];

    beforeAll(async () => {
      cluster = await startPrivatePostgres();
      app = await startTestApp({ databaseUrl: cluster.url });
    }, 60_000);

    afterAll(async () => {
      await stopAll(procs);
      await app?.close();
      await cluster?.destroy();
    }, 30_000);

    it('keeps both roles running, answers 503 for what the restart caught, and serves again after', async () => {
      const tokens = await usersWithKeys(app);
      const owner = await createUser(app);
      const ownerToken = (await createApiKey(app, owner)).token;
      const server = await createServer(app, owner);
      fs.writeFileSync(path.join(server.volume, 'world.dat'), randomBytes(4096));
      const env = {
        DATABASE_URL: cluster.url,
        AERIE_DATA_DIR: app.dataDir,
        AERIE_APP_KEY: randomBytes(32).toString('hex'),
        AERIE_RATE_LIMIT_PER_MINUTE: '0',
        // So slow that only a notification on the LISTEN connection wakes the worker in time.
        AERIE_WORKER_POLL_MS: '60000',
      };
      const [api, all] = await Promise.all([
        serve('serve --role api', ['--role', 'api'], env, procs),
        serve('serve', ['--role', 'all'], env, procs),
      ]);

      const { outcomes, inFlightAtDisruption } = await writeThrough([api, all], tokens, () =>
        cluster.restart(),
      );
      expectSurvived(procs, outcomes, inFlightAtDisruption);

      // A backup queued through the API-only process reaches the worker of the other by NOTIFY,
      // which needs the LISTEN connection the restart ended to have been opened again.
      await until(() => /listening for queued jobs was lost/.test(all.output()), {
        timeoutMs: 10_000,
        what: 'the worker to notice its LISTEN connection went',
      });
      const created = await until(
        async () => {
          const response = await fetch(`${api.base}/api/client/servers/${server.identifier}/backups`, {
            method: 'POST',
            headers: { ...bearer(ownerToken), 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'after the restart' }),
            signal: AbortSignal.timeout(REQUEST_BOUND_MS),
          });
          return response.status === 200 && ((await response.json()) as { attributes: { uuid: string } });
        },
        { timeoutMs: 10_000, what: 'a backup to be accepted' },
      );
      await until(
        async () => {
          const response = await fetch(
            `${api.base}/api/client/servers/${server.identifier}/backups/${created.attributes.uuid}`,
            { headers: bearer(ownerToken), signal: AbortSignal.timeout(REQUEST_BOUND_MS) },
          );
          const body = (await response.json()) as { attributes: { completed_at: string | null } };
          return body.attributes.completed_at !== null;
        },
        { timeoutMs: 15_000, what: 'the backup to be made', context: () => all.output().slice(-3000) },
      );
    }, 120_000);
  },
);

const MARIADB = SERVER_DIALECTS.find((d) => d.kind === 'mysql')!;

describe.runIf(await serverAvailable(MARIADB.url))(
  'aerie serve while MariaDB kills its connections under 8 writers',
  () => {
    let scratch: ScratchDatabase;
    let dataDir: string;
    const procs: Proc[] = [];

    beforeAll(async () => {
      scratch = await scratchDatabase(MARIADB);
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-restart-'));
    });

    afterAll(async () => {
      await stopAll(procs);
      await scratch?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }, 30_000);

    it('keeps running, answers 503 for what the kills caught, and serves again after', async () => {
      // Users and keys made by a process of the test's own, closed before the kills begin.
      const app = await startTestApp({ databaseUrl: scratch.url });
      const tokens = await usersWithKeys(app).finally(() => app.close());
      const proc = await serve(
        'serve',
        ['--role', 'all'],
        {
          DATABASE_URL: scratch.url,
          AERIE_DATA_DIR: dataDir,
          AERIE_APP_KEY: randomBytes(32).toString('hex'),
          AERIE_RATE_LIMIT_PER_MINUTE: '0',
        },
        procs,
      );
      const database = new URL(scratch.url).pathname.slice(1);
      const admin = await createConnection(MARIADB.url);
      try {
        // Every connection of the application, three times over: the first round catches those in
        // use (some inside a transaction), the later ones the connections opened to replace them.
        const killAll = async () => {
          for (let round = 0; round < 3; round++) {
            const [rows] = await admin.query<({ ID: number } & RowDataPacket)[]>(
              'select ID from information_schema.processlist where DB = ? and ID <> connection_id()',
              [database],
            );
            for (const { ID } of rows)
              await admin.query(`kill connection ${Number(ID)}`).catch(() => undefined);
            await new Promise((resolve) => setTimeout(resolve, 150));
          }
        };
        const { outcomes, inFlightAtDisruption } = await writeThrough([proc], tokens, killAll);
        expectSurvived(procs, outcomes, inFlightAtDisruption);
      } finally {
        await admin.end();
      }
    }, 120_000);
  },
);
