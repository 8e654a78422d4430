/**
 * A restore whose worker dies: killed for real (SIGKILL of a `aerie worker` process in the middle
 * of extracting), or with its files left as a crash between the two renames of the swap leaves
 * them. The next worker that claims the job finishes the restore; a job tried too often is given
 * up, and whatever it left is undone.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { restorePaths, stageRestore } from '../../src/storage/volumes/restore-files.ts';
import type { User } from '../../src/users/user.ts';
import { spawnAerie } from '../support/aerie-process.ts';
import {
  backupOf,
  bigTarGzOf,
  contents,
  snapshot,
  tempDir,
  writeIncompressibleFiles,
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
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { until } from '../support/wait.ts';

const MiB = 1024 * 1024;
const LIVE: TreeSpec = {
  'server.properties': 'motd=live\n',
  'world/level.dat': 'live level',
  'live-only.txt': { content: 'only live', mode: 0o600 },
  'logs/': { dir: true, mode: 0o750 },
  latest: { symlink: 'live-only.txt' },
};
const BACKUP: TreeSpec = {
  'server.properties': 'motd=backup\n',
  'world/level.dat': 'backup level',
  'config/app.yml': { content: 'a: 1\n', mode: 0o640 },
};
/** The small backup also holds a symlink, which a restore skips and reports. */
const SMALL: TreeSpec = { ...BACKUP, 'current.log': { symlink: 'server.properties' } };
/** What the completion entry says about the small backup, however the restore was finished. */
const SMALL_COMPLETE = {
  name: 'nightly',
  files: 3,
  skipped: [{ path: 'current.log', kind: 'symlink' }],
  skipped_count: 1,
};

let app: TestApp;
let owner: User;
let token: string;
let work: string;
let small: { source: string; archive: string };
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Restores of archive backups, as they were made before snapshots (those are tested in
  // test/backups/snapshot-*.test.ts), without the undo backup a restore takes first by default.
  app = await startTestApp({ env: { AERIE_BACKUP_FORMAT: 'archive', AERIE_RESTORE_UNDO_BACKUP: 'false' } });
  owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  work = await tempDir();
  small = await backupOf(SMALL, work);
});

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

afterAll(async () => {
  await app.close();
  await rm(work, { recursive: true, force: true });
});

/** A server with live files and one backup, and a queued restore of it. */
async function queuedRestore(archive: string, truncate: boolean) {
  const server = await createServer(app, owner);
  await writeTree(server.volume, LIVE);
  const backup = await importBackup(app, server.id, archive, 'nightly');
  const res = await postRestore(app, token, server.id, backup.uuid, { truncate });
  expect(res.statusCode, res.body).toBe(204);
  const [job] = await restoreJobsOf(app, server.id);
  const paths = restorePaths(app.config.volumesDir, server.id, job!.id);
  return {
    server,
    backupId: backup.uuid,
    jobId: job!.id,
    batch: res.headers['x-request-id'] as string,
    paths,
  };
}

/** The job row as a worker that died after claiming it leaves it: running, its lease run out. */
async function orphan(jobId: number, attempts: number): Promise<void> {
  await app.db.kysely
    .updateTable('jobs')
    .set({
      state: 'running',
      attempts,
      lease_owner: 'dead-node:1:deadbeef',
      lease_expires_at: new Date(Date.now() - 60_000).toISOString(),
    })
    .where('id', '=', jobId)
    .execute();
}

async function outcome(serverId: string, batch: string) {
  const [job] = await restoreJobsOf(app, serverId);
  const events = (await activityOfServer(app, serverId)).filter((e) => e.batch === batch);
  return { job, events, status: await serverStatus(app, serverId), leftovers: await restoreLeftovers(app) };
}

/** What restoring the small backup puts in a volume: its files, without the skipped symlink. */
async function smallRestored(): Promise<Awaited<ReturnType<typeof contents>>> {
  const files = await contents(small.source);
  delete files['current.log'];
  return files;
}

describe('a worker killed in the middle of extracting', () => {
  it(
    'leaves the volume untouched, and the next worker completes the restore',
    { timeout: 90_000 },
    async () => {
      const source = path.join(work, 'big');
      await writeIncompressibleFiles(path.join(source, 'data'), 80, 4 * MiB); // 320 MiB
      await writeTree(source, BACKUP);
      const archive = await bigTarGzOf(source, path.join(work, 'big.tar.gz'));
      const { server, jobId, batch, paths } = await queuedRestore(archive, true);
      const before = await snapshot(server.volume, { mtimes: true });

      const doomed = spawnAerie(app, ['worker', '--node', 'local'], { AERIE_JOB_LEASE_SECONDS: '1' });
      const { child, exited } = doomed;
      children.push(child);

      await until(
        async () => existsSync(paths.staging) && (await readdir(paths.staging).catch(() => [])).length > 0,
        {
          timeoutMs: 30_000,
          what: `the staging directory (worker output: ${doomed.output()})`,
          intervalMs: 10,
        },
      );
      child.kill('SIGKILL');
      await exited;
      expect(child.signalCode).toBe('SIGKILL');

      // Killed mid-way: the staging tree is there, half-written; the volume has not been touched.
      expect(existsSync(paths.staging)).toBe(true);
      expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
      const dead = await outcome(server.id, batch);
      expect(dead.job).toMatchObject({ state: 'running', attempts: 1 });
      expect(dead.job?.lease_owner).toMatch(/^local:/);
      expect(dead.status).toBe('restoring_backup');
      expect(dead.events.map((e) => e.event)).toEqual(['server:backup.restore']);

      // Once the dead worker's lease has run out, the next worker takes the job over.
      await until(() => Promise.resolve((dead.job?.lease_expires_at ?? '') < new Date().toISOString()), {
        timeoutMs: 5_000,
        what: 'the lease to expire',
        intervalMs: 10,
      });
      expect(await drainJobs(app)).toBe(1);

      expect(await contents(server.volume)).toEqual(await contents(source));
      const done = await outcome(server.id, batch);
      expect(existsSync(paths.staging)).toBe(false);
      expect(done.leftovers).toEqual([]);
      expect(done.job).toMatchObject({ id: jobId, state: 'succeeded', attempts: 2, error: null });
      expect(done.status).toBeNull();
      expect(done.events.map((e) => e.event)).toEqual([
        'server:backup.restore',
        'server:backup.restore-complete',
      ]);
    },
  );
});

describe('a worker that died between the two renames of the swap', () => {
  it.each([true, false])('is finished by the next worker (truncate %s)', async (truncate) => {
    const { server, batch, paths, jobId, backupId } = await queuedRestore(small.archive, truncate);
    const live = await contents(server.volume);
    await orphan(jobId, 1);
    await stageRestore(paths, storedArchive(app, server.id, backupId), { truncate, maxBytes: null });
    await rename(paths.volume, paths.retired); // the first rename happened, the second did not
    expect(existsSync(paths.volume)).toBe(false);

    expect(await drainJobs(app)).toBe(1);

    const expected = await smallRestored();
    if (!truncate) for (const rel of ['live-only.txt', 'logs', 'latest']) expected[rel] = live[rel]!;
    expect(await contents(server.volume)).toEqual(expected);
    const done = await outcome(server.id, batch);
    expect(existsSync(paths.retired)).toBe(false);
    expect(done.leftovers).toEqual([]);
    expect(done.job).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(done.status).toBeNull();
    expect(done.events.map((e) => e.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
    expect(done.events[1]?.properties).toEqual(SMALL_COMPLETE);
  });

  it('is finished when only the removal of the old tree was cut short', async () => {
    const { server, batch, paths, jobId, backupId } = await queuedRestore(small.archive, true);
    await orphan(jobId, 1);
    await stageRestore(paths, storedArchive(app, server.id, backupId), { truncate: true, maxBytes: null });
    await rename(paths.volume, paths.retired);
    await rename(paths.staging, paths.volume);

    expect(await drainJobs(app)).toBe(1);
    expect(await contents(server.volume)).toEqual(await smallRestored());
    const done = await outcome(server.id, batch);
    expect(done.leftovers).toEqual([]);
    expect(done.job).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(done.events.map((e) => e.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
    expect(done.events[1]?.properties).toEqual(SMALL_COMPLETE);
  });

  it('deletes a replaced tree that a worker which died after recording its restore left in the trash', async () => {
    const { server, batch, paths } = await queuedRestore(small.archive, true);
    // What a worker that died between recording a restore and deleting the tree it replaced leaves.
    await mkdir(path.dirname(paths.trash), { recursive: true });
    await writeTree(path.join(path.dirname(paths.trash), '.restore-other-1.old'), LIVE);

    expect(await drainJobs(app)).toBe(1);
    const done = await outcome(server.id, batch);
    expect(done.job).toMatchObject({ state: 'succeeded' });
    expect(done.status).toBe(null);
    // The old tree of this restore went to the trash, and the trash was emptied after the record.
    expect(done.leftovers).toEqual([]);
    expect(await contents(server.volume)).toEqual(await smallRestored());
  });

  it('is recorded, not extracted again, when the swap had finished but its completion was not recorded', async () => {
    const { server, batch, paths, jobId, backupId } = await queuedRestore(small.archive, true);
    await orphan(jobId, 1);
    await stageRestore(paths, storedArchive(app, server.id, backupId), { truncate: true, maxBytes: null });
    await rename(paths.volume, paths.retired);
    await rename(paths.staging, paths.volume);
    await rm(paths.retired, { recursive: true });
    // Written after the swap: a second extraction (truncating) would delete it.
    await writeFile(path.join(server.volume, 'after-swap.txt'), 'kept');

    expect(await drainJobs(app)).toBe(1);
    expect(await contents(server.volume)).toEqual({
      ...(await smallRestored()),
      'after-swap.txt': expect.objectContaining({ type: 'file', size: 4 }) as unknown,
    });
    const done = await outcome(server.id, batch);
    expect(done.leftovers).toEqual([]);
    expect(done.job).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(done.events.map((e) => e.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
    expect(done.events[1]?.properties).toEqual(SMALL_COMPLETE);
  });
});

describe('a job tried more often than max_attempts', () => {
  it.each([
    ['a half-built staging tree', 'staging'],
    ['the volume moved aside and nothing staged', 'retired'],
  ])('is given up and %s is undone', async (_n, state) => {
    const { server, batch, paths, jobId, backupId } = await queuedRestore(small.archive, true);
    const before = await snapshot(server.volume, { mtimes: true });
    const inode = (await stat(server.volume)).ino;
    if (state === 'staging') {
      await stageRestore(paths, storedArchive(app, server.id, backupId), { truncate: true, maxBytes: null });
    } else {
      await rename(paths.volume, paths.retired);
    }
    const [row] = await restoreJobsOf(app, server.id);
    await orphan(jobId, row!.max_attempts); // the claim that follows makes it one too many

    expect(await drainJobs(app)).toBe(1);

    expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
    expect((await stat(server.volume)).ino).toBe(inode);
    const done = await outcome(server.id, batch);
    expect(done.leftovers).toEqual([]);
    expect(done.status).toBeNull();
    expect(done.job).toMatchObject({ state: 'failed', attempts: row!.max_attempts + 1 });
    expect(done.events.map((e) => e.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-failed',
    ]);
    const failed = done.events[1]!;
    expect(Object.keys(failed.properties).sort()).toEqual(['name', 'reason']);
    expect(failed.properties.name).toBe('nightly');
    expect(failed.properties.reason).toMatch(/gave up after \d+ attempts/);
    expect(done.job?.error).toBe(failed.properties.reason);
  });

  it('records the completion, with the files and skipped entries, when the swap was cut between its renames', async () => {
    const { server, batch, paths, jobId, backupId } = await queuedRestore(small.archive, true);
    await stageRestore(paths, storedArchive(app, server.id, backupId), { truncate: true, maxBytes: null });
    await rename(paths.volume, paths.retired);
    const [row] = await restoreJobsOf(app, server.id);
    await orphan(jobId, row!.max_attempts);

    expect(await drainJobs(app)).toBe(1);

    expect(await contents(server.volume)).toEqual(await smallRestored());
    const done = await outcome(server.id, batch);
    expect(done.leftovers).toEqual([]);
    expect(done.status).toBeNull();
    expect(done.events.map((e) => e.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
    expect(done.events[1]?.properties).toEqual(SMALL_COMPLETE);
  });
});
