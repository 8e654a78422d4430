/**
 * The compiled build, as production runs it: `node bin/aerie.js …` on `dist/` (every other test
 * runs the sources through tsx). The build is made first when `dist/` is missing or older than
 * the sources, so this tests the code as it is now.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryPoints } from '../../scripts/bundle.ts';
import { ROOT } from '../support/aerie-process.ts';
import { tempDir } from '../support/archives.ts';
import { freePort, untilListening } from '../support/wait.ts';
import { testDatabase } from '../support/databases.ts';

const BIN = path.join(ROOT, 'bin/aerie.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The newest modification time of the files the build is made from. */
async function newestSource(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    newest = Math.max(newest, (await stat(path.join(entry.parentPath, entry.name))).mtimeMs);
  }
  for (const config of ['tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.ts'])
    newest = Math.max(newest, (await stat(path.join(ROOT, config))).mtimeMs);
  return newest;
}

async function buildIfStale(): Promise<void> {
  const built = await stat(path.join(ROOT, 'dist/main.js')).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  if (built > (await newestSource(path.join(ROOT, 'src')))) return;
  const build = await run('npm', ['run', 'build']);
  expect(build.code, build.stdout + build.stderr).toBe(0);
}

describe('the compiled build (bin/aerie.js on dist/)', () => {
  let data: string;
  let env: NodeJS.ProcessEnv;
  let database: Awaited<ReturnType<typeof testDatabase>> | undefined;
  const aerie = (...args: string[]) => run(process.execPath, [BIN, ...args], env);

  beforeAll(async () => {
    await buildIfStale();
    data = await tempDir('aerie-compiled-');
    database = await testDatabase(data);
    env = {
      ...process.env,
      AERIE_DATA_DIR: data,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'silent',
    };
  }, 180_000);
  afterAll(async () => {
    await rm(data, { recursive: true, force: true });
    await database?.drop();
  });

  it('makes a snapshot backup and extracts it, in worker threads running the compiled modules', async () => {
    const user = await aerie('user', 'create', '--username', 'ops', '--email', 'ops@example.com');
    expect(user.code, user.stderr).toBe(0);
    const created = await aerie('server', 'create', '--owner', 'ops', '--name', 'world', '--json');
    expect(created.code, created.stderr).toBe(0);
    const server = JSON.parse(created.stdout) as { uuid: string; volume: string };
    await mkdir(path.join(server.volume, 'config'));
    await writeFile(path.join(server.volume, 'config/server.properties'), 'motd=hello\n');
    const log = '[12:00:00] [Server thread/INFO]: Done (2.1s)! For help, type "help"\n'.repeat(3000);
    await writeFile(path.join(server.volume, 'latest.log'), log);

    const backup = await aerie('backup', 'create', '--server', server.uuid, '--name', 'first', '--json');
    expect(backup.code, backup.stderr).toBe(0);
    const record = JSON.parse(backup.stdout) as {
      uuid: string;
      bytes: number;
      format: string;
      added_bytes: number;
    };
    expect(record).toMatchObject({ format: 'snapshot', bytes: 'motd=hello\n'.length + log.length });
    expect(record.added_bytes).toBeLessThan(log.length / 10); // the log went through zstd
    await stat(path.join(data, 'backups', server.uuid, 'repository', 'snapshots', record.uuid));

    // Chunked, compressed (its own thread), read back and checked (the extract's thread).
    const to = path.join(data, 'extracted');
    const extracted = await aerie(
      'backup',
      'extract',
      '--server',
      server.uuid,
      '--backup',
      record.uuid,
      '--to',
      to,
    );
    expect(extracted.code, extracted.stderr).toBe(0);
    expect(await readFile(path.join(to, 'config/server.properties'), 'utf8')).toBe('motd=hello\n');
    expect(await readFile(path.join(to, 'latest.log'), 'utf8')).toBe(log);
  });

  it('serves HTTP: answers a request made with a key created on the command line', async () => {
    const key = await aerie('key', 'create', '--user', 'ops', '--json');
    expect(key.code, key.stderr).toBe(0);
    const { token } = JSON.parse(key.stdout) as { token: string };
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port)], {
      cwd: ROOT,
      env,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await untilListening(port);
      const res = await fetch(`http://127.0.0.1:${port}/api/client/account`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { attributes: { username: string } }).attributes.username).toBe('ops');
      // The panel is found at dist/web from the bundled modules too, whatever their depth.
      const panel = await fetch(`http://127.0.0.1:${port}/`);
      expect(panel.status).toBe(200);
      expect(await panel.text()).toContain('<div id="root">');
      const version = await aerie('--version');
      const manifest = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(version.stdout.trim()).toBe(manifest.version);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it("starts a command that serves nothing without Node's HTTP modules or ICU's collation", async () => {
    // Importing node:http as a module loads Node's fetch implementation (20 ms of start-up);
    // localeCompare loads ICU's collation data (17 ms).
    const probe = path.join(data, 'builtins.cjs');
    const list = path.join(data, 'builtins.json');
    await writeFile(
      probe,
      `let compared = 0;
       const localeCompare = String.prototype.localeCompare;
       String.prototype.localeCompare = function (...args) { compared += 1; return localeCompare.apply(this, args); };
       process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(list)},
         JSON.stringify({ compared, modules: process.moduleLoadList })));`,
    );
    // Once on a new database, once on one up to date.
    for (let attempt = 0; attempt < 2; attempt++) {
      const migrate = await run(process.execPath, ['--require', probe, BIN, 'migrate'], env);
      expect(migrate.code, migrate.stderr).toBe(0);
      const { compared, modules } = JSON.parse(await readFile(list, 'utf8')) as {
        compared: number;
        modules: string[];
      };
      expect(modules).toContain('NativeModule fs'); // the list is what it should be
      for (const unused of ['NativeModule http', 'NativeModule internal/deps/undici/undici'])
        expect(modules).not.toContain(unused);
      expect(compared).toBe(0);
    }
  });

  it('has, flat in dist/, every module the code starts a thread on by name', async () => {
    const built = new Set(await readdir(path.join(ROOT, 'dist')));
    const threads = entryPoints().filter((entry) => !entry.endsWith('main.ts'));
    expect(threads.map((entry) => path.basename(entry))).toEqual(
      expect.arrayContaining([
        'backup-archive.thread.ts',
        'stage-restore.thread.ts',
        'snapshot-backup-work.ts',
      ]),
    );
    for (const entry of threads) expect(built, entry).toContain(path.basename(entry).replace(/\.ts$/, '.js'));
  });

  it('says to run the build, without a stack trace, when dist/ is missing', async () => {
    const elsewhere = await tempDir('aerie-no-dist-');
    try {
      await mkdir(path.join(elsewhere, 'bin'));
      await copyFile(BIN, path.join(elsewhere, 'bin/aerie.js'));
      await copyFile(path.join(ROOT, 'package.json'), path.join(elsewhere, 'package.json'));
      const result = await run(process.execPath, [path.join(elsewhere, 'bin/aerie.js'), 'migrate']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/npm run build/);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});
