/**
 * The rules around looking inside a snapshot backup and restoring part of it, through the API, on
 * the suite's database: who may list, download and partly restore (a subuser needs
 * `backup.download` to look, `backup.restore` to restore; a stranger sees a 404); hostile paths in
 * every request (`..` however spelled, NUL, overlong paths and names: a 422 naming the field, no
 * job queued); the pages of a directory of 2,500 entries; one file's signed link (its bytes and
 * length, a directory as a .tar.gz, expiry, tampering, a link that cannot be bent to another
 * path); a failed backup; the activity written; the catalog kept on local disk (made again when
 * removed, built once by concurrent first requests); and a damaged repository, which fails a
 * download instead of sending wrong bytes.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../src/users/user.ts';
import { contents, tempDir, writeTree, type TreeSpec } from '../support/archives.ts';
import { expectValidation } from '../support/expect-error.ts';
import {
  addSubuser,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { activityOfServer, postRestore, restoreJobsOf, serverStatus } from '../support/restores.ts';
import {
  backupsUrl,
  backupThroughApi,
  deleteBackup,
  chunksOf,
  flipByteInBlob,
  insertSnapshotBackup,
  listeningUrl,
  repositoryDir,
  sibling,
  SNAPSHOTS,
  type BackupAttributes,
} from '../support/snapshots.ts';

const KIB = 1024;
const MIB = 1024 * KIB;

let app: TestApp;
let owner: User;
let token: string;
let work: string;
/** How far the app's clock is ahead of the real one (links expire on it). */
let clockAheadMs = 0;

// openSnapshotSuite's app, with a clock the tests can move (a link's expiry is read from it).
beforeAll(async () => {
  app = await startTestApp({ env: SNAPSHOTS, clock: () => new Date(Date.now() + clockAheadMs) });
  owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  work = await tempDir('aerie-browse-rules-');
});

afterAll(async () => {
  await app?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

type Server = Awaited<ReturnType<typeof createServer>>;

interface FileList {
  object: string;
  data: { object: string; attributes: { name: string; size: number; is_file: boolean } }[];
  meta: {
    directory: string;
    pagination: { total: number; count: number; per_page: number; current_page: number; total_pages: number };
  };
}

interface ErrorBody {
  errors: { code: string; status: string; detail: string; meta?: { source_field: string; rule: string } }[];
}

const bearerOf = (t: string) => ({ authorization: `Bearer ${t}` });

/** GET …/files/list with `query` as written (raw: hostile spellings are sent as they are). */
function listRaw(server: { identifier: string }, uuid: string, query: string, as = token) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/list${query}`,
    headers: bearerOf(as),
  });
}

const list = (server: { identifier: string }, uuid: string, directory: string, as = token) =>
  listRaw(server, uuid, `?directory=${encodeURIComponent(directory)}`, as);

/** GET …/files/download?file= (the link, not the download). */
function linkRaw(server: { identifier: string }, uuid: string, query: string, as = token) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/download${query}`,
    headers: bearerOf(as),
  });
}

const link = (server: { identifier: string }, uuid: string, file: string, as = token) =>
  linkRaw(server, uuid, `?file=${encodeURIComponent(file)}`, as);

/** The path and query of the signed link for `file`. */
async function signedLink(server: { identifier: string }, uuid: string, file: string): Promise<string> {
  const res = await link(server, uuid, file);
  expect(res.statusCode, res.body).toBe(200);
  const url = new URL(res.json<{ object: string; attributes: { url: string } }>().attributes.url);
  return `${url.pathname}${url.search}`;
}

/** Fetches a signed link over real HTTP and reads the whole body (a body cut short rejects). */
async function fetchLink(pathAndQuery: string): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(`${await listeningUrl(app)}${pathAndQuery}`);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** Asserts the ValidationException envelope naming `field` with rule `path`. */
function expectPathRefused(
  res: { statusCode: number; body: string; json: <T>() => T },
  field: string,
  label: string,
) {
  expect(res.statusCode, `${label}: ${res.body}`).toBe(422);
  const body = res.json<ErrorBody>();
  expect(body.errors, label).toEqual([
    {
      code: 'ValidationException',
      status: '422',
      detail: 'The given data was invalid.',
      meta: { source_field: field, rule: 'path', message: expect.any(String) as string },
    },
  ]);
}

/** The 2,500 entries of `big/`: 10 directories, then 2,490 files, in the order a listing gives them. */
const BIG_DIRS = Array.from({ length: 10 }, (_, i) => `d-${String(i).padStart(2, '0')}`);
const BIG_FILES = Array.from({ length: 2490 }, (_, i) => `f-${String(i).padStart(4, '0')}`);
const BIG_ORDER = [...BIG_DIRS, ...BIG_FILES];
/** A name of exactly 255 bytes (the longest allowed), and one of 256 bytes made of 128 two-byte characters. */
const LONGEST_NAME = 'n'.repeat(255);
const TOO_LONG_NAME = 'é'.repeat(128);

describe('a snapshot backup’s files, through the API', () => {
  let server: Server;
  let backup: BackupAttributes;
  const level = randomBytes(10 * KIB);
  const region = randomBytes(300 * KIB);

  beforeAll(async () => {
    server = await createServer(app, owner);
    const spec: TreeSpec = {
      'server.properties': 'motd=rules\n',
      'world/level.dat': level,
      'world/region/r.0.0.mca': region,
      'plugins/essentials.jar': randomBytes(20 * KIB),
      'plugins/config.yml': 'key: value\n',
      'plugins/sub/deep.txt': 'deep\n',
      'plugins/empty/': { dir: true },
      [`long/${LONGEST_NAME}`]: 'long name\n',
    };
    for (const dir of BIG_DIRS) spec[`big/${dir}/`] = { dir: true };
    for (const file of BIG_FILES) spec[`big/${file}`] = file;
    await writeTree(server.volume, spec);
    backup = await backupThroughApi(app, token, server, { name: 'rules' });
  });

  describe('who may look', () => {
    it('refuses list and download to a subuser without backup.download (403)', async () => {
      const reader = await createUser(app);
      await addSubuser(app, server.id, reader, ['backup.read', 'backup.restore']);
      const readerToken = (await createApiKey(app, reader)).token;
      expect((await list(server, backup.uuid, '/', readerToken)).statusCode).toBe(403);
      expect((await link(server, backup.uuid, '/server.properties', readerToken)).statusCode).toBe(403);
    });

    it('lets a subuser with backup.download list and download, and refuses their partial restore without backup.restore (403)', async () => {
      const looker = await createUser(app);
      await addSubuser(app, server.id, looker, ['backup.read', 'backup.download']);
      const lookerToken = (await createApiKey(app, looker)).token;
      const listed = await list(server, backup.uuid, '/world', lookerToken);
      expect(listed.statusCode, listed.body).toBe(200);
      expect(listed.json<FileList>().data.map((item) => item.attributes.name)).toEqual([
        'region',
        'level.dat',
      ]);
      expect((await link(server, backup.uuid, '/world/level.dat', lookerToken)).statusCode).toBe(200);

      const jobs = (await restoreJobsOf(app, server.id)).length;
      const restore = await postRestore(app, lookerToken, server.identifier, backup.uuid, {
        files: ['/server.properties'],
      });
      expect(restore.statusCode, restore.body).toBe(403);
      expect(await restoreJobsOf(app, server.id)).toHaveLength(jobs);
      expect(await serverStatus(app, server.id)).toBeNull();
    });

    it('answers 404 to another user, on the backup’s server and on a server of their own', async () => {
      const stranger = await createUser(app);
      const strangerToken = (await createApiKey(app, stranger)).token;
      const theirs = await createServer(app, stranger);
      for (const target of [server, theirs]) {
        const listed = await list(target, backup.uuid, '/', strangerToken);
        expect(listed.statusCode, listed.body).toBe(404);
        expect((await link(target, backup.uuid, '/server.properties', strangerToken)).statusCode).toBe(404);
        const restore = await postRestore(app, strangerToken, target.identifier, backup.uuid, {
          files: ['/server.properties'],
        });
        expect(restore.statusCode, restore.body).toBe(404);
      }
      // The owner too: this backup is not one of that other server's.
      expect((await list(theirs, backup.uuid, '/')).statusCode).toBe(404);
      expect(await restoreJobsOf(app, server.id)).toHaveLength(0);
    });
  });

  describe('hostile paths', () => {
    /** Each raw query value that must be refused, and why. */
    const HOSTILE_QUERIES: [string, string][] = [
      ['..', 'a bare ..'],
      ['/..', 'an absolute ..'],
      ['/../etc', '.. at the root'],
      ['a/../..', 'a/../..'],
      ['/world/../../etc/passwd', '.. that climbs out'],
      ['/world/..', '.. that stays inside (still refused)'],
      ['%2e%2e', '.. percent-encoded'],
      ['%2E%2E%2Fetc', '..%2F percent-encoded, upper case'],
      ['/world/%2e%2e/%2e%2e', 'percent-encoded .. components'],
      ['/a%00b', 'a NUL'],
      ['%00', 'a bare NUL'],
      [`/${'a/'.repeat(2048)}`, '4,097 bytes'],
      [`/${'n'.repeat(256)}`, 'a 256-byte name'],
      [`/long/${encodeURIComponent(TOO_LONG_NAME)}`, 'a name of 128 two-byte characters (256 bytes)'],
    ];

    it('refuses them in a listing’s directory: 422 naming `directory`', async () => {
      for (const [query, label] of HOSTILE_QUERIES)
        expectPathRefused(await listRaw(server, backup.uuid, `?directory=${query}`), 'directory', label);
    });

    it('refuses them in a download’s file: 422 naming `file`, and records nothing', async () => {
      const before = (await activityOfServer(app, server.id, 'server:backup.download')).length;
      for (const [query, label] of HOSTILE_QUERIES)
        expectPathRefused(await linkRaw(server, backup.uuid, `?file=${query}`), 'file', label);
      expect(await activityOfServer(app, server.id, 'server:backup.download')).toHaveLength(before);
    });

    it('accepts the longest path and name allowed: 4,096 bytes, 255 bytes a name', async () => {
      // 4,096 bytes: not in the backup (404), but not refused either.
      const longest = `/${'a/'.repeat(2047)}a`;
      expect(Buffer.byteLength(longest)).toBe(4096);
      expect((await list(server, backup.uuid, longest)).statusCode).toBe(404);
      const listed = await list(server, backup.uuid, '/long');
      expect(listed.json<FileList>().data.map((item) => item.attributes.name)).toEqual([LONGEST_NAME]);
      const file = await fetchLink(await signedLink(server, backup.uuid, `/long/${LONGEST_NAME}`));
      expect(file.body.toString()).toBe('long name\n');
    });

    it('refuses them in a restore’s files: 422 naming the entry, no job queued, the server left idle', async () => {
      const jobs = (await restoreJobsOf(app, server.id)).length;
      const bodies: [string[], string, string][] = [
        [['/world/../../etc'], 'files.0', '..'],
        [['a/../..'], 'files.0', 'a/../..'],
        [['/server.properties', '..'], 'files.1', 'a bare .. second'],
        [['/a\u0000b'], 'files.0', 'a NUL'],
        [[`/${'a/'.repeat(2048)}`], 'files.0', '4,097 bytes'],
        [['/world', `/${'n'.repeat(256)}`], 'files.1', 'a 256-byte name'],
        [[`/long/${TOO_LONG_NAME}`], 'files.0', '128 two-byte characters'],
      ];
      for (const [files, field, label] of bodies) {
        const res = await postRestore(app, token, server.identifier, backup.uuid, {
          files,
          undo_backup: false,
        });
        expectPathRefused(res, field, label);
      }
      expect(await restoreJobsOf(app, server.id)).toHaveLength(jobs);
      expect(await serverStatus(app, server.id)).toBeNull();
    });

    it('refuses `files` with 1,001 entries or none (422), and takes 1,000', async () => {
      const jobs = (await restoreJobsOf(app, server.id)).length;
      const tooMany = await postRestore(app, token, server.identifier, backup.uuid, {
        files: Array.from({ length: 1001 }, (_, i) => `/big/${BIG_FILES[i]!}`),
        undo_backup: false,
      });
      expectValidation(tooMany, { files: 'max' });
      const none = await postRestore(app, token, server.identifier, backup.uuid, {
        files: [],
        undo_backup: false,
      });
      expectValidation(none, { files: 'min' });
      expect(await restoreJobsOf(app, server.id)).toHaveLength(jobs);

      const thousand = await postRestore(app, token, server.identifier, backup.uuid, {
        files: Array.from({ length: 1000 }, (_, i) => `/big/${BIG_FILES[i]!}`),
        undo_backup: false,
      });
      expect(thousand.statusCode, thousand.body).toBe(204);
      await drainJobs(app);
      const done = await restoreJobsOf(app, server.id);
      expect(done).toHaveLength(jobs + 1);
      expect(done[done.length - 1]!.state).toBe('succeeded');
      expect((done[done.length - 1]!.payload.files as string[]).length).toBe(1000);
    });
  });

  describe('listing', () => {
    it('pages a directory of 2,500 entries 1,000 at a time by default', async () => {
      const pages: string[][] = [];
      for (const page of [1, 2, 3]) {
        const res = await listRaw(server, backup.uuid, `?directory=/big&page=${page}`);
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json<FileList>();
        expect(body.meta.pagination).toMatchObject({
          total: 2500,
          count: page === 3 ? 500 : 1000,
          per_page: 1000,
          current_page: page,
          total_pages: 3,
        });
        pages.push(body.data.map((item) => item.attributes.name));
      }
      expect(pages.flat()).toEqual(BIG_ORDER);
    });

    it('gives entries 901 to 1,200 for per_page=300&page=4, across a catalog page’s end, in order', async () => {
      const res = await listRaw(server, backup.uuid, '?directory=/big&per_page=300&page=4');
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json<FileList>();
      expect(body.data.map((item) => item.attributes.name)).toEqual(BIG_ORDER.slice(900, 1200));
      expect(body.meta.pagination).toMatchObject({ total: 2500, count: 300, per_page: 300, total_pages: 9 });
      // Every window of 7 (not a divisor of 1,000) agrees with the whole.
      const names: string[] = [];
      for (let page = 140; page <= 146; page++) {
        const seven = await listRaw(server, backup.uuid, `?directory=/big&per_page=7&page=${page}`);
        names.push(...seven.json<FileList>().data.map((item) => item.attributes.name));
      }
      expect(names).toEqual(BIG_ORDER.slice(139 * 7, 146 * 7));
    });

    it('answers a page past the end with no entries and the true total', async () => {
      for (const query of [
        '?directory=/big&page=4',
        '?directory=/big&per_page=300&page=10',
        '?directory=/world&page=2',
      ]) {
        const res = await listRaw(server, backup.uuid, query);
        expect(res.statusCode, `${query}: ${res.body}`).toBe(200);
        const body = res.json<FileList>();
        expect(body.data, query).toEqual([]);
        expect(body.meta.pagination.total, query).toBe(query.includes('world') ? 2 : 2500);
        expect(body.meta.pagination.count, query).toBe(0);
      }
    });

    it('refuses a page size over 1,000 or under 1, and a page under 1 (422)', async () => {
      for (const query of ['per_page=1001', 'per_page=0', 'page=0', 'page=-1', 'per_page=abc'])
        expect((await listRaw(server, backup.uuid, `?directory=/big&${query}`)).statusCode, query).toBe(422);
    });

    it('answers 404 for a path that is a file, and for one under a file', async () => {
      for (const directory of [
        '/server.properties',
        '/world/level.dat',
        '/world/level.dat/x',
        '/nope/deeper',
      ])
        expect((await list(server, backup.uuid, directory)).statusCode, directory).toBe(404);
    });

    it('lists the root when `directory` is missing or empty, and shows the directory normalized', async () => {
      const root = ['big', 'long', 'plugins', 'world', 'server.properties'];
      for (const query of ['', '?', '?directory=', '?directory=/', '?directory=.', '?directory=//./']) {
        const res = await listRaw(server, backup.uuid, query);
        expect(res.statusCode, `${query}: ${res.body}`).toBe(200);
        const body = res.json<FileList>();
        expect(body.meta.directory, query).toBe('/');
        expect(
          body.data.map((item) => item.attributes.name),
          query,
        ).toEqual(root);
      }
      for (const [directory, normalized] of [
        ['world', '/world'],
        ['/world/', '/world'],
        ['//world//region//', '/world/region'],
        ['./world/./region/.', '/world/region'],
      ]) {
        const res = await list(server, backup.uuid, directory!);
        expect(res.statusCode, directory).toBe(200);
        expect(res.json<FileList>().meta.directory, directory).toBe(normalized);
      }
      // An empty directory of the backup is listed, empty.
      const empty = (await list(server, backup.uuid, '/plugins/empty')).json<FileList>();
      expect(empty.data).toEqual([]);
      expect(empty.meta.pagination.total).toBe(0);
    });
  });

  describe('one file’s link', () => {
    it('downloads the file’s exact bytes, with Content-Length its size', async () => {
      const file = await fetchLink(await signedLink(server, backup.uuid, '/world/region/r.0.0.mca'));
      expect(file.status).toBe(200);
      expect(file.body.equals(region)).toBe(true);
      expect(file.headers.get('content-length')).toBe(String(region.length));
      expect(file.headers.get('content-type')).toBe('application/octet-stream');
      const small = await fetchLink(await signedLink(server, backup.uuid, 'world//level.dat'));
      expect(small.body.equals(level)).toBe(true);
      expect(small.headers.get('content-length')).toBe(String(level.length));
    });

    it('downloads a directory as a .tar.gz that GNU tar lists as exactly its contents', async () => {
      const dir = await fetchLink(await signedLink(server, backup.uuid, '/plugins'));
      expect(dir.status).toBe(200);
      expect(dir.headers.get('content-type')).toBe('application/gzip');
      expect(dir.headers.get('content-disposition')).toBe('attachment; filename="plugins.tar.gz"');
      const archive = path.join(work, 'plugins.tar.gz');
      await writeFile(archive, dir.body);
      const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).trim().split('\n');
      expect(listed.map((name) => name.replace(/^\.\//, '')).sort()).toEqual([
        'config.yml',
        'empty/',
        'essentials.jar',
        'sub/',
        'sub/deep.txt',
      ]);
      const out = path.join(work, 'plugins-out');
      await mkdir(out);
      execFileSync('tar', ['-xzf', archive, '-C', out]);
      expect(await readFile(path.join(out, 'sub/deep.txt'), 'utf8')).toBe('deep\n');
      expect(await readFile(path.join(out, 'config.yml'), 'utf8')).toBe('key: value\n');
    });

    it('answers 404 for a path the backup lacks, before any link is made', async () => {
      const before = (await activityOfServer(app, server.id, 'server:backup.download')).length;
      for (const file of ['/nope', '/world/nope.dat', '/server.properties/x'])
        expect((await link(server, backup.uuid, file)).statusCode, file).toBe(404);
      expect(await activityOfServer(app, server.id, 'server:backup.download')).toHaveLength(before);
    });

    it('gives, for `/`, a link that works, or none at all', async () => {
      const before = (await activityOfServer(app, server.id, 'server:backup.download')).length;
      const res = await link(server, backup.uuid, '/');
      if (res.statusCode === 200) {
        const url = new URL(res.json<{ attributes: { url: string } }>().attributes.url);
        const root = await fetchLink(`${url.pathname}${url.search}`);
        expect(root.status, `the link for / answers: ${root.body.toString().slice(0, 200)}`).toBe(200);
        expect(root.headers.get('content-type')).toBe('application/gzip');
      } else {
        expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, res.body).toBeLessThan(500);
        expect(await activityOfServer(app, server.id, 'server:backup.download')).toHaveLength(before);
      }
    });

    it('works for 15 minutes, then answers 403; a tampered token is a 403', async () => {
      const signed = await signedLink(server, backup.uuid, '/server.properties');
      try {
        clockAheadMs = 14 * 60_000;
        expect((await app.http.inject({ method: 'GET', url: signed })).statusCode).toBe(200);
        clockAheadMs = 16 * 60_000;
        const expired = await app.http.inject({ method: 'GET', url: signed });
        expect(expired.statusCode).toBe(403);
      } finally {
        clockAheadMs = 0;
      }
      const tokenParam = new URLSearchParams(signed.split('?')[1]).get('token')!;
      const tampered = `${tokenParam.slice(0, -2)}${tokenParam.endsWith('A') ? 'BB' : 'AA'}`;
      expect(
        (await app.http.inject({ method: 'GET', url: `/download/backup?token=${tampered}` })).statusCode,
      ).toBe(403);
      expect((await app.http.inject({ method: 'GET', url: signed })).statusCode).toBe(200);
    });

    it('cannot be bent into a link to another file, or to the whole backup', async () => {
      const signed = await signedLink(server, backup.uuid, '/server.properties');
      const [payload, mac] = new URLSearchParams(signed.split('?')[1]).get('token')!.split('.');
      const fields = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as unknown[];
      expect(fields).toEqual([server.id, backup.uuid, expect.any(Number), '/server.properties']);
      const forged = (changed: unknown[]) =>
        `/download/backup?token=${Buffer.from(JSON.stringify(changed)).toString('base64url')}.${mac!}`;
      for (const changed of [
        [...fields.slice(0, 3), '/world/region/r.0.0.mca'],
        [...fields.slice(0, 3), '/'],
        fields.slice(0, 3), // no path: the whole backup
        [fields[0], fields[1], Number(fields[2]) + 3600, fields[3]], // a later expiry
      ]) {
        const res = await app.http.inject({ method: 'GET', url: forged(changed) });
        expect(res.statusCode, JSON.stringify(changed)).toBe(403);
      }
      // The untouched token still works: the forgeries failed on their signature alone.
      expect((await app.http.inject({ method: 'GET', url: forged(fields) })).statusCode).toBe(200);
    });
  });

  describe('activity', () => {
    it('records a file’s link as server:backup.download with the normalized path', async () => {
      const before = (await activityOfServer(app, server.id, 'server:backup.download')).length;
      await signedLink(server, backup.uuid, 'world//./level.dat');
      const entries = await activityOfServer(app, server.id, 'server:backup.download');
      expect(entries).toHaveLength(before + 1);
      const entry = entries[entries.length - 1]!;
      expect(entry.event).toBe('server:backup.download');
      expect(entry.properties).toMatchObject({ name: 'rules', file: '/world/level.dat' });
      expect(entry.subjects).toEqual([`backup:${backup.uuid}`, `server:${server.id}`].sort());
    });
  });

  describe('the catalog on local disk', () => {
    const catalogDir = () => path.join(app.dataDir, 'cache', 'catalogs', backup.uuid);

    it('is made again when removed, giving the same answer', async () => {
      const first = (
        await listRaw(server, backup.uuid, '?directory=/big&per_page=300&page=4')
      ).json<FileList>();
      expect((await stat(catalogDir())).isDirectory()).toBe(true);
      await rm(catalogDir(), { recursive: true });
      const again = await listRaw(server, backup.uuid, '?directory=/big&per_page=300&page=4');
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json<FileList>()).toEqual(first);
      expect((await readdir(catalogDir())).length).toBeGreaterThan(3);
    });

    it('answers concurrent first requests in full, from this process and from another one on the same data directory', async () => {
      const other = await sibling(app, {});
      try {
        const otherToken = (await createApiKey(other, owner)).token;
        for (let round = 0; round < 5; round++) {
          await rm(catalogDir(), { recursive: true, force: true });
          const answers = await Promise.all([
            listRaw(server, backup.uuid, '?directory=/world'),
            listRaw(server, backup.uuid, '?directory=/big&page=2'),
            link(server, backup.uuid, '/server.properties'),
            other.http.inject({
              method: 'GET',
              url: `${backupsUrl(server)}/${backup.uuid}/files/list?directory=/world`,
              headers: bearerOf(otherToken),
            }),
          ]);
          for (const res of answers) expect(res.statusCode, `round ${round}: ${res.body}`).toBe(200);
          expect(answers[0].json<FileList>().data).toEqual(answers[3].json<FileList>().data);
          expect(answers[1].json<FileList>().data.map((item) => item.attributes.name)).toEqual(
            BIG_ORDER.slice(1000, 2000),
          );
        }
        // No half-built catalog is left beside the real one.
        expect(
          (await readdir(path.dirname(catalogDir()))).filter((name) => name.includes('.building-')),
        ).toEqual([]);
      } finally {
        await other.close();
      }
    });

    it('is removed with its backup', async () => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, { 'a.txt': 'a' });
      const doomed = await backupThroughApi(app, token, server, { name: 'doomed' });
      expect((await list(server, doomed.uuid, '/')).statusCode).toBe(200);
      const dir = path.join(app.dataDir, 'cache', 'catalogs', doomed.uuid);
      expect((await stat(dir)).isDirectory()).toBe(true);
      await deleteBackup(app, token, server, doomed.uuid);
      await drainJobs(app);
      await expect(stat(dir), 'the deleted backup’s catalog is still on disk').rejects.toMatchObject({
        code: 'ENOENT',
      });
    });
  });
});

describe('a partial restore’s rules', () => {
  let server: Server;
  let backup: BackupAttributes;
  const BACKED_UP: TreeSpec = {
    'server.properties': 'motd=backup\n',
    'world/level.dat': 'backup level',
    'world/region/r.0.0.mca': 'backup region',
    'logs/latest.log': 'backup log',
  };

  beforeAll(async () => {
    server = await createServer(app, owner);
    await writeTree(server.volume, BACKED_UP);
    backup = await backupThroughApi(app, token, server, { name: 'partial' });
  });

  async function restoreOk(body: Record<string, unknown>, as = token) {
    const res = await postRestore(app, as, server.identifier, backup.uuid, { undo_backup: false, ...body });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const jobs = await restoreJobsOf(app, server.id);
    const job = jobs[jobs.length - 1]!;
    expect(job.state).toBe('succeeded');
    return job;
  }

  it('answers 404 for a path the backup lacks, queuing nothing and leaving the server idle', async () => {
    for (const files of [['/nope'], ['/world', '/world/nope.dat'], ['/server.properties/x']]) {
      const res = await postRestore(app, token, server.identifier, backup.uuid, {
        files,
        undo_backup: false,
      });
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json<ErrorBody>().errors[0]!.code).toBe('NotFoundHttpException');
    }
    expect(await restoreJobsOf(app, server.id)).toHaveLength(0);
    expect(await serverStatus(app, server.id)).toBeNull();
    expect(await activityOfServer(app, server.id)).toEqual([]);
  });

  it('takes paths given twice or nested as one restore, bringing them back once', async () => {
    await writeFile(path.join(server.volume, 'world/level.dat'), 'changed level');
    await writeFile(path.join(server.volume, 'world/region/r.0.0.mca'), 'changed region');
    await writeFile(path.join(server.volume, 'world/added.txt'), 'added since');
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=changed\n');
    const before = (await restoreJobsOf(app, server.id)).length;

    const job = await restoreOk({
      files: ['/world', 'world/', '//world/./', '/world/region', 'world/region/r.0.0.mca'],
    });

    expect(await restoreJobsOf(app, server.id)).toHaveLength(before + 1);
    // Spellings of one path are one; nested paths are kept as given (the restore collapses them).
    expect(job.payload.files).toEqual(['world', 'world/region', 'world/region/r.0.0.mca']);
    expect(await readFile(path.join(server.volume, 'world/level.dat'), 'utf8')).toBe('backup level');
    expect(await readFile(path.join(server.volume, 'world/region/r.0.0.mca'), 'utf8')).toBe('backup region');
    expect(await readFile(path.join(server.volume, 'world/added.txt'), 'utf8')).toBe('added since');
    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=changed\n');
  });

  it('records the paths asked for, and the paths restored on completion', async () => {
    const job = await restoreOk({ files: ['server.properties', '/logs/'], truncate: true });
    expect(job.payload.files).toEqual(['server.properties', 'logs']);
    const entries = (await activityOfServer(app, server.id)).filter((entry) => entry.batch === job.batch);
    expect(entries.map((entry) => entry.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
    expect(entries[0]!.properties).toMatchObject({
      name: 'partial',
      truncate: true,
      undo_backup: false,
      files: ['/server.properties', '/logs'],
    });
    expect(entries[1]!.properties).toMatchObject({
      name: 'partial',
      paths: ['/server.properties', '/logs'],
      files: 2,
    });
    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=backup\n');
  });

  it('restores everything when `/` is among the files, as a restore without files does', async () => {
    await writeFile(path.join(server.volume, 'world/added.txt'), 'added since');
    await mkdir(path.join(server.volume, 'new'), { recursive: true });
    await writeFile(path.join(server.volume, 'new/file.txt'), 'new');
    const job = await restoreOk({ files: ['/world', '/'], truncate: true });
    expect(job.payload).not.toHaveProperty('files');
    const entries = (await activityOfServer(app, server.id)).filter((entry) => entry.batch === job.batch);
    expect(entries[0]!.properties).not.toHaveProperty('files');
    expect(entries[1]!.properties).not.toHaveProperty('paths');
    // Truncated to exactly the backup.
    expect(Object.keys(await contents(server.volume)).sort()).toEqual([
      'logs',
      'logs/latest.log',
      'server.properties',
      'world',
      'world/level.dat',
      'world/region',
      'world/region/r.0.0.mca',
    ]);
  });

  it('refuses an empty path or `.` (422, likely a slip); `/./` is the root, a whole restore', async () => {
    const jobsBefore = (await restoreJobsOf(app, server.id)).length;
    for (const files of [[''], ['.'], ['/logs', './']]) {
      const res = await postRestore(app, token, server.identifier, backup.uuid, { files });
      expect(res.statusCode, JSON.stringify(files)).toBe(422);
      expect(res.json<ErrorBody>().errors[0]!.code).toBe('ValidationException');
    }
    expect(await restoreJobsOf(app, server.id)).toHaveLength(jobsBefore);
    await writeFile(path.join(server.volume, 'extra.txt'), 'extra');
    const job = await restoreOk({ files: ['/./'], truncate: false });
    expect(job.payload).not.toHaveProperty('files');
    expect(await readFile(path.join(server.volume, 'extra.txt'), 'utf8')).toBe('extra');
  });

  it('lets a subuser with backup.restore but not backup.download restore part of the backup', async () => {
    const restorer = await createUser(app);
    await addSubuser(app, server.id, restorer, ['backup.read', 'backup.restore']);
    const restorerToken = (await createApiKey(app, restorer)).token;
    await writeFile(path.join(server.volume, 'logs/latest.log'), 'changed log');
    const job = await restoreOk({ files: ['/logs/latest.log'] }, restorerToken);
    expect(job.payload.actorId).toBe(restorer.id);
    expect(await readFile(path.join(server.volume, 'logs/latest.log'), 'utf8')).toBe('backup log');
    // Yet looking inside is refused.
    expect((await list(server, backup.uuid, '/', restorerToken)).statusCode).toBe(403);
  });
});

describe('a backup that cannot be looked inside', () => {
  it('answers 400 for a failed backup: list, link and partial restore', async () => {
    const server = await createServer(app, owner);
    const failed = await insertSnapshotBackup(app, server.id, {
      backupId: randomUUID(),
      sha256: 'f'.repeat(64),
    });
    await app.db.kysely
      .updateTable('backups')
      .set({ is_successful: 0 })
      .where('id', '=', failed.id)
      .execute();
    const listed = await list(server, failed.id, '/');
    expect(listed.statusCode, listed.body).toBe(400);
    expect(listed.json<ErrorBody>().errors[0]!.code).toBe('DisplayException');
    expect((await link(server, failed.id, '/x')).statusCode).toBe(400);
    const restore = await postRestore(app, token, server.identifier, failed.id, { files: ['/x'] });
    expect(restore.statusCode, restore.body).toBe(400);
    expect(await restoreJobsOf(app, server.id)).toHaveLength(0);
  });
});

describe('a damaged repository', () => {
  let server: Server;
  let backup: BackupAttributes;
  const big = randomBytes(4 * MIB);

  beforeAll(async () => {
    server = await createServer(app, owner);
    await writeTree(server.volume, { 'big.bin': big, 'ok.txt': 'intact\n' });
    backup = await backupThroughApi(app, token, server, { name: 'to be damaged' });
    // The catalog is built while the repository is whole; the damage is in the data only.
    expect((await list(server, backup.uuid, '/')).statusCode).toBe(200);
  });

  it('cuts the download of a file damaged part-way instead of sending wrong bytes', async () => {
    const chunks = await chunksOf(app, server.id, backup.uuid, 'big.bin');
    expect(chunks.length).toBeGreaterThan(1);
    await flipByteInBlob(repositoryDir(app, server.id), chunks[chunks.length - 1]!);

    const signed = await signedLink(server, backup.uuid, '/big.bin');
    const res = await fetch(`${await listeningUrl(app)}${signed}`);
    // Its first chunk is whole: the headers go out with it, a 200 with the file's length...
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(big.length));
    // ...then the body stops short and the connection is cut, so no reader takes it for the file.
    let received = 0;
    let failure: unknown;
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        received += value.length;
      }
    } catch (error) {
      failure = error;
    }
    expect(failure, 'a damaged file was sent whole').toBeInstanceOf(TypeError);
    expect(String(failure)).toContain('terminated');
    expect(received).toBeLessThan(big.length);
    // A file of the same backup whose chunks are whole still downloads.
    const ok = await fetchLink(await signedLink(server, backup.uuid, '/ok.txt'));
    expect(ok.status).toBe(200);
    expect(ok.body.toString()).toBe('intact\n');
  });

  it('answers a download whose first chunk is damaged with an error naming the damage', async () => {
    const [first] = await chunksOf(app, server.id, backup.uuid, 'big.bin');
    await flipByteInBlob(repositoryDir(app, server.id), first!);
    const res = await fetchLink(await signedLink(server, backup.uuid, '/big.bin'));
    expect(res.status, res.body.toString()).toBe(400);
    const [error] = (JSON.parse(res.body.toString()) as ErrorBody).errors;
    expect(error!.code).toBe('DisplayException');
    expect(error!.detail).toMatch(/^This file cannot be downloaded: the backup's stored data is damaged: /);
    expect(error!.detail).toContain(first!);
  });

  it('fails a partial restore of the damaged file, leaving the volume as it was', async () => {
    await writeFile(path.join(server.volume, 'big.bin'), 'replaced since');
    const before = await contents(server.volume);
    const res = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/big.bin'],
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const jobs = await restoreJobsOf(app, server.id);
    expect(jobs[jobs.length - 1]!.state).toBe('failed');
    expect(await contents(server.volume)).toEqual(before);
    expect(await serverStatus(app, server.id)).toBeNull();
    const entries = await activityOfServer(app, server.id);
    expect(entries[entries.length - 1]!.event).toBe('server:backup.restore-failed');
  });
});
