/**
 * Browsing a backup whose stored data is hostile, through the API: snapshots whose trees or
 * record were written by hand (unusable names, a subtree the index does not know, a record that
 * is not the backup's), and .tar.gz archives crafted as an attacker would (`..`, absolute names,
 * a symlink with a file "under" it, bytes that are not the backup's). A listing of a backup that
 * cannot be browsed answers a clear error, leaves no catalog (whole or half) behind, and keeps
 * refusing; a listing of an archive whose odd entries are safe to map shows them only as a
 * restore would make them (links never followed); downloads and partial restores of such
 * backups either work inside the volume or are refused, and nothing is ever written outside it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backup } from '../../src/backups/backup.ts';
import { blobId, snapshotKey } from '../../src/storage/repository/repository.ts';
import type { User } from '../../src/users/user.ts';
import { snapshot, writeTree, type NodeInfo } from '../support/archives.ts';
import { createServer, drainJobs, type TestApp } from '../support/harness.ts';
import { rawTarGz, type RawEntry as TarEntry } from '../support/raw-tar.ts';
import {
  plantArchive,
  postRestore,
  restoreJobsOf,
  restoreLeftovers,
  storedArchive,
} from '../support/restores.ts';
import {
  backupsUrl,
  dirEntry,
  fileEntry,
  insertSnapshotBackup,
  listeningUrl,
  openSnapshotSuite,
  plantSnapshot,
  repositoryDir,
  type Planted,
  type RawEntry,
  type SnapshotForge,
  type SnapshotSuite,
} from '../support/snapshots.ts';

let app: TestApp;
let owner: User;
let token: string;
let suite: SnapshotSuite | undefined;

beforeAll(async () => {
  suite = await openSnapshotSuite('aerie-browse-hostile-');
  ({ app, owner, token } = suite);
});

afterAll(async () => suite?.close());

const bearer = () => ({ authorization: `Bearer ${token}` });

interface FileList {
  data: { attributes: { name: string; size: number; is_file: boolean; is_symlink: boolean; mode: string } }[];
  meta: { directory: string };
}

interface ErrorBody {
  errors: { code: string; status: string; detail: string }[];
}

function listFiles(server: { identifier: string }, uuid: string, directory = '/') {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/list?directory=${encodeURIComponent(directory)}`,
    headers: bearer(),
  });
}

function downloadLink(server: { identifier: string }, uuid: string, file: string) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/download?file=${encodeURIComponent(file)}`,
    headers: bearer(),
  });
}

/** Fetches a signed link (from downloadLink) over real HTTP; a body cut short is `cut: true`. */
async function fetchLink(link: string): Promise<{ status: number; body: Buffer; cut: boolean }> {
  const signed = new URL(link, 'http://aerie.invalid');
  const res = await fetch(`${await listeningUrl(app)}${signed.pathname}${signed.search}`);
  try {
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), cut: false };
  } catch {
    return { status: res.status, body: Buffer.alloc(0), cut: true };
  }
}

function catalogsDir(): string {
  return path.join(app.config.dataDir, 'cache', 'catalogs');
}

/** What the catalogs directory holds for this backup: its catalog, or scratch left by a build. */
async function catalogTraces(backupId: string): Promise<string[]> {
  const names = await readdir(catalogsDir()).catch(() => [] as string[]);
  return names.filter((name) => name.startsWith(backupId));
}

/** The error a refused request answered, as `status code: detail`. */
function refusal(res: { statusCode: number; body: string }): string {
  const body = JSON.parse(res.body) as ErrorBody;
  expect(body.errors, res.body).toHaveLength(1);
  return `${res.statusCode} ${body.errors[0]!.code}: ${body.errors[0]!.detail}`;
}

/** What every volume holds before anything is tried on it. */
const LIVE = {
  'server.properties': 'motd=live\n',
  'world/level.dat': 'live level',
  'a-first.txt': 'live copy',
  'ok.txt': 'live ok',
};

/**
 * The volumes directory (the parent of every volume), `volume` itself left out: what must be
 * the same after anything is tried on that volume.
 */
async function around(volume: string): Promise<Record<string, NodeInfo>> {
  const parent = path.dirname(volume);
  const own = path.basename(volume);
  const all = await snapshot(parent);
  // The restore's own trash (emptied in the background), not something a restore leaves.
  for (const key of Object.keys(all)) if (key === '.trash' || key.startsWith('.trash/')) delete all[key];
  for (const key of Object.keys(all)) if (key === own || key.startsWith(`${own}/`)) delete all[key];
  delete all[''];
  return all;
}

/** A root tree with a harmless file first, then `entries`. */
async function rootWith(forge: SnapshotForge, entries: RawEntry[]): Promise<string> {
  return forge.tree([await forge.file('a-first.txt', Buffer.from('harmless')), ...entries]);
}

/** A root tree with a harmless file, and `entries` inside directory `world`. */
async function nestedIn(forge: SnapshotForge, entries: RawEntry[]): Promise<string> {
  return rootWith(forge, [dirEntry('world', await forge.tree(entries))]);
}

interface SnapshotCase {
  build: (forge: SnapshotForge) => Promise<string>;
  after?: (target: { serverId: string; planted: Planted }) => Promise<void>;
  /** The answer to a listing of `/`: status code, error code, and what the detail says. */
  status: number;
  detail: RegExp;
}

const UNUSABLE =
  /^This backup cannot be browsed: the backup's stored data is damaged: tree [0-9a-f]{64} is damaged: an entry has an unusable name\.$/;

const SNAPSHOT_CASES: Record<string, SnapshotCase> = {
  'an entry named ..': {
    build: async (forge) =>
      rootWith(forge, [
        dirEntry('..', await forge.tree([await forge.file('escape.txt', Buffer.from('out'))])),
      ]),
    status: 400,
    detail: UNUSABLE,
  },
  'an entry whose name holds /': {
    build: async (forge) => rootWith(forge, [await forge.file('../../escape.txt', Buffer.from('out'))]),
    status: 400,
    detail: UNUSABLE,
  },
  'an entry whose name holds NUL': {
    build: async (forge) => nestedIn(forge, [await forge.file('escape\0.txt', Buffer.from('nul'))]),
    status: 400,
    detail: UNUSABLE,
  },
  'an entry whose name is 256 bytes': {
    build: async (forge) => nestedIn(forge, [await forge.file('n'.repeat(256), Buffer.from('long'))]),
    status: 400,
    detail: UNUSABLE,
  },
  'a directory naming a tree the index does not know': {
    build: async (forge) =>
      nestedIn(forge, [dirEntry('ghost', blobId(Buffer.from(`never stored ${Math.random()}`)))]),
    status: 400,
    detail:
      /^This backup cannot be browsed: the backup's stored data is damaged: blob [0-9a-f]{64} is in no pack of the index\.$/,
  },
  'a snapshot record whose SHA-256 is not the backup checksum': {
    build: async (forge) => rootWith(forge, [await forge.file('swapped.txt', Buffer.from('not the backup'))]),
    after: async ({ planted }) => {
      await app.db.kysely
        .updateTable('backups')
        .set({ sha256: blobId(Buffer.from('the record the backup was made with')) })
        .where('id', '=', planted.backupId)
        .execute();
    },
    status: 400,
    detail: /^This backup cannot be browsed: the backup does not match its checksum\.$/,
  },
  'a missing snapshot record': {
    build: async (forge) => rootWith(forge, []),
    after: async ({ serverId, planted }) => {
      await rm(path.join(repositoryDir(app, serverId), ...snapshotKey(planted.backupId).split('/')));
    },
    status: 404,
    detail: /^This backup is missing from storage\.$/,
  },
};

describe('a hostile snapshot, browsed', () => {
  for (const [name, hostile] of Object.entries(SNAPSHOT_CASES)) {
    it(`is refused, leaves no catalog, and stays refused: ${name}`, { timeout: 60_000 }, async () => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, LIVE);
      const planted = await plantSnapshot(app, server.id, hostile.build);
      await insertSnapshotBackup(app, server.id, planted);
      await hostile.after?.({ serverId: server.id, planted });
      const volume = await snapshot(server.volume, { mtimes: true });
      const outside = await around(server.volume);

      const code = hostile.status === 404 ? 'NotFoundHttpException' : 'DisplayException';
      for (let attempt = 0; attempt < 2; attempt++) {
        const res = await listFiles(server, planted.backupId, '/');
        expect(res.statusCode, res.body).toBe(hostile.status);
        const error = res.json<ErrorBody>().errors[0]!;
        expect(error.code).toBe(code);
        expect(error.detail).toMatch(hostile.detail);
        expect(await catalogTraces(planted.backupId)).toEqual([]);
      }

      // A link to a file of it, and a partial restore of it, are refused alike (nothing queued).
      const link = await downloadLink(server, planted.backupId, '/a-first.txt');
      expect(link.statusCode, link.body).toBe(hostile.status);
      expect(link.json<ErrorBody>().errors[0]!.detail).toMatch(hostile.detail);
      const restore = await postRestore(app, token, server.identifier, planted.backupId, {
        files: ['/a-first.txt'],
        undo_backup: false,
      });
      expect(restore.statusCode, restore.body).toBe(hostile.status);
      expect(restore.json<ErrorBody>().errors[0]!.detail).toMatch(hostile.detail);
      expect(await restoreJobsOf(app, server.id)).toEqual([]);
      await drainJobs(app);

      expect(await catalogTraces(planted.backupId)).toEqual([]);
      expect(await snapshot(server.volume, { mtimes: true })).toEqual(volume);
      expect(await around(server.volume)).toEqual(outside);
    });
  }

  it('lists a file whose chunk the index does not know (a listing reads trees only), but will not download it', async () => {
    const server = await createServer(app, owner);
    const planted = await plantSnapshot(app, server.id, async (forge) =>
      nestedIn(forge, [fileEntry('ghost.bin', 10, [blobId(Buffer.from(`never stored ${Math.random()}`))])]),
    );
    await insertSnapshotBackup(app, server.id, planted);
    const res = await listFiles(server, planted.backupId, '/world');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<FileList>().data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
      ['ghost.bin', 10],
    ]);
    expect(await catalogTraces(planted.backupId)).toEqual([planted.backupId]);

    // The harmless file beside it downloads; the ghost never gives 10 bytes as if whole.
    const good = await downloadLink(server, planted.backupId, '/a-first.txt');
    expect(good.statusCode, good.body).toBe(200);
    const harmless = await fetchLink(good.json<{ attributes: { url: string } }>().attributes.url);
    expect(harmless.status).toBe(200);
    expect(harmless.body.toString()).toBe('harmless');
    const ghost = await downloadLink(server, planted.backupId, '/world/ghost.bin');
    expect(ghost.statusCode, ghost.body).toBe(200);
    const fetched = await fetchLink(ghost.json<{ attributes: { url: string } }>().attributes.url);
    expect(fetched.status !== 200 || fetched.cut || fetched.body.length !== 10).toBe(true);
  });
});

const ESCAPING: TarEntry[] = [
  { path: 'ok.txt', content: 'fine' },
  { path: '../evil', content: 'escaped' },
];

/** Odd entries a restore maps safely: an absolute name, a link out, and a file "under" the link. */
const ODD: TarEntry[] = [
  { path: 'ok.txt', content: 'fine' },
  { path: '/etc/x', content: 'absolute' },
  { path: 'link', type: '2', linkname: '/etc' },
  { path: 'link/passwd', content: 'not the real passwd\n' },
];

describe('a hostile .tar.gz archive backup, browsed', () => {
  it('with an entry `../evil`: refused with a clear error, no catalog, no download, no partial restore', async () => {
    const server = await createServer(app, owner);
    await writeTree(server.volume, LIVE);
    const backup = await plantArchive(app, server.id, rawTarGz(ESCAPING));
    const volume = await snapshot(server.volume, { mtimes: true });
    const outside = await around(server.volume);

    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await listFiles(server, backup.id, '/');
      expect(refusal(res)).toBe(
        '400 DisplayException: This backup cannot be browsed: entry path ../evil leaves the volume.',
      );
      expect(await catalogTraces(backup.id)).toEqual([]);
    }
    expect(refusal(await downloadLink(server, backup.id, '/ok.txt'))).toBe(
      '400 DisplayException: This backup cannot be browsed: entry path ../evil leaves the volume.',
    );
    const restore = await postRestore(app, token, server.identifier, backup.id, {
      files: ['/ok.txt'],
      undo_backup: false,
    });
    expect(refusal(restore)).toBe(
      '400 DisplayException: This backup cannot be browsed: entry path ../evil leaves the volume.',
    );
    await drainJobs(app);
    expect(await restoreJobsOf(app, server.id)).toEqual([]);
    expect(await snapshot(server.volume, { mtimes: true })).toEqual(volume);
    expect(await around(server.volume)).toEqual(outside);
    expect(await catalogTraces(backup.id)).toEqual([]);
  });

  it('whose bytes are not the backup’s: refused for its checksum, no catalog, no download, no partial restore', async () => {
    const server = await createServer(app, owner);
    await writeTree(server.volume, LIVE);
    const backup = await plantArchive(app, server.id, rawTarGz([{ path: 'ok.txt', content: 'impostor' }]), {
      sha256: blobId(Buffer.from('the archive the backup was made with')),
    });
    const volume = await snapshot(server.volume, { mtimes: true });
    const outside = await around(server.volume);
    const said =
      '400 DisplayException: This backup cannot be browsed: the backup archive does not match its checksum.';

    for (let attempt = 0; attempt < 2; attempt++) {
      expect(refusal(await listFiles(server, backup.id, '/'))).toBe(said);
      expect(await catalogTraces(backup.id)).toEqual([]);
    }
    expect(refusal(await downloadLink(server, backup.id, '/ok.txt'))).toBe(said);
    const restore = await postRestore(app, token, server.identifier, backup.id, {
      files: ['/ok.txt'],
      undo_backup: false,
    });
    expect(refusal(restore)).toBe(said);
    await drainJobs(app);
    expect(await restoreJobsOf(app, server.id)).toEqual([]);
    expect(await snapshot(server.volume, { mtimes: true })).toEqual(volume);
    expect(await around(server.volume)).toEqual(outside);
  });

  it('swapped for another archive once its catalog is made: a partial restore fails and changes nothing', async () => {
    const server = await createServer(app, owner);
    await writeTree(server.volume, LIVE);
    const backup = await plantArchive(app, server.id, rawTarGz([{ path: 'ok.txt', content: 'genuine' }]));
    expect((await listFiles(server, backup.id, '/')).statusCode).toBe(200);
    // Someone who can write to the store (not to the database) puts other bytes in its place.
    await writeFile(
      storedArchive(app, server.id, backup.id),
      rawTarGz([{ path: 'ok.txt', content: 'impostor' }]),
    );
    const volume = await snapshot(server.volume, { mtimes: true });
    const outside = await around(server.volume);

    const restore = await postRestore(app, token, server.identifier, backup.id, {
      files: ['/ok.txt'],
      undo_backup: false,
    });
    expect(restore.statusCode, restore.body).toBe(204);
    await drainJobs(app);
    const jobs = await restoreJobsOf(app, server.id);
    expect(jobs.map((job) => job.state)).toEqual(['failed']);
    expect(jobs[0]!.error).toMatch(/does not match its checksum/);
    expect(await snapshot(server.volume, { mtimes: true })).toEqual(volume);
    expect(await around(server.volume)).toEqual(outside);
    expect(await restoreLeftovers(app)).toEqual([]);
  });

  it('swapped for another archive once its catalog is made: a file download never serves the impostor’s bytes', async () => {
    const server = await createServer(app, owner);
    const backup = await plantArchive(app, server.id, rawTarGz([{ path: 'ok.txt', content: 'genuine' }]));
    expect((await listFiles(server, backup.id, '/')).statusCode).toBe(200);
    // As long as the genuine file: the size the catalog says does not give it away.
    await writeFile(
      storedArchive(app, server.id, backup.id),
      rawTarGz([{ path: 'ok.txt', content: 'forgery' }]),
    );
    const link = await downloadLink(server, backup.id, '/ok.txt');
    if (link.statusCode !== 200) return; // refused: fine
    const fetched = await fetchLink(link.json<{ attributes: { url: string } }>().attributes.url);
    expect(fetched.status === 200 && !fetched.cut ? fetched.body.toString() : 'refused').not.toBe('forgery');
  });

  describe('with an absolute name, a symlink out and a file under the link', () => {
    let server: Awaited<ReturnType<typeof createServer>>;
    let backup: Backup;

    beforeAll(async () => {
      server = await createServer(app, owner);
      await writeTree(server.volume, LIVE);
      backup = await plantArchive(app, server.id, rawTarGz(ODD));
    });

    it('lists them as a restore would make them: the name made relative, the link left out, its "directory" a plain one', async () => {
      const root = await listFiles(server, backup.id, '/');
      expect(root.statusCode, root.body).toBe(200);
      expect(
        root
          .json<FileList>()
          .data.map((item) => [item.attributes.name, item.attributes.is_file, item.attributes.is_symlink]),
      ).toEqual([
        ['etc', false, false],
        ['link', false, false],
        ['ok.txt', true, false],
      ]);
      const etc = (await listFiles(server, backup.id, '/etc')).json<FileList>();
      expect(etc.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([['x', 8]]);
      // What is listed under `link` is the archive's own file, never the host's /etc.
      const link = (await listFiles(server, backup.id, '/link')).json<FileList>();
      expect(link.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
        ['passwd', 'not the real passwd\n'.length],
      ]);
      expect([...(await catalogTraces(backup.id))]).toEqual([backup.id]);
    });

    it('downloads the archive’s own file under the link, and a safe file, never a file of the host', async () => {
      for (const [file, content] of [
        ['/link/passwd', 'not the real passwd\n'],
        ['/etc/x', 'absolute'],
        ['/ok.txt', 'fine'],
      ] as const) {
        const link = await downloadLink(server, backup.id, file);
        expect(link.statusCode, link.body).toBe(200);
        const fetched = await fetchLink(link.json<{ attributes: { url: string } }>().attributes.url);
        expect(fetched.status, file).toBe(200);
        expect(fetched.body.toString(), file).toBe(content);
      }
      // A path through the link to a host file the archive does not hold is not there.
      expect((await downloadLink(server, backup.id, '/link/group')).statusCode).toBe(404);
      expect((await listFiles(server, backup.id, '/link/passwd/x')).statusCode).toBe(404);
    });

    it('restores one path under the link inside the volume, touching nothing outside it', async () => {
      const outside = await around(server.volume);
      const before = await snapshot(server.volume);
      const res = await postRestore(app, token, server.identifier, backup.id, {
        files: ['/link/passwd'],
        undo_backup: false,
      });
      expect(res.statusCode, res.body).toBe(204);
      await drainJobs(app);
      const jobs = await restoreJobsOf(app, server.id);
      expect(jobs.at(-1)!.state).toBe('succeeded');

      const after = await snapshot(server.volume);
      expect(after.link?.type).toBe('dir');
      expect(await readFile(path.join(server.volume, 'link/passwd'), 'utf8')).toBe('not the real passwd\n');
      for (const [rel, node] of Object.entries(before)) if (rel !== '') expect(after[rel], rel).toEqual(node);
      expect(Object.keys(after).sort()).toEqual([...Object.keys(before), 'link', 'link/passwd'].sort());
      expect(await around(server.volume)).toEqual(outside);
      expect(await restoreLeftovers(app)).toEqual([]);
    });

    it('restores a path under the link onto a volume whose own `link` points out of it, writing nothing outside', async () => {
      const target = await createServer(app, owner);
      // The live volume's `link` leads to the volumes directory, the parent of every volume.
      await writeTree(target.volume, { ...LIVE, link: { symlink: '..' } });
      const copy = await plantArchive(app, target.id, rawTarGz(ODD));
      const outside = await around(target.volume);
      const before = await snapshot(target.volume, { mtimes: true });

      const res = await postRestore(app, token, target.identifier, copy.id, {
        files: ['/link/passwd'],
        undo_backup: false,
      });
      expect(res.statusCode, res.body).toBe(204);
      await drainJobs(app);
      const [job] = await restoreJobsOf(app, target.id);

      expect(await around(target.volume)).toEqual(outside);
      expect(await readdir(path.dirname(target.volume))).not.toContain('passwd');
      expect(await restoreLeftovers(app)).toEqual([]);
      // It succeeds: the live link is replaced by the backup's directory, inside the volume.
      expect(job!.state, job!.error ?? '').toBe('succeeded');
      const after = await snapshot(target.volume);
      expect(after.link?.type).toBe('dir');
      expect(await readFile(path.join(target.volume, 'link/passwd'), 'utf8')).toBe('not the real passwd\n');
      for (const [rel, node] of Object.entries(before))
        if (rel !== '' && rel !== 'link') expect({ ...after[rel], mtimeMs: node.mtimeMs }, rel).toEqual(node);
    });
  });

  it('downloads a directory of an odd archive as a .tar.gz of only its own entries', async () => {
    const server = await createServer(app, owner);
    const backup = await plantArchive(
      app,
      server.id,
      rawTarGz([
        { path: 'dir/', type: '5' },
        { path: 'dir/a.txt', content: 'a' },
        { path: 'dir/out', type: '2', linkname: '../../../../etc/passwd' },
        { path: 'dir/hard', type: '1', linkname: 'etc/passwd' },
        { path: '/dir/abs.txt', content: 'abs' },
        { path: 'other.txt', content: randomBytes(10).toString('hex') },
      ]),
    );
    const link = await downloadLink(server, backup.id, '/dir');
    expect(link.statusCode, link.body).toBe(200);
    const fetched = await fetchLink(link.json<{ attributes: { url: string } }>().attributes.url);
    expect(fetched.status).toBe(200);
    const file = path.join(suite!.work, `${backup.id}.tar.gz`);
    await writeFile(file, fetched.body);
    const listed = execFileSync('tar', ['-tvzf', file], { encoding: 'utf8' }).trim().split('\n');
    expect(listed.map((line) => line.split(/\s+/).slice(5).join(' ')).sort()).toEqual(['a.txt', 'abs.txt']);
    expect(listed.every((line) => /^-/.test(line))).toBe(true);
  });
});
