/**
 * Looking inside a backup (a snapshot, and a .tar.gz archive made before snapshots) and restoring
 * only part of it, through the API, on a real volume: a directory listed as the file manager lists one, one file downloaded through its
 * signed link (a directory as a .tar.gz), and a restore of chosen paths that brings them back and
 * leaves the rest of the volume as it is (with truncate, a chosen directory ends exactly as in the
 * backup).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../src/users/user.ts';
import { contents, writeTree } from '../support/archives.ts';
import { createServer, drainJobs, type TestApp } from '../support/harness.ts';
import { activityOfServer, postRestore, restoreJobsOf } from '../support/restores.ts';
import {
  backupsUrl,
  backupThroughApi,
  listeningUrl,
  openSnapshotSuite,
  sibling,
  type BackupAttributes,
  type SnapshotSuite,
} from '../support/snapshots.ts';

const KIB = 1024;

let app: TestApp;
let owner: User;
let token: string;
let work: string;
let suite: SnapshotSuite | undefined;

beforeAll(async () => {
  suite = await openSnapshotSuite('aerie-browse-');
  ({ app, owner, token, work } = suite);
});

afterAll(async () => suite?.close());

interface FileObject {
  object: string;
  attributes: {
    name: string;
    mode: string;
    mode_bits: string;
    size: number;
    is_file: boolean;
    is_symlink: boolean;
    mimetype: string;
    created_at: string;
    modified_at: string;
  };
}

interface FileList {
  object: string;
  data: FileObject[];
  meta: {
    directory: string;
    pagination: { total: number; count: number; per_page: number; total_pages: number };
  };
}

const bearer = () => ({ authorization: `Bearer ${token}` });

function listFiles(server: { identifier: string }, uuid: string, query: string) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/list${query}`,
    headers: bearer(),
  });
}

/** Asks for one file's link, then fetches it over real HTTP. */
async function downloadFile(server: { identifier: string }, uuid: string, file: string) {
  const link = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/download?file=${encodeURIComponent(file)}`,
    headers: bearer(),
  });
  expect(link.statusCode, link.body).toBe(200);
  const signed = new URL(link.json<{ attributes: { url: string } }>().attributes.url);
  const res = await fetch(`${await listeningUrl(app)}${signed.pathname}${signed.search}`);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe('a snapshot backup, browsed and partly restored', () => {
  let server: Awaited<ReturnType<typeof createServer>>;
  let backup: BackupAttributes;
  const region = randomBytes(300 * KIB);

  beforeAll(async () => {
    server = await createServer(app, owner);
    await writeTree(server.volume, {
      'server.properties': 'motd=browse\n',
      'world/level.dat': randomBytes(10 * KIB),
      'world/region/r.0.0.mca': region,
      'plugins/': { dir: true, mode: 0o750 },
      'plugins/essentials.jar': randomBytes(20 * KIB),
      'plugins/config.yml': { content: 'key: value\n', mode: 0o640 },
      'run.sh': { content: '#!/bin/sh\nexec java\n', mode: 0o755 },
    });
    backup = await backupThroughApi(app, token, server, { name: 'browsed' });
  });

  it('lists the root and a subdirectory as the file manager does: directories first, then files', async () => {
    const root = await listFiles(server, backup.uuid, '');
    expect(root.statusCode, root.body).toBe(200);
    const body = root.json<FileList>();
    expect(body.object).toBe('list');
    expect(body.data.map((item) => item.attributes.name)).toEqual([
      'plugins',
      'world',
      'run.sh',
      'server.properties',
    ]);
    expect(body.meta.directory).toBe('/');
    expect(body.meta.pagination).toMatchObject({ total: 4, count: 4, total_pages: 1 });
    const plugins = body.data[0]!;
    expect(plugins).toMatchObject({
      object: 'file_object',
      attributes: {
        mode: 'drwxr-x---',
        mode_bits: '750',
        is_file: false,
        is_symlink: false,
        mimetype: 'inode/directory',
      },
    });
    const run = body.data[2]!.attributes;
    expect(run).toMatchObject({ mode: '-rwxr-xr-x', mode_bits: '755', size: 20, is_file: true });
    expect(run.modified_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);

    const sub = (await listFiles(server, backup.uuid, '?directory=%2Fworld%2Fregion%2F')).json<FileList>();
    expect(sub.meta.directory).toBe('/world/region');
    expect(sub.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
      ['r.0.0.mca', region.length],
    ]);
  });

  it('answers 404 for a directory the backup lacks, and 422 for a path that escapes', async () => {
    expect((await listFiles(server, backup.uuid, '?directory=/nope')).statusCode).toBe(404);
    for (const bad of ['/../etc', 'world/../../x', '/a%00b']) {
      const res = await listFiles(server, backup.uuid, `?directory=${bad}`);
      expect(res.statusCode, bad).toBe(422);
      expect(res.json<{ errors: { code: string }[] }>().errors[0]!.code).toBe('ValidationException');
    }
  });

  it('downloads one file through its signed link, and a directory as a .tar.gz of it', async () => {
    const file = await downloadFile(server, backup.uuid, '/world/region/r.0.0.mca');
    expect(file.status).toBe(200);
    expect(file.body.equals(region)).toBe(true);
    expect(file.headers.get('content-disposition')).toBe('attachment; filename="r.0.0.mca"');

    const dir = await downloadFile(server, backup.uuid, '/plugins');
    expect(dir.status).toBe(200);
    expect(dir.headers.get('content-type')).toBe('application/gzip');
    const archive = path.join(work, 'plugins.tar.gz');
    await writeFile(archive, dir.body);
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).trim().split('\n').sort();
    expect(listed.map((name) => name.replace(/^\.\//, ''))).toEqual(
      expect.arrayContaining(['config.yml', 'essentials.jar']),
    );
  });

  it('restores only the chosen paths, leaving the rest of the volume as it is', async () => {
    // A file changed, a directory deleted, another file changed; the first two are restored.
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=changed\n');
    await rm(path.join(server.volume, 'plugins'), { recursive: true });
    await writeFile(path.join(server.volume, 'run.sh'), '#!/bin/sh\necho changed\n');
    const before = await contents(server.volume);

    const res = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/server.properties', 'plugins'],
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const jobs = await restoreJobsOf(app, server.id);
    expect(jobs[jobs.length - 1]!.state).toBe('succeeded');
    expect(jobs[jobs.length - 1]!.payload.files).toEqual(['server.properties', 'plugins']);

    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=browse\n');
    expect((await stat(path.join(server.volume, 'plugins'))).mode & 0o777).toBe(0o750);
    expect(await readFile(path.join(server.volume, 'plugins/config.yml'), 'utf8')).toBe('key: value\n');
    expect(await readFile(path.join(server.volume, 'run.sh'), 'utf8')).toBe('#!/bin/sh\necho changed\n');
    const after = await contents(server.volume);
    for (const [rel, node] of Object.entries(before)) {
      if (rel === 'server.properties' || rel === '' || rel.startsWith('plugins')) continue;
      expect(after[rel], rel).toEqual(node);
    }
    const [asked] = (await activityOfServer(app, server.id)).filter(
      (entry) => entry.event === 'server:backup.restore',
    );
    expect(asked!.properties.files).toEqual(['/server.properties', '/plugins']);
  });

  it('with truncate, makes a chosen directory exactly the backup’s, and touches nothing else', async () => {
    await writeFile(path.join(server.volume, 'world/region/r.9.9.mca'), 'added since');
    await writeFile(path.join(server.volume, 'world/added.txt'), 'outside the chosen path');
    await mkdir(path.join(server.volume, 'logs'), { recursive: true });
    await writeFile(path.join(server.volume, 'logs/latest.log'), 'kept');

    const res = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/world/region'],
      truncate: true,
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);

    const after = await contents(server.volume);
    expect(after['world/region/r.9.9.mca']).toBeUndefined();
    expect(after['world/region/r.0.0.mca']?.size).toBe(region.length);
    expect(await readFile(path.join(server.volume, 'world/added.txt'), 'utf8')).toBe(
      'outside the chosen path',
    );
    expect(await readFile(path.join(server.volume, 'logs/latest.log'), 'utf8')).toBe('kept');
  });

  it('refuses a path the backup lacks (404) or one that escapes (422), queuing nothing', async () => {
    const jobsBefore = (await restoreJobsOf(app, server.id)).length;
    const missing = await postRestore(app, token, server.identifier, backup.uuid, { files: ['/nope'] });
    expect(missing.statusCode, missing.body).toBe(404);
    const escaping = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/world/../../etc'],
    });
    expect(escaping.statusCode, escaping.body).toBe(422);
    expect(await restoreJobsOf(app, server.id)).toHaveLength(jobsBefore);
  });
});

describe('a .tar.gz archive backup, browsed and partly restored', () => {
  let server: Awaited<ReturnType<typeof createServer>>;
  let backup: BackupAttributes;
  const level = randomBytes(50 * KIB);

  beforeAll(async () => {
    server = await createServer(app, owner);
    await writeTree(server.volume, {
      'server.properties': 'motd=archive\n',
      'world/level.dat': level,
      'world/region/r.0.0.mca': randomBytes(40 * KIB),
      'logs/latest.log': 'started\n',
    });
    const archives = await sibling(app, { AERIE_BACKUP_FORMAT: 'archive' });
    try {
      backup = await backupThroughApi(archives, token, server, { name: 'old archive' });
    } finally {
      await archives.close();
    }
    expect(backup.format).toBe('archive');
  });

  it('lists its directories from one read of the archive, kept as its catalog', async () => {
    const root = (await listFiles(server, backup.uuid, '')).json<FileList>();
    expect(root.data.map((item) => [item.attributes.name, item.attributes.is_file])).toEqual([
      ['logs', false],
      ['world', false],
      ['server.properties', true],
    ]);
    const world = (await listFiles(server, backup.uuid, '?directory=/world')).json<FileList>();
    expect(world.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
      ['region', 0],
      ['level.dat', level.length],
    ]);
  });

  it('downloads one file, and a directory as a .tar.gz of it', async () => {
    const file = await downloadFile(server, backup.uuid, '/world/level.dat');
    expect(file.status).toBe(200);
    expect(file.body.equals(level)).toBe(true);
    const dir = await downloadFile(server, backup.uuid, '/world');
    const archive = path.join(work, 'world.tar.gz');
    await writeFile(archive, dir.body);
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).trim().split('\n').sort();
    expect(listed).toEqual(['level.dat', 'region/', 'region/r.0.0.mca']);
  });

  it('restores only the chosen paths', async () => {
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=changed\n');
    await writeFile(path.join(server.volume, 'logs/latest.log'), 'changed\n');
    const res = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/server.properties'],
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=archive\n');
    expect(await readFile(path.join(server.volume, 'logs/latest.log'), 'utf8')).toBe('changed\n');
  });
});
