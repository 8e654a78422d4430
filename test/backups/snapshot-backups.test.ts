/**
 * Snapshot backups (AERIE_BACKUP_FORMAT=snapshot, the default) end to end, through the API and
 * the command line, on real volumes: what a backup records (its files' bytes, what it added to
 * storage, its checksum), the download as a .tar.gz that GNU tar reads, restores (truncate or not)
 * and the backup each one takes first to be undone, prune, extract and check from the command
 * line, a byte of storage damaged, archive backups made before the switch kept usable beside
 * snapshots, and `--full`, which finds what a change that kept size and mtime hides.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../src/users/user.ts';
import { contents, snapshot, writeTree, type NodeInfo, type TreeSpec } from '../support/archives.ts';
import { createServer, drainJobs, type TestApp } from '../support/harness.ts';
import {
  activityOfServer,
  postRestore,
  restoreJobsOf,
  restoreLeftovers,
  storedArchive,
} from '../support/restores.ts';
import {
  backupThroughApi,
  deleteBackup,
  downloadThroughLink,
  filesUsing,
  flipByteInData,
  jsonRecord,
  listBackups,
  packFiles,
  repositoryDir,
  runCli,
  sibling,
  type BackupAttributes,
  openSnapshotSuite,
  type SnapshotSuite,
} from '../support/snapshots.ts';

const KIB = 1024;
const MIB = 1024 * KIB;
/** A fixed modification time, in whole seconds (utimes sets it back exactly). */
const FIXED_TIME = 1_700_000_000;

let app: TestApp;
let owner: User;
let token: string;
let work: string;
let suite: SnapshotSuite | undefined;

beforeAll(async () => {
  suite = await openSnapshotSuite('aerie-snapshots-');
  ({ app, owner, token, work } = suite);
});

afterAll(async () => suite?.close());

/** A small volume of real files: random content (a few chunks), modes, nesting, an empty directory. */
function volumeSpec(): TreeSpec {
  return {
    'server.properties': 'motd=snapshot\n',
    'world/level.dat': randomBytes(300 * KIB),
    'world/region/r.0.0.mca': randomBytes(1536 * KIB),
    'world/region/r.0.1.mca': randomBytes(700 * KIB),
    'config/': { dir: true, mode: 0o750 },
    'config/app.yml': { content: 'key: value\n', mode: 0o640 },
    'run.sh': { content: '#!/bin/sh\nexec java\n', mode: 0o755 },
    'empty/': { dir: true },
    'zero.bin': '',
  };
}

async function newServer() {
  const server = await createServer(app, owner);
  await writeTree(server.volume, volumeSpec());
  return server;
}

/** Files of a tree (as `contents` reads it), and their bytes. */
function fileTotals(tree: Record<string, NodeInfo>): { files: number; bytes: number } {
  const files = Object.values(tree).filter((node) => node.type === 'file');
  return { files: files.length, bytes: files.reduce((sum, node) => sum + node.size!, 0) };
}

async function restoreThroughApi(
  server: { id: string; identifier: string },
  uuid: string,
  body: Record<string, unknown>,
  via: TestApp = app,
) {
  const res = await postRestore(via, token, server.identifier, uuid, body);
  expect(res.statusCode, res.body).toBe(204);
  await drainJobs(app);
  const jobs = await restoreJobsOf(app, server.id);
  const job = jobs[jobs.length - 1]!;
  const entries = (await activityOfServer(app, server.id)).filter(
    (entry) => entry.subjects.includes(`backup:${uuid}`) && entry.event !== 'server:backup.restore',
  );
  return { job, outcome: entries[entries.length - 1] };
}

/** The directory `aerie backup extract` wrote a backup's files into (made fresh under `work`). */
async function extractWithCli(server: { id: string }, uuid: string) {
  const to = path.join(work, `extract-${uuid}`);
  const run = await runCli(app, [
    'backup',
    'extract',
    '--server',
    server.id,
    '--backup',
    uuid,
    '--to',
    to,
    '--json',
  ]);
  expect(run.code, run.output).toBe(0);
  return { to, record: jsonRecord<{ files: number; bytes: number; uuid: string }>(run) };
}

describe('a snapshot backup made through the API', () => {
  it('records its files and bytes, what it added and its checksum; an unchanged volume adds next to nothing', async () => {
    const server = await newServer();
    const volume = await contents(server.volume);
    const totals = fileTotals(volume);

    const first = await backupThroughApi(app, token, server, { name: 'first' });
    expect(first).toMatchObject({
      name: 'first',
      format: 'snapshot',
      is_successful: true,
      is_automatic: false,
      bytes: totals.bytes,
      file_count: totals.files,
    });
    expect(first.added_bytes).toBeGreaterThan(0);
    // Random content does not compress: the chunks take about what the files hold.
    expect(first.added_bytes).toBeGreaterThan(totals.bytes * 0.9);
    expect(first.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(first.checksum).toBe(`sha256:${first.sha256_hash}`);
    // The checksum is that of the snapshot record the repository keeps for the backup.
    const recordFile = path.join(repositoryDir(app, server.id), 'snapshots', first.uuid);
    expect(
      createHash('sha256')
        .update(await readFile(recordFile))
        .digest('hex'),
    ).toBe(first.sha256_hash);

    const started = Date.now();
    const second = await backupThroughApi(app, token, server, { name: 'second' });
    // Nothing new to compress: the compressing thread started ahead of need must not keep the
    // snapshot's thread alive, which would hold the backup until the 10 s stop grace ran out.
    expect(Date.now() - started).toBeLessThan(7_000);
    expect(second).toMatchObject({ format: 'snapshot', bytes: totals.bytes, file_count: totals.files });
    expect(second.checksum).not.toBe(first.checksum);
    expect(second.added_bytes).toBeGreaterThanOrEqual(0);
    expect(second.added_bytes!).toBeLessThan(totals.bytes / 100);

    const list = await listBackups(app, token, server);
    expect(list.data.map((b) => [b.attributes.name, b.attributes.format])).toEqual([
      ['second', 'snapshot'],
      ['first', 'snapshot'],
    ]);
    expect(list.meta.storage_bytes).toBe(first.added_bytes! + second.added_bytes!);
  });

  it('downloads through its signed link as a .tar.gz of exactly the volume, the same bytes every time', async () => {
    const server = await newServer();
    const backup = await backupThroughApi(app, token, server, { name: 'to download' });

    const one = await downloadThroughLink(app, token, server, backup.uuid);
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toBe('application/gzip');
    expect(one.headers.get('content-disposition')).toBe('attachment; filename="to-download.tar.gz"');
    // Made as it is sent: its length is not known beforehand.
    expect(one.headers.get('content-length')).toBeNull();
    expect(one.headers.get('transfer-encoding')).toBe('chunked');

    const file = path.join(work, `${backup.uuid}.tar.gz`);
    await writeFile(file, one.body);
    const out = path.join(work, `untarred-${backup.uuid}`);
    await mkdir(out);
    execFileSync('tar', ['-xzf', file, '-C', out]);
    expect(await contents(out)).toEqual(await contents(server.volume));

    const two = await downloadThroughLink(app, token, server, backup.uuid);
    expect(two.status).toBe(200);
    expect(two.body.equals(one.body)).toBe(true);
  });
});

describe('restoring a snapshot backup through the API', () => {
  it('makes the volume the backup (truncate) or lays it over the live files, with an undo backup unless refused', async () => {
    const server = await newServer();
    const backedUp = await contents(server.volume);
    const backup = await backupThroughApi(app, token, server, { name: 'first' });

    // The live files move on: changed, added, removed.
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=changed since\n');
    await writeFile(path.join(server.volume, 'world/level.dat'), randomBytes(300 * KIB));
    await writeTree(server.volume, {
      'world/extra.dat': randomBytes(50 * KIB),
      'live-only.txt': { content: 'only in the live volume', mode: 0o600 },
      'new-dir/inside.txt': 'inside',
    });
    await rm(path.join(server.volume, 'config/app.yml'));
    const live = await contents(server.volume);

    // truncate: exactly the backup; the files it replaced were kept as an automatic backup first.
    const truncated = await restoreThroughApi(server, backup.uuid, { truncate: true });
    expect(truncated.job.state).toBe('succeeded');
    expect(truncated.outcome?.event).toBe('server:backup.restore-complete');
    expect(await contents(server.volume)).toEqual(backedUp);
    expect(await restoreLeftovers(app)).toEqual([]);

    const undoName = `Before restoring first (restore #${truncated.job.id})`;
    const undo = (await listBackups(app, token, server)).data
      .map((b) => b.attributes)
      .find((b) => b.name === undoName);
    expect(undo).toMatchObject({ is_automatic: true, is_successful: true, format: 'snapshot' });
    expect(undo!.name.startsWith('Before restoring')).toBe(true);
    expect(truncated.outcome?.properties).toMatchObject({ undo_backup: undo!.uuid });

    // Restoring the undo backup brings back exactly what the restore replaced.
    const undone = await restoreThroughApi(server, undo!.uuid, { truncate: true });
    expect(undone.job.state).toBe('succeeded');
    expect(await contents(server.volume)).toEqual(live);

    // Without truncate, and without an undo backup: the backup wins where both have a path, the
    // files only the live volume has stay.
    const count = (await listBackups(app, token, server)).meta.backup_count;
    const merged = await restoreThroughApi(server, backup.uuid, { truncate: false, undo_backup: false });
    expect(merged.job.state).toBe('succeeded');
    expect(await contents(server.volume)).toEqual({ ...live, ...backedUp });
    expect(await readFile(path.join(server.volume, 'live-only.txt'), 'utf8')).toBe('only in the live volume');
    expect(await readFile(path.join(server.volume, 'server.properties'), 'utf8')).toBe('motd=snapshot\n');
    expect((await listBackups(app, token, server)).meta.backup_count).toBe(count);
    expect(merged.outcome?.properties).not.toHaveProperty('undo_backup');
  });

  it('takes no undo backup by default when AERIE_RESTORE_UNDO_BACKUP=false, unless the request asks', async () => {
    const server = await newServer();
    const backedUp = await contents(server.volume);
    const backup = await backupThroughApi(app, token, server, { name: 'nightly' });
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=changed\n');

    const noUndo = await sibling(app, { AERIE_RESTORE_UNDO_BACKUP: 'false' });
    try {
      const restored = await restoreThroughApi(server, backup.uuid, { truncate: true }, noUndo);
      expect(restored.job.state).toBe('succeeded');
      expect(await contents(server.volume)).toEqual(backedUp);
      expect((await listBackups(app, token, server)).data.map((b) => b.attributes.name)).toEqual(['nightly']);

      // The request's undo_backup wins over the setting.
      await writeFile(path.join(server.volume, 'server.properties'), 'motd=changed again\n');
      const asked = await restoreThroughApi(
        server,
        backup.uuid,
        { truncate: true, undo_backup: true },
        noUndo,
      );
      expect(asked.job.state).toBe('succeeded');
      const names = (await listBackups(app, token, server)).data.map((b) => b.attributes.name);
      expect(names).toEqual([`Before restoring nightly (restore #${asked.job.id})`, 'nightly']);
    } finally {
      await noUndo.close();
    }
  });
});

describe('prune, extract and check from the command line', () => {
  it(
    'reclaims what a deleted backup alone held, extracts the other exactly, and checks the repository sound',
    { timeout: 120_000 },
    async () => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, {
        'keep.bin': randomBytes(256 * KIB),
        'old.bin': randomBytes(2 * MIB),
        'notes.txt': 'first',
      });
      const older = await backupThroughApi(app, token, server, { name: 'older' });
      await rm(path.join(server.volume, 'old.bin'));
      await writeTree(server.volume, {
        'new.bin': randomBytes(MIB),
        'notes.txt': 'second',
        'sub/x.txt': 'x',
      });
      const copy = await contents(server.volume);
      const newer = await backupThroughApi(app, token, server, { name: 'newer' });
      // The volume moves on after the backup: the extract must give the backup, not the volume.
      await writeFile(path.join(server.volume, 'notes.txt'), 'third');

      await deleteBackup(app, token, server, older.uuid);
      const packsBefore = (await packFiles(repositoryDir(app, server.id))).reduce((s, p) => s + p.bytes, 0);
      const pruned = await runCli(app, ['backup', 'prune', '--server', server.identifier, '--json']);
      expect(pruned.code, pruned.output).toBe(0);
      const report = jsonRecord<{
        bytes_before: number;
        bytes_after: number;
        repositories: { server: string; snapshots: number }[];
      }>(pruned);
      expect(report.bytes_before).toBeGreaterThan(report.bytes_after);
      // old.bin (2 MiB) was only in the deleted backup.
      expect(report.bytes_before - report.bytes_after).toBeGreaterThan(2 * MIB * 0.9);
      expect(report.repositories).toEqual([expect.objectContaining({ server: server.id, snapshots: 1 })]);
      const packsAfter = (await packFiles(repositoryDir(app, server.id))).reduce((s, p) => s + p.bytes, 0);
      expect(packsAfter).toBeLessThan(packsBefore - 2 * MIB * 0.9);

      // Once pruned: the remaining backup extracts whole, and every chunk left reads back sound.
      const [{ to, record }, checked] = await Promise.all([
        extractWithCli(server, newer.uuid),
        runCli(app, ['backup', 'check', '--server', server.id, '--read-data', '--json']),
      ]);
      expect(record).toMatchObject({ uuid: newer.uuid, ...fileTotals(copy) });
      expect(await contents(to)).toEqual(copy);
      expect(checked.code, checked.output).toBe(0);
      expect(jsonRecord(checked)).toMatchObject({ read_data: true, damaged_backups: [] });
    },
  );
});

describe('a byte of storage damaged', () => {
  it(
    'is found by check --read-data, naming the backups; a restore fails naming the file and leaves the volume as it was',
    { timeout: 120_000 },
    async () => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, {
        'a.bin': randomBytes(1536 * KIB),
        'b.bin': randomBytes(1536 * KIB),
        'c.txt': 'small',
      });
      const first = await backupThroughApi(app, token, server, { name: 'first' });
      const second = await backupThroughApi(app, token, server, { name: 'second' }); // the same chunks
      await writeFile(path.join(server.volume, 'c.txt'), 'changed since');
      const { blob, pack } = await flipByteInData(repositoryDir(app, server.id));
      const damagedFiles = await filesUsing(app, server.id, first.uuid, blob);
      expect(damagedFiles).toHaveLength(1);

      const [checked, json, structure] = await Promise.all([
        runCli(app, ['backup', 'check', '--server', server.id, '--read-data']),
        runCli(app, ['backup', 'check', '--server', server.id, '--read-data', '--json']),
        runCli(app, ['backup', 'check', '--server', server.id]),
      ]);
      expect(checked.code, checked.output).not.toBe(0);
      expect(checked.output).toContain(first.uuid);
      expect(checked.output).toContain(second.uuid);
      expect(checked.output).toContain(damagedFiles[0]);
      expect(json.code).toBe(1);
      expect(jsonRecord<{ damaged_backups: string[] }>(json).damaged_backups).toEqual(
        [first.uuid, second.uuid].sort(),
      );
      // Without reading the data, nothing tells the flipped byte.
      expect(structure.code, structure.output).toBe(0);

      const before = await snapshot(server.volume, { mtimes: true });
      const restored = await restoreThroughApi(server, first.uuid, { truncate: true, undo_backup: false });
      expect(restored.job.state).toBe('failed');
      expect(restored.outcome?.event).toBe('server:backup.restore-failed');
      const reason = String(restored.outcome?.properties.reason);
      expect(reason).toContain(damagedFiles[0]);
      expect(reason).toContain(pack);
      expect(reason).toMatch(/damaged/);
      expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
      expect(await restoreLeftovers(app)).toEqual([]);
    },
  );
});

describe('archive backups made before the switch to snapshots', () => {
  it(
    'are listed, downloaded, restored and deleted beside snapshot backups',
    { timeout: 60_000 },
    async () => {
      const server = await newServer();
      const archived = await contents(server.volume);
      const archives = await sibling(app, { AERIE_BACKUP_FORMAT: 'archive' });
      let archive: BackupAttributes;
      try {
        archive = await backupThroughApi(archives, token, server, { name: 'old archive' });
      } finally {
        await archives.close();
      }
      expect(archive).toMatchObject({
        format: 'archive',
        added_bytes: null,
        file_count: fileTotals(archived).files,
      });
      const archiveFile = storedArchive(app, server.id, archive.uuid);
      expect(archive.bytes).toBe((await stat(archiveFile)).size);

      await writeTree(server.volume, { 'server.properties': 'motd=later\n', 'later.txt': 'later' });
      const snapshotted = await contents(server.volume);
      const snap = await backupThroughApi(app, token, server, { name: 'new snapshot' });
      expect(snap).toMatchObject({ format: 'snapshot', bytes: fileTotals(snapshotted).bytes });

      const list = await listBackups(app, token, server);
      expect(list.data.map((b) => [b.attributes.name, b.attributes.format])).toEqual([
        ['new snapshot', 'snapshot'],
        ['old archive', 'archive'],
      ]);
      expect(list.meta.storage_bytes).toBe(archive.bytes + snap.added_bytes!);

      for (const [backup, expected] of [
        [archive, archived],
        [snap, snapshotted],
      ] as const) {
        const download = await downloadThroughLink(app, token, server, backup.uuid);
        expect(download.status).toBe(200);
        if (backup.format === 'archive') {
          expect(download.headers.get('content-length')).toBe(String(archive.bytes));
          expect(download.body.equals(await readFile(archiveFile))).toBe(true);
        }
        const file = path.join(work, `${backup.uuid}.tar.gz`);
        await writeFile(file, download.body);
        const out = path.join(work, `untarred-${backup.uuid}`);
        await mkdir(out);
        execFileSync('tar', ['-xzf', file, '-C', out]);
        expect(await contents(out)).toEqual(expected);
      }

      await writeFile(path.join(server.volume, 'stray.txt'), 'stray');
      const fromArchive = await restoreThroughApi(server, archive.uuid, {
        truncate: true,
        undo_backup: false,
      });
      expect(fromArchive.job.state).toBe('succeeded');
      expect(await contents(server.volume)).toEqual(archived);
      const fromSnapshot = await restoreThroughApi(server, snap.uuid, { truncate: true, undo_backup: false });
      expect(fromSnapshot.job.state).toBe('succeeded');
      expect(await contents(server.volume)).toEqual(snapshotted);

      await deleteBackup(app, token, server, archive.uuid);
      await expect(stat(archiveFile)).rejects.toMatchObject({ code: 'ENOENT' });
      await deleteBackup(app, token, server, snap.uuid);
      await expect(
        stat(path.join(repositoryDir(app, server.id), 'snapshots', snap.uuid)),
      ).rejects.toMatchObject({
        code: 'ENOENT',
      });
      expect((await listBackups(app, token, server)).data).toEqual([]);
    },
  );
});

/** `aerie backup create` of the server, as its JSON record. */
async function createWithCli(server: { identifier: string }, name: string, ...flags: string[]) {
  const run = await runCli(app, [
    'backup',
    'create',
    '--server',
    server.identifier,
    '--name',
    name,
    ...flags,
    '--json',
  ]);
  expect(run.code, run.output).toBe(0);
  return jsonRecord<{ uuid: string; format: string; bytes: number; files: number; added_bytes: number }>(run);
}

/** Rewrites a file in place (same inode, same size) and puts its mtime back: only a read sees it. */
async function rewriteKeepingMetadata(file: string): Promise<Buffer> {
  const before = await stat(file);
  const changed = randomBytes(before.size);
  const handle = await open(file, 'r+');
  await handle.write(changed, 0, changed.length, 0);
  await handle.close();
  await utimes(file, FIXED_TIME, FIXED_TIME);
  return changed;
}

describe('the backup after a restore', () => {
  it(
    'does not read again the files the restore wrote (their new inodes are recorded), and reads what changed since',
    { timeout: 120_000 },
    async () => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, {
        'data.bin': randomBytes(400 * KIB),
        'keep/other.bin': randomBytes(200 * KIB),
      });
      const file = path.join(server.volume, 'data.bin');
      for (const name of ['data.bin', 'keep/other.bin'])
        await utimes(path.join(server.volume, name), FIXED_TIME, FIXED_TIME);
      const original = await readFile(file);
      const backup = await createWithCli(server, 'before');
      const inodeBefore = (await stat(file)).ino;

      const restored = await restoreThroughApi(server, backup.uuid, { truncate: true, undo_backup: false });
      expect(restored.job.state).toBe('succeeded');
      expect((await stat(file)).ino).not.toBe(inodeBefore); // written anew

      // A change only a read can see: the next backup keeps what the restore wrote, so it read
      // nothing (without the restored tree, every file's new inode would have it read them all).
      await rewriteKeepingMetadata(file);
      const after = await createWithCli(server, 'after restore');
      expect(after.added_bytes).toBeLessThan(1024);
      const { to } = await extractWithCli(server, after.uuid);
      expect((await readFile(path.join(to, 'data.bin'))).equals(original)).toBe(true);

      // A change the metadata shows is read, restore base or not.
      await writeFile(file, randomBytes(100 * KIB));
      const changed = await createWithCli(server, 'changed');
      expect(changed.added_bytes).toBeGreaterThan(90 * KIB);
      const extracted = await extractWithCli(server, changed.uuid);
      expect(await contents(extracted.to)).toEqual(await contents(server.volume));
    },
  );

  it.each([
    ['damaged', true],
    ['reclaimed by a prune', false],
  ])(
    'reads every file when the recorded tree is unusable: %s',
    { timeout: 120_000 },
    async (_case, damage) => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, { 'data.bin': randomBytes(300 * KIB) });
      const file = path.join(server.volume, 'data.bin');
      await utimes(file, FIXED_TIME, FIXED_TIME);
      const backup = await createWithCli(server, 'before');
      const restored = await restoreThroughApi(server, backup.uuid, { truncate: true, undo_backup: false });
      expect(restored.job.state).toBe('succeeded');
      const repository = repositoryDir(app, server.id);
      const base = path.join(repository, 'restore-base');
      expect(JSON.parse(await readFile(base, 'utf8'))).toMatchObject({ v: 1, backup: backup.uuid });

      if (damage) {
        await writeFile(base, '{"v":1,"tree":"not');
      } else {
        // No snapshot names the restored tree: a prune reclaims it.
        const pruned = await runCli(app, ['backup', 'prune', '--server', server.identifier, '--json']);
        expect(pruned.code, pruned.output).toBe(0);
        const { repositories } = jsonRecord<{ repositories: { blobsRemoved: number }[] }>(pruned);
        expect(repositories[0]!.blobsRemoved).toBeGreaterThan(0);
      }
      const changed = await rewriteKeepingMetadata(file);
      const after = await createWithCli(server, 'after restore');
      expect(after.added_bytes).toBeGreaterThan(changed.length * 0.9);
      const { to } = await extractWithCli(server, after.uuid);
      expect((await readFile(path.join(to, 'data.bin'))).equals(changed)).toBe(true);
    },
  );
});

describe('aerie backup create --full', () => {
  it(
    'reads every file again: a change that kept size, mtime and inode is missed without it, caught with it',
    { timeout: 120_000 },
    async () => {
      const server = await createServer(app, owner);
      await writeTree(server.volume, { 'data.bin': randomBytes(200 * KIB), 'other.txt': 'other' });
      const file = path.join(server.volume, 'data.bin');
      await utimes(file, FIXED_TIME, FIXED_TIME);
      const original = await readFile(file);

      const create = (name: string, ...flags: string[]) => createWithCli(server, name, ...flags);
      const first = await create('first');
      expect(first).toMatchObject({ format: 'snapshot', files: 2, bytes: original.length + 5 });

      // Rewritten in place (same inode), same size, and its mtime put back.
      const changed = await rewriteKeepingMetadata(file);

      const quick = await create('quick');
      expect(quick.added_bytes).toBeLessThan(1024);
      const full = await create('full', '--full');
      expect(full.added_bytes).toBeGreaterThan(changed.length * 0.9);

      const [missed, caught] = await Promise.all([
        extractWithCli(server, quick.uuid),
        extractWithCli(server, full.uuid),
      ]);
      expect((await readFile(path.join(missed.to, 'data.bin'))).equals(original)).toBe(true);
      expect((await readFile(path.join(caught.to, 'data.bin'))).equals(changed)).toBe(true);
      expect(await contents(caught.to)).toEqual(await contents(server.volume));
    },
  );
});
