/**
 * The real command line (`aerie …`, a process of its own) against a fresh data directory: creating
 * a backup of a server's files (in either format, AERIE_BACKUP_FORMAT) and importing an existing
 * .tar.gz as an archive backup, with the JSON that scripts read, and refusals that say what is
 * wrong and leave nothing behind.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { extract as tarExtract } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { connect, type Db } from '../../src/db/connection.ts';
import { testDatabase } from '../support/databases.ts';
import { aerieArgv } from '../support/aerie-process.ts';
import { archiveEntries, backupOf, contents, sha256Of, tempDir, writeTree } from '../support/archives.ts';
import {
  BACKUP_FORMATS,
  formatEnv,
  snapshotTarGzFile,
  type BackupFormat,
} from '../support/backup-formats.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let data: string;
let work: string;
let db: Db;
let database: Awaited<ReturnType<typeof testDatabase>>;
let server: { uuid: string; identifier: string; volume: string };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function aerie(...args: string[]): Promise<Run> {
  return aerieWith({}, ...args);
}

/** `aerie <args>` with more environment: `AERIE_BACKUP_FORMAT`, say. */
function aerieWith(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      aerieArgv(args),
      {
        cwd: ROOT,
        env: {
          ...process.env,
          AERIE_DATA_DIR: data,
          DATABASE_URL: database.url,
          LOG_LEVEL: 'info',
          ...env,
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Exactly one JSON object on stdout, on one line, and nothing else. */
function record(run: Run): Record<string, unknown> {
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout.split('\n');
  expect(lines).toHaveLength(2);
  expect(lines[1]).toBe('');
  const parsed = JSON.parse(lines[0]!) as unknown;
  expect(parsed).toBeTypeOf('object');
  return parsed as Record<string, unknown>;
}

const backupRows = () => db.kysely.selectFrom('backups').selectAll().orderBy('created_at').execute();
const stored = (uuid: string, of = server) => path.join(data, 'backups', of.uuid, `${uuid}.tar.gz`);

beforeAll(async () => {
  data = await tempDir('aerie-cli-');
  database = await testDatabase(data);
  work = await tempDir('aerie-cli-work-');
  const user = record(
    await aerie(
      'user',
      'create',
      '--username',
      'alice',
      '--email',
      'alice@example.com',
      '--password',
      'correct horse battery',
      '--json',
    ),
  );
  expect(user).toMatchObject({ username: 'alice', email: 'alice@example.com' });
  server = record(
    await aerie('server', 'create', '--owner', 'alice', '--name', 'survival', '--json'),
  ) as typeof server;
  expect(Object.keys(server).sort()).toEqual(['identifier', 'uuid', 'volume']);
  expect(server.volume).toBe(path.join(data, 'volumes', server.uuid));
  expect((await stat(server.volume)).isDirectory()).toBe(true);
  db = connect(loadConfig({ DATABASE_URL: database.url }).database);
}, 60_000);

afterAll(async () => {
  await db?.destroy();
  await database?.drop();
  await rm(data, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

describe.each(BACKUP_FORMATS)('backup create, as a %s backup', (format: BackupFormat) => {
  // A server of its own: its backups directory holds this format's backup and nothing else.
  let server: { uuid: string; identifier: string; volume: string };
  beforeAll(async () => {
    server = record(
      await aerie('server', 'create', '--owner', 'alice', '--name', `survival ${format}`, '--json'),
    ) as typeof server;
  }, 60_000);

  it(
    "backs up the server's files, without its symlinks, and prints the record",
    { timeout: 60_000 },
    async () => {
      await writeTree(server.volume, {
        'server.properties': 'motd=cli\n',
        'world/level.dat': Buffer.from([0, 1, 2, 3, 255]),
        'world/region/r.0.0.mca': Buffer.alloc(70_000, 7),
        'plugins/': { dir: true, mode: 0o750 },
        'run.sh': { content: '#!/bin/sh\n', mode: 0o755 },
        etc: { symlink: '/etc' },
        'world/latest': { symlink: '../server.properties' },
      });
      // What the backup holds: the volume without its links.
      const expected = await contents(server.volume);
      delete expected.etc;
      delete expected['world/latest'];
      const files = Object.values(expected).filter((node) => node.type === 'file');

      const run = await aerieWith(
        formatEnv(format),
        'backup',
        'create',
        '--server',
        server.identifier,
        '--name',
        'nightly',
        '--json',
      );
      const created = record(run);
      expect(run.stderr).toBe('');
      expect(Object.keys(created).sort()).toEqual([
        'added_bytes',
        'bytes',
        'checksum',
        'files',
        'format',
        'name',
        'uuid',
      ]);
      expect(created.name).toBe('nightly');
      expect(created.format).toBe(format);
      expect(created.files).toBe(files.length);
      const uuid = String(created.uuid);
      expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

      const backups = path.join(data, 'backups', server.uuid);
      let file: string;
      if (format === 'archive') {
        // One archive: its checksum and size are the record's.
        file = stored(uuid, server);
        expect(created.checksum).toBe(`sha256:${await sha256Of(file)}`);
        expect(created.bytes).toBe((await stat(file)).size);
        expect(created.added_bytes).toBeNull();
        expect(await readdir(backups)).toEqual([`${uuid}.tar.gz`]); // no scratch files left
      } else {
        // A snapshot in the server's repository: the checksum is its record's, the size its files'.
        const snapshotRecord = path.join(backups, 'repository', 'snapshots', uuid);
        expect(created.checksum).toBe(`sha256:${await sha256Of(snapshotRecord)}`);
        expect(created.bytes).toBe(files.reduce((sum, node) => sum + node.size!, 0));
        expect(created.added_bytes).toBeGreaterThan(0);
        expect(await readdir(backups)).toEqual(['repository']);
        expect(await readdir(path.dirname(snapshotRecord))).toEqual([uuid]);
        const names = await readdir(path.join(backups, 'repository'), { recursive: true });
        expect(names.filter((name) => /\.(tmp|incoming|partial)$/.test(name))).toEqual([]); // no scratch files left
        // What it downloads as.
        file = await snapshotTarGzFile(
          path.join(data, 'backups'),
          server.uuid,
          uuid,
          path.join(work, `${uuid}.tar.gz`),
        );
      }

      const entries = await archiveEntries(file);
      expect(entries.filter((e) => e.startsWith('SymbolicLink:') || e.startsWith('Link:'))).toEqual([]);
      expect(entries.some((e) => /(^|:)(\.\/)?etc\/?$/.test(e) || e.endsWith('latest'))).toBe(false);

      // Unpacked, the archive is the volume without its links.
      const out = path.join(work, `unpacked-${format}`);
      await mkdir(out);
      await tarExtract({ file, cwd: out });
      expect(await contents(out)).toEqual(expected);

      const [row] = (await backupRows()).filter((r) => r.id === uuid);
      expect(row).toMatchObject({
        server_id: server.uuid,
        name: 'nightly',
        format,
        is_successful: 1,
        sha256: String(created.checksum).slice(7),
      });
      expect(Number(row?.bytes)).toBe(created.bytes);
      expect(Number(row?.files)).toBe(created.files);
      expect(row?.completed_at).not.toBeNull();
    },
  );
});

describe('backup create', () => {
  it('refuses an unknown server with a message, and prints no record', async () => {
    const run = await aerie('backup', 'create', '--server', 'ffffffff', '--name', 'x', '--json');
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/no server "ffffffff"/i);
  });
});

describe('backup import', () => {
  it(
    'stores a good archive as it is as an archive backup, and prints the record',
    { timeout: 60_000 },
    async () => {
      const good = await backupOf(
        { 'server.properties': 'motd=imported\n', 'world/level.dat': 'level' },
        work,
      );
      const before = (await backupRows()).length;
      const imported = record(
        await aerieWith(
          formatEnv('archive'),
          'backup',
          'import',
          '--server',
          server.uuid,
          '--name',
          'imported',
          '--file',
          good.archive,
          '--json',
        ),
      );
      expect(Object.keys(imported).sort()).toEqual([
        'added_bytes',
        'bytes',
        'checksum',
        'files',
        'format',
        'name',
        'uuid',
      ]);
      expect(imported).toMatchObject({
        name: 'imported',
        format: 'archive',
        files: 2,
        added_bytes: null,
        bytes: (await stat(good.archive)).size,
        checksum: `sha256:${await sha256Of(good.archive)}`,
      });
      const file = stored(String(imported.uuid));
      expect(await readFile(file)).toEqual(await readFile(good.archive));
      expect(await backupRows()).toHaveLength(before + 1);
      expect(await readFile(good.archive)).toBeTruthy(); // the source file is left in place
    },
  );

  it.each([
    ['a gzip stream cut short', (gz: Buffer) => gz.subarray(0, Math.floor(gz.length / 2))],
    [
      'a tar cut mid-file inside a whole gzip stream',
      (gz: Buffer) => {
        const tar = gunzipSync(gz);
        return gzipSync(tar.subarray(0, tar.length - 1024 - 20_000));
      },
    ],
    ['a file that is no gzip at all', () => Buffer.from('this is not an archive\n'.repeat(100))],
    [
      'a header with a bad checksum',
      (gz: Buffer) => {
        const tar = Buffer.from(gunzipSync(gz));
        tar[148] = tar[148] === 0x30 ? 0x31 : 0x30;
        return gzipSync(tar);
      },
    ],
  ])(
    'refuses %s: non-zero exit, a clear message, no record, no file',
    { timeout: 60_000 },
    async (_name, damage) => {
      const good = await backupOf({ 'a.txt': 'a', 'big.bin': Buffer.alloc(60_000, 1) }, work);
      const bad = path.join(work, `bad-${Date.now()}.tar.gz`);
      await writeFile(bad, damage(await readFile(good.archive)));
      const rowsBefore = await backupRows();
      const filesBefore = await readdir(path.join(data, 'backups', server.uuid));

      const run = await aerie(
        'backup',
        'import',
        '--server',
        server.uuid,
        '--name',
        'broken',
        '--file',
        bad,
        '--json',
      );
      expect(run.code).not.toBe(0);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^aerie: .*(damaged|corrupt|truncated|not a|invalid)/im);
      expect(run.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(await backupRows()).toEqual(rowsBefore);
      expect(await readdir(path.join(data, 'backups', server.uuid))).toEqual(filesBefore);
    },
  );

  it('refuses a file that does not exist', async () => {
    const run = await aerie(
      'backup',
      'import',
      '--server',
      server.uuid,
      '--name',
      'nothing',
      '--file',
      path.join(work, 'nope.tar.gz'),
      '--json',
    );
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^aerie: .*(does not exist|no such file|not found)/im);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
