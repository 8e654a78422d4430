/**
 * What a restore does to a server's files, on a real volume with real archives: truncate makes
 * the volume the backup exactly; without it the backup is laid over the live files; a restore that
 * fails for any reason leaves the volume exactly as it was, and says why.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../src/users/user.ts';
import {
  backupOf,
  contents,
  sha256Of,
  snapshot,
  tempDir,
  writeTree,
  type TreeSpec,
} from '../support/archives.ts';
import {
  activityOfServer,
  postRestore,
  restoreJobsOf,
  restoreLeftovers,
  serverStatus,
  storedArchive,
} from '../support/restores.ts';
import { rawTarGz, writeTarGz } from '../support/raw-tar.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

const MiB = 1024 * 1024;

const LIVE: TreeSpec = {
  'server.properties': 'motd=live\n',
  'world/level.dat': 'live level',
  'world/live-only.dat': 'kept unless truncating',
  'live-only.txt': { content: 'only in the live volume', mode: 0o600 },
  'logs/': { dir: true, mode: 0o750 },
  'mods/a.jar': 'a live jar', // the backup has `mods` as a file
  'run.sh': { content: '#!/bin/sh\nexec java\n', mode: 0o755 },
  latest: { symlink: 'live-only.txt' },
};
const LIVE_ONLY = ['world/live-only.dat', 'live-only.txt', 'logs', 'run.sh', 'latest'];

const BACKUP: TreeSpec = {
  'server.properties': 'motd=backup\n',
  'world/level.dat': 'backup level',
  'world/region/r.0.0.mca': randomBytes(96 * 1024),
  mods: 'mods is a file in the backup',
  'config/': { dir: true, mode: 0o750 },
  'config/app.yml': { content: 'key: value\n', mode: 0o640 },
  'empty/': { dir: true },
  'script.sh': { content: 'echo hi\n', mode: 0o755 },
};

let app: TestApp;
let owner: User;
let token: string;
let work: string;
let backup: { source: string; archive: string };

beforeAll(async () => {
  // Restores of archive backups, as they were made before snapshots (those are tested in
  // test/backups/snapshot-*.test.ts), without the undo backup a restore takes first by default.
  app = await startTestApp({ env: { AERIE_BACKUP_FORMAT: 'archive', AERIE_RESTORE_UNDO_BACKUP: 'false' } });
  owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  work = await tempDir();
  backup = await backupOf(BACKUP, work);
});

afterAll(async () => {
  await app.close();
  await rm(work, { recursive: true, force: true });
});

async function liveServer(options: { diskMb?: number; live?: TreeSpec; archive?: string } = {}) {
  const server = await createServer(app, owner, { diskMb: options.diskMb ?? 0 });
  await writeTree(server.volume, options.live ?? LIVE);
  const record = await importBackup(app, server.id, options.archive ?? backup.archive, 'nightly');
  return { server, backupId: record.uuid, archive: storedArchive(app, server.id, record.uuid) };
}

async function restore(serverId: string, backupId: string, truncate: boolean) {
  const res = await postRestore(app, token, serverId, backupId, { truncate });
  expect(res.statusCode, res.body).toBe(204);
  await drainJobs(app);
  return res.headers['x-request-id'] as string;
}

async function expectCleanFinish(serverId: string, batch: string, outcome: 'succeeded' | 'failed') {
  expect(await serverStatus(app, serverId)).toBeNull();
  expect(await restoreLeftovers(app)).toEqual([]);
  const jobs = await restoreJobsOf(app, serverId);
  expect(jobs).toHaveLength(1);
  expect(jobs[0]?.state).toBe(outcome);
  const entries = (await activityOfServer(app, serverId)).filter((e) => e.batch === batch);
  const last = outcome === 'succeeded' ? 'server:backup.restore-complete' : 'server:backup.restore-failed';
  expect(entries.map((e) => e.event)).toEqual(['server:backup.restore', last]);
  return entries[1]!;
}

describe('a successful restore', () => {
  it('with truncate, makes the volume exactly the backup', async () => {
    const { server, backupId } = await liveServer();
    const rootBefore = await stat(server.volume);
    const batch = await restore(server.id, backupId, true);
    expect(await contents(server.volume)).toEqual(await contents(backup.source));
    expect((await stat(server.volume)).mode & 0o7777).toBe(rootBefore.mode & 0o7777);
    const complete = await expectCleanFinish(server.id, batch, 'succeeded');
    expect(complete.properties).toMatchObject({ name: 'nightly' });
  });

  it('without truncate, lays the backup over the live files and keeps the files only they have', async () => {
    const { server, backupId } = await liveServer();
    const live = await contents(server.volume);
    const batch = await restore(server.id, backupId, false);

    const expected = { ...(await contents(backup.source)) };
    for (const rel of LIVE_ONLY) expected[rel] = live[rel]!;
    expect(await contents(server.volume)).toEqual(expected);
    // Spelled out: the backup wins where both have a path, whatever the kinds.
    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=backup\n');
    expect(await readFile(path.join(server.volume, 'world/level.dat'), 'utf8')).toBe('backup level');
    expect(await readFile(path.join(server.volume, 'mods'), 'utf8')).toBe('mods is a file in the backup');
    expect(await readFile(path.join(server.volume, 'world/live-only.dat'), 'utf8')).toBe(
      'kept unless truncating',
    );
    expect(await readFile(path.join(server.volume, 'latest'), 'utf8')).toBe('only in the live volume');
    await expectCleanFinish(server.id, batch, 'succeeded');
  });

  it('never writes through a live symlink that the backup has a real directory for', async () => {
    const outside = await tempDir('aerie-outside-');
    await writeFile(path.join(outside, 'x.jar'), 'outside, untouched');
    const before = await snapshot(outside, { mtimes: true });
    const pluginBackup = await backupOf(
      { 'plugins/x.jar': 'from the backup', 'libs/y.jar': 'y from the backup' },
      work,
    );
    const { server, backupId } = await liveServer({
      live: {
        plugins: { symlink: outside },
        'libs/y.jar': { symlink: path.join(outside, 'x.jar') },
        'keep.txt': 'keep',
      },
      archive: pluginBackup.archive,
    });
    await restore(server.id, backupId, false);

    expect(await snapshot(outside, { mtimes: true })).toEqual(before);
    const after = await contents(server.volume);
    expect(after.plugins?.type).toBe('dir');
    expect(after['plugins/x.jar']).toMatchObject({
      type: 'file',
      sha256: (await contents(pluginBackup.source))['plugins/x.jar']?.sha256,
    });
    expect(after['libs/y.jar']?.type).toBe('file');
    expect(after['keep.txt']?.type).toBe('file');
    await rm(outside, { recursive: true, force: true });
  });
});

type Breakage = (target: { server: { id: string }; backupId: string; archive: string }) => Promise<void>;

/** Replaces the stored archive and records the new file's SHA-256, so only reading it can tell. */
async function replaceKeepingChecksum(archive: string, backupId: string, bytes: Buffer): Promise<void> {
  await writeFile(archive, bytes);
  await app.db.kysely
    .updateTable('backups')
    .set({ sha256: await sha256Of(archive) })
    .where('id', '=', backupId)
    .execute();
}

const FAILURES: Record<
  string,
  { breakIt: Breakage; reason: RegExp; diskMb?: number; archive?: () => Promise<string> }
> = {
  'a gzip stream cut in half': {
    breakIt: async ({ backupId, archive }) => {
      const bytes = await readFile(archive);
      await replaceKeepingChecksum(archive, backupId, bytes.subarray(0, Math.floor(bytes.length / 2)));
    },
    reason: /damaged|corrupt|truncated|end of file/i,
  },
  'a tar cut mid-file inside a whole gzip stream': {
    breakIt: async ({ backupId, archive }) => {
      const tar = gunzipSync(await readFile(archive));
      await replaceKeepingChecksum(
        archive,
        backupId,
        gzipSync(tar.subarray(0, tar.length - 1024 - 40 * 1024)),
      );
    },
    reason: /damaged|corrupt|truncated/i,
  },
  garbage: {
    breakIt: ({ backupId, archive }) => replaceKeepingChecksum(archive, backupId, randomBytes(64 * 1024)),
    reason: /damaged|corrupt/i,
  },
  'a checksum mismatch (another valid archive in its place)': {
    breakIt: async ({ archive }) => {
      const other = await backupOf({ 'server.properties': 'motd=impostor\n' }, work);
      await writeFile(archive, await readFile(other.archive));
    },
    reason: /checksum/i,
  },
  'a missing archive': {
    breakIt: ({ archive }) => rm(archive),
    reason: /missing|not exist|no longer/i,
  },
  // `backup import` refuses such an archive, so it is put in place of a stored backup instead.
  'an entry that leaves the volume': {
    breakIt: ({ backupId, archive }) =>
      replaceKeepingChecksum(
        archive,
        backupId,
        rawTarGz([
          { path: 'ok.txt', content: 'fine' },
          { path: '../escape.txt', content: 'escaped' },
        ]),
      ),
    reason: /leaves the volume|unsafe/i,
  },
  'a backup larger than the disk limit': {
    diskMb: 1,
    breakIt: async () => {},
    archive: async () =>
      (await backupOf({ 'big.bin': randomBytes(3 * MiB), 'small.txt': 'x' }, work)).archive,
    reason: /disk limit/i,
  },
};

describe.each([true, false])('a failed restore, truncate %s', (truncate) => {
  it.each(Object.keys(FAILURES))('leaves the volume exactly as it was: %s', async (name) => {
    const failure = FAILURES[name]!;
    const target = await liveServer({
      ...(failure.diskMb ? { diskMb: failure.diskMb } : {}),
      ...(failure.archive ? { archive: await failure.archive() } : {}),
    });
    await failure.breakIt(target);
    const volume = target.server.volume;
    const before = await snapshot(volume, { mtimes: true });
    const inode = (await stat(volume)).ino;

    const batch = await restore(target.server.id, target.backupId, truncate);

    expect(await snapshot(volume, { mtimes: true })).toEqual(before);
    expect((await stat(volume)).ino).toBe(inode);
    expect(await readdir(path.dirname(volume))).not.toContain('escape.txt');
    const failed = await expectCleanFinish(target.server.id, batch, 'failed');
    expect(failed.event).toBe('server:backup.restore-failed');
    expect(Object.keys(failed.properties).sort()).toEqual(['name', 'reason']);
    expect(failed.properties.name).toBe('nightly');
    const reason = String(failed.properties.reason);
    expect(reason).toMatch(failure.reason);
    expect(reason).not.toMatch(/internal error|^\w*Error:|\n\s+at /);
    expect(reason.length).toBeGreaterThan(10);
    const [job] = await restoreJobsOf(app, target.server.id);
    expect(job?.error).toBe(reason);
    expect(job?.attempts).toBe(1);
  });

  it('fails when the backup fits the disk limit but the kept live files do not (truncate false only)', async () => {
    const fits = await backupOf({ 'backup.bin': randomBytes(Math.floor(1.2 * MiB)) }, work);
    const target = await liveServer({
      diskMb: 2,
      live: { 'live.bin': randomBytes(Math.floor(1.2 * MiB)) },
      archive: fits.archive,
    });
    const before = await snapshot(target.server.volume, { mtimes: true });
    const batch = await restore(target.server.id, target.backupId, truncate);
    if (truncate) {
      await expectCleanFinish(target.server.id, batch, 'succeeded');
      expect(await contents(target.server.volume)).toEqual(await contents(fits.source));
    } else {
      const failed = await expectCleanFinish(target.server.id, batch, 'failed');
      expect(String(failed.properties.reason)).toMatch(/disk limit/i);
      expect(await snapshot(target.server.volume, { mtimes: true })).toEqual(before);
    }
  });
});

describe('archive entries that are not restored', () => {
  it('are all counted in skipped_count, however many there are; 20 are listed', async () => {
    const file = path.join(work, 'many-links.tar.gz');
    await writeTarGz(file, [
      { path: 'kept.txt', content: 'kept' },
      ...Array.from({ length: 1005 }, (_, i) => ({ path: `links/l${i}`, type: '2', linkname: 'kept.txt' })),
    ]);
    const { server, backupId } = await liveServer({ archive: file });
    const batch = await restore(server.id, backupId, true);

    const complete = await expectCleanFinish(server.id, batch, 'succeeded');
    expect(complete.properties).toMatchObject({ name: 'nightly', files: 1, skipped_count: 1005 });
    const skipped = complete.properties.skipped as { path: string; kind: string }[];
    expect(skipped).toHaveLength(20);
    expect(skipped[0]).toEqual({ path: 'links/l0', kind: 'symlink' });
  });
});

/** `bytes` bytes of path in components of at most 250 bytes: as long as an archive may hold. */
function deepPath(bytes: number, leaf = 'f'): string {
  const parts: string[] = [];
  let length = 0;
  while (length + 251 + leaf.length < bytes) {
    parts.push(String(parts.length).padEnd(250, 'd'));
    length += 251;
  }
  parts.push(leaf.padEnd(bytes - length, 'f'));
  return parts.join('/');
}

/** Regular files under `root` as `path size mode`, read by find(1) (which has no path-length limit). */
function filesUnder(root: string): string[] {
  const out = execFileSync('find', [root, '-type', 'f', '-printf', '%P %s %m\\n'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line !== '')
    .sort();
}

describe('a path as long as an archive may hold (4,090 bytes)', () => {
  it('is restored, laid over again, and replaced, however long the volume’s own path', async () => {
    const deep = deepPath(4090);
    expect(Buffer.byteLength(deep)).toBe(4090);
    expect(Buffer.byteLength(path.join(app.config.volumesDir, '.restore-x-1.staging', deep))).toBeGreaterThan(
      4096,
    );
    const file = path.join(work, 'deep.tar.gz');
    await writeTarGz(file, [
      { path: deep, content: 'deep', mode: 0o640 },
      { path: 'top.txt', content: 'top' },
    ]);
    const { server, backupId } = await liveServer({ archive: file, live: { 'live.txt': 'live' } });

    await expectCleanFinish(server.id, await restore(server.id, backupId, false), 'succeeded');
    expect(filesUnder(server.volume)).toEqual([`${deep} 4 640`, 'live.txt 4 644', 'top.txt 3 644']);

    // Again without truncate: the live volume now has the deep directories too, and is merged.
    const again = await restore(server.id, backupId, false);
    expect((await activityOfServer(app, server.id)).filter((e) => e.batch === again).at(-1)?.event).toBe(
      'server:backup.restore-complete',
    );
    expect(filesUnder(server.volume)).toEqual([`${deep} 4 640`, 'live.txt 4 644', 'top.txt 3 644']);

    // A backup with a hostile entry after the deep one fails, and its staging tree is removed.
    // (`backup import` refuses it, so it takes the place of a stored backup.)
    const bad = await importBackup(app, server.id, backup.archive, 'hostile');
    await replaceKeepingChecksum(
      storedArchive(app, server.id, bad.uuid),
      bad.uuid,
      rawTarGz([
        { path: deepPath(4090, 'g'), content: 'deep' },
        { path: '../escape.txt', content: 'x' },
      ]),
    );
    const failedBatch = await restore(server.id, bad.uuid, true);
    const failed = (await activityOfServer(app, server.id)).filter((e) => e.batch === failedBatch).at(-1);
    expect(failed?.event).toBe('server:backup.restore-failed');
    expect(String(failed?.properties.reason)).toMatch(/leaves the volume/);
    expect(await restoreLeftovers(app)).toEqual([]);

    // A truncating restore of a shallow backup retires (and deletes) the deep tree.
    const shallow = await importBackup(app, server.id, backup.archive, 'shallow');
    await restore(server.id, shallow.uuid, true);
    expect(await contents(server.volume)).toEqual(await contents(backup.source));
    expect(await restoreLeftovers(app)).toEqual([]);
  });

  it('one byte over 4096 fails as too long, with a short reason', async () => {
    // `backup import` refuses such an archive, so it takes the place of a stored backup.
    const { server, backupId, archive } = await liveServer();
    await replaceKeepingChecksum(archive, backupId, rawTarGz([{ path: deepPath(4097), content: 'x' }]));
    const before = await snapshot(server.volume, { mtimes: true });
    const batch = await restore(server.id, backupId, true);
    const failed = await expectCleanFinish(server.id, batch, 'failed');
    const reason = String(failed.properties.reason);
    expect(reason).toMatch(/too long/);
    expect(reason.length).toBeLessThan(200);
    expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
  });
});

describe('after a failure', () => {
  it('the same server can be restored from a good backup', async () => {
    const target = await liveServer();
    await rm(target.archive);
    await restore(target.server.id, target.backupId, true);
    expect(await serverStatus(app, target.server.id)).toBeNull();
    const good = await importBackup(app, target.server.id, backup.archive, 'good');
    await mkdir(path.join(target.server.volume, 'extra'), { recursive: true });
    await restore(target.server.id, good.uuid, true);
    expect(await contents(target.server.volume)).toEqual(await contents(backup.source));
  });
});
