/**
 * Snapshot backups whose storage is hostile: trees, records and packs written by hand (as someone
 * who can write to the backup store could), each recorded as a successful backup of a server.
 * A restore through the API must fail, say why, and leave the volume exactly as it was (nothing
 * written outside it either); `aerie backup extract` must refuse the same backup. The cases are
 * those the archive attack tests cover, in a snapshot's terms: unusable names (`..`, `.`, `/`,
 * NUL, 256 bytes, absolute-looking), duplicate or unsorted entries, unknown kinds, files whose
 * chunks lie about their size or are unknown, a tree that names one subtree thousands of times
 * (held to the server's disk limit), a path past 4096 bytes, a record that is not the one the
 * backup's checksum names, a missing record, a missing pack.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobId, snapshotKey } from '../../src/storage/repository/repository.ts';
import type { User } from '../../src/users/user.ts';
import { snapshot, writeTree } from '../support/archives.ts';
import { createServer, drainJobs, type TestApp } from '../support/harness.ts';
import {
  activityOfServer,
  postRestore,
  restoreJobsOf,
  restoreLeftovers,
  serverStatus,
} from '../support/restores.ts';
import {
  backupThroughApi,
  dirEntry,
  downloadThroughLink,
  fileEntry,
  insertSnapshotBackup,
  plantSnapshot,
  repositoryDir,
  runCli,
  withRepository,
  type Planted,
  type RawEntry,
  type SnapshotForge,
  openSnapshotSuite,
  type SnapshotSuite,
} from '../support/snapshots.ts';

const KIB = 1024;

let app: TestApp;
let owner: User;
let token: string;
let work: string;
let suite: SnapshotSuite | undefined;

beforeAll(async () => {
  suite = await openSnapshotSuite('aerie-hostile-');
  ({ app, owner, token, work } = suite);
});

afterAll(async () => suite?.close());

/** What every server's volume holds before the hostile restore: what must still be there after. */
const LIVE = {
  'server.properties': 'motd=live\n',
  'world/level.dat': 'live level',
  'world/region/r.0.0.mca': randomBytes(64 * KIB),
  'config/app.yml': { content: 'key: live\n', mode: 0o640 },
};

/** Every path under `root` whose last component matches `pattern` (nothing followed through links). */
async function findNamed(root: string, pattern: RegExp): Promise<string[]> {
  const found: string[] = [];
  const visit = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(dir, entry.name);
      if (pattern.test(entry.name)) found.push(full);
      if (entry.isDirectory()) await visit(full);
    }
  };
  await visit(root);
  return found;
}

/**
 * Whether the signed-link download of a backup refuses to give a whole archive: an error status,
 * a response cut short, or a body that is no complete .tar.gz.
 */
async function downloadRefused(server: { identifier: string }, backupId: string): Promise<boolean> {
  let body: Buffer;
  try {
    const download = await downloadThroughLink(app, token, server, backupId);
    if (download.status !== 200) return true;
    body = download.body;
  } catch {
    return true; // the response was cut short
  }
  const file = path.join(work, `${backupId}.tar.gz`);
  await writeFile(file, body);
  try {
    execFileSync('tar', ['-tzf', file], { stdio: 'pipe' });
    return false;
  } catch {
    return true;
  }
}

/** A root tree with a harmless file first, then `entries` (as they are given). */
async function rootWith(forge: SnapshotForge, entries: RawEntry[]): Promise<string> {
  return forge.tree([await forge.file('a-first.txt', Buffer.from('harmless')), ...entries]);
}

/** A root tree with a harmless file, and `entries` inside directory `world`. */
async function nestedIn(forge: SnapshotForge, entries: RawEntry[]): Promise<string> {
  return rootWith(forge, [dirEntry('world', await forge.tree(entries))]);
}

interface HostileCase {
  /** Builds the hostile snapshot's blobs, returns its root tree. */
  build: (forge: SnapshotForge) => Promise<string>;
  /** Damage done after the snapshot is stored and recorded (a file removed, a checksum changed). */
  after?: (target: { serverId: string; planted: Planted }) => Promise<void>;
  /** What the failure says. */
  reason: RegExp;
  diskMb?: number;
  /** Also refused by the real `aerie backup extract` (a process of its own); in-process otherwise. */
  cli?: boolean;
  /** Left out of the extract (it has no disk limit: a bomb would fill the disk). */
  noExtract?: boolean;
  /** Also refused by the download through a signed link (the same reading as a restore's). */
  download?: true;
}

const ESCAPE = /^escape/;
const UNUSABLE =
  /the backup's stored data is damaged: tree [0-9a-f]{64} is damaged: an entry has an unusable name/;

const CASES: Record<string, HostileCase> = {
  'an entry named ..': {
    build: async (forge) =>
      rootWith(forge, [
        dirEntry('..', await forge.tree([await forge.file('escape.txt', Buffer.from('out'))])),
      ]),
    reason: UNUSABLE,
    cli: true,
    download: true,
  },
  'an entry named .': {
    build: async (forge) =>
      nestedIn(forge, [dirEntry('.', await forge.tree([await forge.file('escape.txt', Buffer.from('x'))]))]),
    reason: UNUSABLE,
  },
  'an entry whose name holds /': {
    build: async (forge) => rootWith(forge, [await forge.file('../../escape.txt', Buffer.from('out'))]),
    reason: UNUSABLE,
  },
  'an entry whose name holds NUL': {
    build: async (forge) => nestedIn(forge, [await forge.file('escape\0.txt', Buffer.from('nul'))]),
    reason: UNUSABLE,
  },
  'an entry whose name is 256 bytes': {
    build: async (forge) => nestedIn(forge, [await forge.file('n'.repeat(256), Buffer.from('long'))]),
    reason: UNUSABLE,
  },
  'an entry whose name is 128 two-byte characters (256 bytes)': {
    build: async (forge) => nestedIn(forge, [await forge.file('é'.repeat(128), Buffer.from('long'))]),
    reason: UNUSABLE,
  },
  'an entry with an absolute-looking name': {
    build: async (forge) =>
      rootWith(forge, [await forge.file('/tmp/escape-absolute.txt', Buffer.from('abs'))]),
    reason: UNUSABLE,
  },
  'an entry named /': {
    build: async (forge) => rootWith(forge, [dirEntry('/', await forge.tree([]))]),
    reason: UNUSABLE,
  },
  'an entry with an empty name': {
    build: async (forge) => nestedIn(forge, [await forge.file('', Buffer.from('empty name'))]),
    reason: UNUSABLE,
  },
  'two entries of the same name': {
    build: async (forge) =>
      nestedIn(forge, [
        await forge.file('twice.txt', Buffer.from('one')),
        await forge.file('twice.txt', Buffer.from('two')),
      ]),
    reason: /tree [0-9a-f]{64} is damaged: its entries are not sorted, or repeat a name/,
  },
  'a file and a directory of the same name': {
    build: async (forge) =>
      nestedIn(forge, [
        dirEntry('both', await forge.tree([await forge.file('inner.txt', Buffer.from('in'))])),
        await forge.file('both', Buffer.from('file')),
      ]),
    reason: /its entries are not sorted, or repeat a name/,
  },
  'entries out of order': {
    build: async (forge) =>
      nestedIn(forge, [
        await forge.file('b.txt', Buffer.from('b')),
        await forge.file('a.txt', Buffer.from('a')),
      ]),
    reason: /its entries are not sorted, or repeat a name/,
  },
  'an entry of an unknown kind (a symlink)': {
    build: async (forge) =>
      nestedIn(forge, [{ name: 'link', type: 'symlink', mode: 0o777, mtime: 0, target: '/etc/passwd' }]),
    reason: /link is of an unknown kind/,
    download: true,
  },
  'a file whose chunks hold more than its size': {
    build: async (forge) =>
      nestedIn(forge, [await forge.file('short.bin', randomBytes(1000), { size: 999 })]),
    reason: /short\.bin: its chunks hold 1000 bytes, not the 999 it should/,
  },
  'a file whose chunks hold less than its size': {
    build: async (forge) =>
      nestedIn(forge, [await forge.file('long.bin', randomBytes(1000), { size: 5000 })]),
    reason: /long\.bin: its chunks hold 1000 bytes, not the 5000 it should/,
  },
  'a file naming a chunk no pack holds': {
    build: async (forge) =>
      nestedIn(forge, [fileEntry('ghost.bin', 10, [blobId(Buffer.from(`never stored ${Math.random()}`))])]),
    reason: /world\/ghost\.bin: chunk [0-9a-f]{64} is in no pack of the index/,
    cli: true,
    download: true,
  },
  'a file naming a tree as its chunk': {
    build: async (forge) => {
      const tree = await forge.tree([]);
      return nestedIn(forge, [fileEntry('tree-as-data.bin', 42, [tree])]);
    },
    reason: /tree-as-data\.bin: chunk [0-9a-f]{64} is in no pack of the index/,
  },
  'a directory naming a chunk as its tree': {
    build: async (forge) => nestedIn(forge, [dirEntry('dir', await forge.chunk(randomBytes(500)))]),
    reason: /tree [0-9a-f]{64} is damaged: it is not JSON/,
  },
  'a tree naming one subtree thousands of times (a bomb of 16 GB)': {
    build: async (forge) => {
      const file = await forge.file('f.bin', randomBytes(256 * KIB));
      const leaf = await forge.tree([file]);
      const names = (n: number) => Array.from({ length: n }, (_, i) => `d${String(i).padStart(4, '0')}`);
      const middle = await forge.tree(names(64).map((name) => dirEntry(name, leaf)));
      return forge.tree(names(1000).map((name) => dirEntry(name, middle)));
    },
    reason: /the restored files would exceed the disk limit of 4194304 bytes/,
    diskMb: 4,
    noExtract: true,
  },
  'a path longer than 4096 bytes, by nesting': {
    build: async (forge) => {
      let tree = await forge.tree([await forge.file('deep.txt', Buffer.from('deep'))]);
      for (let level = 0; level < 21; level++) tree = await forge.tree([dirEntry('d'.repeat(200), tree)]);
      return rootWith(forge, [dirEntry('nest', tree)]);
    },
    reason: /is too long/,
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
    reason: /the backup (archive )?does not match its checksum/,
    cli: true,
    download: true,
  },
  'a snapshot record of another backup': {
    build: async (forge) => rootWith(forge, []),
    after: async ({ serverId, planted }) => {
      await withRepository(app, serverId, async (_repository, store) => {
        const other = { ...planted.record, backup: '00000000-0000-4000-8000-000000000000' };
        await store.put(snapshotKey(planted.backupId), [Buffer.from(JSON.stringify(other))]);
      });
    },
    reason: /the snapshot of backup [0-9a-f-]{36} is damaged: it belongs to another backup/,
  },
  'an index object that is not JSON': {
    build: async (forge) => rootWith(forge, []),
    after: async ({ serverId }) => {
      await writeFile(path.join(repositoryDir(app, serverId), 'index', 'f'.repeat(64)), 'not JSON');
    },
    reason: /index\/f{64} is damaged: it is not JSON/,
  },
  'a missing snapshot record': {
    build: async (forge) => rootWith(forge, []),
    after: async ({ serverId, planted }) => {
      await rm(path.join(repositoryDir(app, serverId), ...snapshotKey(planted.backupId).split('/')));
    },
    reason: /the snapshot of this backup is missing from storage/,
    cli: true,
    download: true,
  },
  'a missing pack': {
    build: async (forge) => nestedIn(forge, [await forge.file('lost.bin', randomBytes(20 * KIB))]),
    after: async ({ serverId, planted }) => {
      const pack = await withRepository(app, serverId, async (repository) => {
        const world = (await repository.readTree(planted.record.tree)).entries.find(
          (e) => e.name === 'world',
        )!;
        const lost = (await repository.readTree((world as { tree: string }).tree)).entries[0]!;
        return repository.location((lost as { chunks: string[] }).chunks[0]!)!.pack;
      });
      await rm(path.join(repositoryDir(app, serverId), 'packs', pack.slice(0, 2), pack));
    },
    // The harmless file's chunk is in the same pack: it is the first to need it.
    reason: /a-first\.txt: pack [0-9a-f]{64} is missing \(it holds blob [0-9a-f]{64}\)/,
    download: true,
  },
};

describe('a restore of a hostile snapshot', () => {
  let n = 0;
  for (const [name, hostile] of Object.entries(CASES)) {
    // Both ways of restoring, one case in two.
    const truncate = n++ % 2 === 0;
    it(`fails and changes nothing: ${name}`, { timeout: 60_000 }, async () => {
      const server = await createServer(app, owner, { diskMb: hostile.diskMb ?? 0 });
      await writeTree(server.volume, LIVE);
      const planted = await plantSnapshot(app, server.id, hostile.build);
      await insertSnapshotBackup(app, server.id, planted);
      await hostile.after?.({ serverId: server.id, planted });
      const before = await snapshot(server.volume, { mtimes: true });

      const started = Date.now();
      const res = await postRestore(app, token, server.id, planted.backupId, {
        truncate,
        undo_backup: false,
      });
      expect(res.statusCode, res.body).toBe(204);
      await drainJobs(app);
      const took = Date.now() - started;

      const jobs = await restoreJobsOf(app, server.id);
      expect(jobs.map((job) => job.state)).toEqual(['failed']);
      const entries = await activityOfServer(app, server.id);
      expect(entries.map((entry) => entry.event)).toEqual([
        'server:backup.restore',
        'server:backup.restore-failed',
      ]);
      const reason = String(entries[1]!.properties.reason);
      expect(reason).toMatch(hostile.reason);
      expect(jobs[0]!.error).toMatch(hostile.reason);

      expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
      expect(await serverStatus(app, server.id)).toBeNull();
      expect(await restoreLeftovers(app)).toEqual([]);
      expect(await findNamed(app.dataDir, ESCAPE)).toEqual([]);
      if (hostile.diskMb !== undefined) expect(took).toBeLessThan(20_000);

      if (hostile.noExtract === true) return;
      if (hostile.download === true) expect(await downloadRefused(server, planted.backupId)).toBe(true);
      const to = path.join(work, `extract-${planted.backupId}`);
      if (hostile.cli === true) {
        const run = await runCli(app, [
          'backup',
          'extract',
          '--server',
          server.id,
          '--backup',
          planted.backupId,
          '--to',
          to,
        ]);
        expect(run.code, run.output).not.toBe(0);
        expect(run.output).toMatch(hostile.reason);
      } else {
        await expect(
          app.services.backupManagement.extractTo(server.id, planted.backupId, to),
        ).rejects.toThrow(hostile.reason);
      }
      expect(await findNamed(work, ESCAPE)).toEqual([]);
      await expect(stat('/tmp/escape-absolute.txt')).rejects.toMatchObject({ code: 'ENOENT' });
    });
  }
});

describe('a hostile snapshot that can be restored safely', () => {
  it('strips setuid, setgid and sticky bits from what it restores', async () => {
    const server = await createServer(app, owner);
    const planted = await plantSnapshot(app, server.id, async (forge) =>
      forge.tree([
        dirEntry('dir', await forge.tree([]), { mode: 0o7777 }),
        await forge.file('suid.sh', Buffer.from('#!/bin/sh\n'), { mode: 0o6755 }),
      ]),
    );
    await insertSnapshotBackup(app, server.id, planted);
    const res = await postRestore(app, token, server.id, planted.backupId, {
      truncate: true,
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    expect((await restoreJobsOf(app, server.id)).map((job) => job.state)).toEqual(['succeeded']);
    expect((await stat(path.join(server.volume, 'suid.sh'))).mode & 0o7777).toBe(0o755);
    expect((await stat(path.join(server.volume, 'dir'))).mode & 0o7777).toBe(0o777);
  });

  it('takes a sound undo backup first even when the backup restored is the newest snapshot and hostile', async () => {
    const server = await createServer(app, owner);
    await writeTree(server.volume, LIVE);
    const live = await snapshot(server.volume);
    await backupThroughApi(app, token, server, { name: 'genuine' });
    const planted = await plantSnapshot(app, server.id, async (forge) =>
      rootWith(forge, [dirEntry('..', await forge.tree([await forge.file('escape.txt', Buffer.from('x'))]))]),
    );
    await insertSnapshotBackup(app, server.id, planted);
    const res = await postRestore(app, token, server.id, planted.backupId, { truncate: true });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const [job] = await restoreJobsOf(app, server.id);
    expect(job?.state).toBe('failed');
    const undo = await app.db.kysely
      .selectFrom('backups')
      .select(['id', 'is_successful'])
      .where('server_id', '=', server.id)
      .where('name', '=', `Before restoring forged (restore #${job!.id})`)
      .executeTakeFirstOrThrow();
    expect(Number(undo.is_successful)).toBe(1);
    const to = path.join(work, `undo-${undo.id}`);
    await app.services.backupManagement.extractTo(server.id, undo.id, to);
    const extracted = await snapshot(to);
    expect({ ...extracted, '': live['']! }).toEqual(live);
  });
});

describe('a snapshot record swapped by someone who can write to storage but not to the database', () => {
  it('is refused for its checksum before anything is extracted, not once a bomb has filled the disk limit', async () => {
    const server = await createServer(app, owner, { diskMb: 4 });
    await writeTree(server.volume, LIVE);
    const genuine = await backupThroughApi(app, token, server, { name: 'genuine' });
    // The record now names a tree that expands to 16 GB; the backup's checksum is unchanged.
    const bomb = await plantSnapshot(
      app,
      server.id,
      CASES['a tree naming one subtree thousands of times (a bomb of 16 GB)']!.build,
    );
    await withRepository(app, server.id, async (_repository, store) => {
      const swapped = { ...bomb.record, backup: genuine.uuid };
      await store.put(snapshotKey(genuine.uuid), [Buffer.from(JSON.stringify(swapped))]);
    });
    const before = await snapshot(server.volume, { mtimes: true });

    const res = await postRestore(app, token, server.id, genuine.uuid, {
      truncate: true,
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const [job] = await restoreJobsOf(app, server.id);
    expect(job?.state).toBe('failed');
    expect(job?.error).toMatch(/the backup (archive )?does not match its checksum/);
    expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
    // (Not tried with `aerie backup extract`: it has no disk limit, and does not look at the
    // checksum; it would write the 16 GB.)
  });
});
