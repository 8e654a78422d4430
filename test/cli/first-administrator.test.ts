import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { bootstrapAdministrator, CREDENTIALS_FILE, panelUrl } from '../../src/cli/bootstrap.ts';
import { aerieProgram } from '../../src/cli/program.ts';
import { loadConfig } from '../../src/config.ts';
import { connect } from '../../src/db/connection.ts';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import { ALL_DIALECT_CASES, scratchDatabase } from '../support/dialects.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await Promise.resolve()
      .then(probe)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** How many accounts the database at `url` holds. */
async function countUsers(url: string): Promise<number> {
  const db = connect(loadConfig({ DATABASE_URL: url }).database);
  try {
    const row = await db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  } finally {
    await db.destroy();
  }
}

function credentialsIn(text: string): { password: string; token: string } {
  const password = /password: (\S+)/.exec(text)?.[1];
  const token = /API key: +(ptlc_\S+)/.exec(text)?.[1];
  if (password === undefined || token === undefined) throw new Error(`no credentials in: ${text}`);
  return { password, token };
}

/**
 * The block names the panel, the email, and how to change them: the Account and API keys pages
 * of that panel, and `aerie` commands that exist, with options they take.
 */
function expectBlockNamingPanelAndChanges(text: string, panel: string): void {
  expect(text).toContain(`  panel:    ${panel}\n`);
  expect(text).toContain('  username: admin\n');
  expect(text).toContain('  email:    admin@example.com\n');
  expect(text).toContain(`Account: ${panel}account\n`);
  expect(text).toContain(`The API keys page (${panel}account/api-keys) deletes this key`);
  const commands = [...text.matchAll(/^ *aerie (\S+) (\S+)((?: --[a-z-]+(?: [A-Z]+)?)*)$/gm)];
  expect(commands.map((c) => `${c[1]} ${c[2]}`)).toEqual(['user create', 'key create']);
  const program = aerieProgram();
  for (const [, group, name, options] of commands) {
    const command = program.commands
      .find((c: Command) => c.name() === group)
      ?.commands.find((c: Command) => c.name() === name);
    expect(command, `aerie ${group} ${name}`).toBeDefined();
    for (const option of options?.match(/--[a-z-]+/g) ?? [])
      expect(
        command?.options.map((o) => o.long),
        `aerie ${group} ${name} ${option}`,
      ).toContain(option);
  }
}

describe('the panel address shown with the first administrator', () => {
  it.each([
    [null, '127.0.0.1', 8080, 'http://127.0.0.1:8080/'],
    [null, '0.0.0.0', 8080, 'http://localhost:8080/'],
    [null, '::', 3000, 'http://localhost:3000/'],
    [null, '::1', 3000, 'http://[::1]:3000/'],
    [null, 'aerie.internal', 80, 'http://aerie.internal:80/'],
    ['https://panel.example.com', '0.0.0.0', 8080, 'https://panel.example.com/'],
    ['https://example.com/aerie', '127.0.0.1', 8080, 'https://example.com/aerie/'],
  ])('AERIE_PUBLIC_URL %s, listening on %s port %s: %s', (publicUrl, host, port, expected) => {
    expect(panelUrl(publicUrl, host, port)).toBe(expected);
  });
});

describe('the first administrator', () => {
  it('goes to a 0600 file, not to stdout, when stdout is not a terminal (a real `aerie serve`)', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-first-admin-'));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const [port, metricsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, aerieArgv(['serve']), {
      cwd: ROOT,
      env: {
        ...process.env,
        AERIE_DATA_DIR: dataDir,
        DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'info',
        AERIE_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    });

    const base = `http://127.0.0.1:${port}`;
    await until('the API', async () => ((await fetch(`${base}/health/live`)).ok ? true : undefined));
    const file = path.join(dataDir, CREDENTIALS_FILE);
    await until('the message', () => (stdout.includes(file) ? true : undefined));

    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const { password, token } = credentialsIn(fs.readFileSync(file, 'utf8'));
    expect(stdout).not.toContain(password);
    expect(stdout).not.toContain(token);
    expect(stderr).not.toContain(password);
    expect(stdout).toContain(`Its username, password and API key are in ${file}`);
    expect(stdout).toContain(`The panel is at ${base}/\n`);
    expectBlockNamingPanelAndChanges(fs.readFileSync(file, 'utf8'), `${base}/`);

    // They work.
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'admin', password }),
    });
    expect(login.status).toBe(200);
    const account = await fetch(`${base}/api/client/account`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(account.status).toBe(200);
    // The same process serves its metrics on their own address.
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain(
      'aerie_http_request_duration_seconds_count{method="POST",route="/auth/login",status="200"} 1',
    );

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);

  describe.each(ALL_DIALECT_CASES)(
    'three processes starting at once on an empty $kind database',
    (dialect) => {
      it.runIf(dialect.available)(
        'make exactly one administrator, and one file of credentials that work',
        async () => {
          const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-first-admin-race-'));
          cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
          let url = `sqlite:${path.join(dataDir, 'aerie.db')}`;
          if (dialect.kind !== 'sqlite') {
            const scratch = await scratchDatabase({ kind: dialect.kind, url: dialect.url });
            cleanups.push(() => scratch.drop());
            url = scratch.url;
          }
          // Three API processes, as a deployment starts them: one database, one data directory.
          const ports = [await freePort(), await freePort(), await freePort()];
          const processes = ports.map((port) => {
            const child = spawn(process.execPath, aerieArgv(['serve', '--role', 'api']), {
              cwd: ROOT,
              env: {
                ...process.env,
                AERIE_DATA_DIR: dataDir,
                DATABASE_URL: url,
                AERIE_APP_KEY: 'k'.repeat(48),
                HOST: '127.0.0.1',
                PORT: String(port),
                LOG_LEVEL: 'info',
              },
              stdio: ['ignore', 'pipe', 'pipe'],
            });
            let output = '';
            child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
            child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
            const exited = new Promise<number | null>((resolve) =>
              child.once('exit', (code) => resolve(code)),
            );
            cleanups.push(async () => {
              if (child.exitCode === null && child.signalCode === null) {
                child.kill('SIGKILL');
                await exited;
              }
            });
            return { child, port, exited, output: () => output };
          });
          const outputs = () => processes.map((p, i) => `--- process ${i}:\n${p.output()}`).join('\n');

          // Every one of them starts and serves.
          for (const { port, child } of processes) {
            const state = await until(`the API on port ${port}`, async () => {
              if (child.exitCode !== null) return 'exited';
              return (await fetch(`http://127.0.0.1:${port}/health/live`)).ok ? 'serving' : undefined;
            });
            expect(state, outputs()).toBe('serving');
          }
          const file = path.join(dataDir, CREDENTIALS_FILE);
          const announced = processes.filter((p) =>
            p.output().includes('Aerie created its first administrator'),
          );
          expect(announced.length, outputs()).toBe(1);
          // One file, the only one left in the data directory (no stray scratch copies).
          expect(fs.readdirSync(dataDir).filter((name) => name.includes(CREDENTIALS_FILE))).toEqual([
            CREDENTIALS_FILE,
          ]);
          expect(fs.statSync(file).mode & 0o777).toBe(0o600);
          const { password, token } = credentialsIn(fs.readFileSync(file, 'utf8'));

          // One account, one key, and they work on every process.
          for (const { port } of processes) {
            const base = `http://127.0.0.1:${port}`;
            const login = await fetch(`${base}/auth/login`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ user: 'admin', password }),
            });
            expect(login.status).toBe(200);
            const keys = await fetch(`${base}/api/client/account/api-keys`, {
              headers: { authorization: `Bearer ${token}` },
            });
            expect(keys.status).toBe(200);
            expect(((await keys.json()) as { data: unknown[] }).data).toHaveLength(1);
          }
          for (const { child, exited } of processes) {
            child.kill('SIGTERM');
            expect(await exited).toBe(0);
          }
          expect(await countUsers(url)).toBe(1);
        },
        90_000,
      );
    },
  );

  describe('in process', () => {
    let app: TestApp;
    afterEach(() => app.close());

    it('is printed when stdout is a terminal, and no file is written', async () => {
      app = await startTestApp();
      let printed = '';
      const created = await bootstrapAdministrator(app.services, {
        dataDir: app.dataDir,
        panelUrl: 'https://panel.example.com/',
        out: { isTTY: true, write: (text: string) => (printed += text) },
      });
      expect(created).toBe(true);
      const { password } = credentialsIn(printed);
      expect(printed).toContain('Aerie created its first administrator. This is shown once');
      expectBlockNamingPanelAndChanges(printed, 'https://panel.example.com/');
      expect(fs.existsSync(path.join(app.dataDir, CREDENTIALS_FILE))).toBe(false);
      const login = await app.http.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { user: 'admin', password },
      });
      expect(login.statusCode).toBe(200);
      // Only once.
      expect(
        await bootstrapAdministrator(app.services, {
          dataDir: app.dataDir,
          panelUrl: 'https://panel.example.com/',
          out: { write: () => true },
        }),
      ).toBe(false);
    });

    it('makes no account when the file cannot be written, so no password is lost', async () => {
      app = await startTestApp();
      const blocked = path.join(app.dataDir, 'blocked');
      fs.writeFileSync(blocked, 'a file where the data directory should be');
      let printed = '';
      await expect(
        bootstrapAdministrator(app.services, {
          dataDir: blocked,
          panelUrl: 'https://panel.example.com/',
          out: { write: (text: string) => (printed += text) },
        }),
      ).rejects.toThrow();
      expect(printed).toBe('');
      expect(await app.services.users.count()).toBe(0);
    });
  });
});
