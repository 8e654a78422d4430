/**
 * Looking inside a .tar.gz archive backup kept in an S3-compatible store (a real one: s3rver),
 * and restoring part of it: the root and a subdirectory listed (from a catalog made by one read
 * of the object), one file downloaded through its signed link, a directory as a .tar.gz of
 * exactly what it holds, and one path restored onto a volume that has moved on, the rest of the
 * volume left as it is.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contents, tempDir, writeTree } from '../support/archives.ts';
import { isStored, storedKey } from '../support/backup-formats.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { postRestore, restoreJobsOf } from '../support/restores.ts';
import { startS3, type TestS3 } from '../support/s3.ts';
import { backupsUrl, backupThroughApi, listeningUrl, type BackupAttributes } from '../support/snapshots.ts';

const KIB = 1024;

let s3: TestS3;
let app: TestApp;
let token: string;
let server: { id: string; identifier: string; volume: string };
let work: string;

beforeAll(async () => {
  s3 = await startS3();
  app = await startTestApp({
    env: { ...s3.env(), AERIE_BACKUP_FORMAT: 'archive', AERIE_RESTORE_UNDO_BACKUP: 'false' },
  });
  const owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  server = await createServer(app, owner);
  work = await tempDir('aerie-browse-archive-s3-');
});

afterAll(async () => {
  await app?.close();
  await s3?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

interface FileList {
  data: { attributes: { name: string; size: number; is_file: boolean; mode_bits: string } }[];
  meta: { directory: string; pagination: { total: number } };
}

function list(uuid: string, directory: string) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/list?directory=${encodeURIComponent(directory)}`,
    headers: bearer(token),
  });
}

/** Asks for one path's link, then fetches it over real HTTP. */
async function download(uuid: string, file: string) {
  const link = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/download?file=${encodeURIComponent(file)}`,
    headers: bearer(token),
  });
  expect(link.statusCode, link.body).toBe(200);
  const signed = new URL(link.json<{ attributes: { url: string } }>().attributes.url, 'http://aerie.invalid');
  const res = await fetch(`${await listeningUrl(app)}${signed.pathname}${signed.search}`);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe('a .tar.gz archive backup in an S3-compatible store, browsed and partly restored', () => {
  let backup: BackupAttributes;
  const level = randomBytes(200 * KIB);
  const region = randomBytes(96 * KIB);

  beforeAll(async () => {
    await writeTree(server.volume, {
      'server.properties': 'motd=s3 archive\n',
      'world/level.dat': level,
      'world/region/r.0.0.mca': region,
      'world/region/r.0.1.mca': 'second region',
      'config/': { dir: true, mode: 0o750 },
      'config/app.yml': { content: 'key: value\n', mode: 0o640 },
      'logs/latest.log': 'started\n',
    });
    backup = await backupThroughApi(app, token, server, { name: 's3 archive' });
    expect(backup.format).toBe('archive');
    // In the bucket, not on local disk.
    expect(await s3.exists(storedKey(server.id, backup.uuid, 'archive'))).toBe(true);
    expect(isStored(app, server.id, backup.uuid, 'archive')).toBe(false);
  });

  it('lists the root and a subdirectory', async () => {
    const root = await list(backup.uuid, '/');
    expect(root.statusCode, root.body).toBe(200);
    expect(root.json<FileList>().data.map((item) => [item.attributes.name, item.attributes.is_file])).toEqual(
      [
        ['config', false],
        ['logs', false],
        ['world', false],
        ['server.properties', true],
      ],
    );
    expect(root.json<FileList>().data[0]!.attributes.mode_bits).toBe('750');

    const world = await list(backup.uuid, '/world/');
    expect(world.statusCode, world.body).toBe(200);
    const body = world.json<FileList>();
    expect(body.meta.directory).toBe('/world');
    expect(body.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
      ['region', 0],
      ['level.dat', level.length],
    ]);
    const regions = (await list(backup.uuid, '/world/region')).json<FileList>();
    expect(regions.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
      ['r.0.0.mca', region.length],
      ['r.0.1.mca', 'second region'.length],
    ]);
    expect((await list(backup.uuid, '/nope')).statusCode).toBe(404);
  });

  it('downloads one file through its signed link, byte for byte', async () => {
    const file = await download(backup.uuid, '/world/level.dat');
    expect(file.status).toBe(200);
    expect(file.body.equals(level)).toBe(true);
    expect(file.headers.get('content-length')).toBe(String(level.length));
    expect(file.headers.get('content-disposition')).toBe('attachment; filename="level.dat"');
  });

  it('downloads a directory as a .tar.gz that GNU tar lists as exactly its contents', async () => {
    const dir = await download(backup.uuid, '/world');
    expect(dir.status).toBe(200);
    expect(dir.headers.get('content-type')).toBe('application/gzip');
    const archive = path.join(work, 'world.tar.gz');
    await writeFile(archive, dir.body);
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).trim().split('\n').sort();
    expect(listed).toEqual(['level.dat', 'region/', 'region/r.0.0.mca', 'region/r.0.1.mca']);
    const out = path.join(work, 'world-out');
    execFileSync('mkdir', ['-p', out]);
    execFileSync('tar', ['-xzf', archive, '-C', out]);
    expect((await readFile(path.join(out, 'region/r.0.0.mca'))).equals(region)).toBe(true);
    expect((await readFile(path.join(out, 'level.dat'))).equals(level)).toBe(true);
  });

  it('restores one path alone onto a volume that has moved on, leaving the rest as it is', async () => {
    await writeFile(path.join(server.volume, 'world/region/r.0.0.mca'), 'replaced since');
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=moved on\n');
    await writeFile(path.join(server.volume, 'world/added.txt'), 'added since');
    await rm(path.join(server.volume, 'config'), { recursive: true });
    const before = await contents(server.volume);

    const res = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/world/region/r.0.0.mca'],
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const jobs = await restoreJobsOf(app, server.id);
    expect(jobs.map((job) => job.state)).toEqual(['succeeded']);
    expect(jobs[0]!.payload.files).toEqual(['world/region/r.0.0.mca']);

    expect((await readFile(path.join(server.volume, 'world/region/r.0.0.mca'))).equals(region)).toBe(true);
    const after = await contents(server.volume);
    for (const [rel, node] of Object.entries(before)) {
      if (rel === 'world/region/r.0.0.mca') continue;
      expect(after[rel], rel).toEqual(node);
    }
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    // Not brought back: only the chosen path was.
    expect(after.config).toBeUndefined();
    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=moved on\n');
  });
});
