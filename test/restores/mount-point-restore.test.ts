/**
 * Restores onto a volume that is a mount point (a tmpfs of its own, or a bind mount of a
 * directory on the same filesystem), which can be neither renamed (EBUSY) nor linked across
 * (EXDEV): the restore is staged inside the volume and its entries swapped, truncate or merge; a
 * failure before the swap changes nothing; a crash at any point of the swap is finished by
 * recovery. Then the same through the API and the worker. Needs root (mount); skipped, saying so,
 * where mounting is not permitted.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArchive } from '../../src/storage/archive/archive-writer.ts';
import { isMountPoint } from '../../src/storage/volumes/mount-point.ts';
import {
  recoverRestore,
  restorePaths,
  savedReport,
  stageRestore,
  swapIn,
  type RestorePaths,
} from '../../src/storage/volumes/restore-files.ts';
import { activityOfServer, postRestore, restoreJobsOf, serverStatus } from '../support/restores.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

const UUID = '0b5f3c1e-7a2d-4e8f-9c6b-1d2e3f4a5b6c';
const mounted: string[] = [];
let root: string;

function mountPermitted(): boolean {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    process.stderr.write('\nSKIPPED: mounting is not permitted here (these tests need root).\n');
    return false;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}
const canMount = mountPermitted();

type Kind = 'tmpfs' | 'bind';

/** Mounts a fresh filesystem (tmpfs) or a bind mount of a sibling directory on `dir`. */
function mountOn(dir: string, kind: Kind): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
  if (kind === 'tmpfs') {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=750', 'tmpfs', dir]);
  } else {
    const source = `${path.dirname(dir)}-bind-source-${path.basename(dir)}`;
    fs.mkdirSync(source, { recursive: true, mode: 0o750 });
    execFileSync('mount', ['--bind', source, dir]);
  }
  mounted.push(dir);
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-mounts-'));
});
afterAll(() => {
  for (const dir of mounted.reverse()) execFileSync('umount', ['-l', dir]);
  fs.rmSync(root, { recursive: true, force: true });
});

function write(file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

/** Every path under `dir` (the volume's own hidden restore directories too) with its content. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(dir, rel)).sort()) {
      const relPath = rel === '' ? name : `${rel}/${name}`;
      const stats = fs.lstatSync(path.join(dir, relPath));
      if (stats.isDirectory()) {
        out[`${relPath}/`] = (stats.mode & 0o777).toString(8);
        walk(relPath);
      } else out[relPath] = fs.readFileSync(path.join(dir, relPath), 'utf8');
    }
  };
  walk('');
  return out;
}

const LIVE = {
  'server.properties': 'motd=live',
  'live-only.txt': 'only live',
  'world/level.dat': 'live level',
};
const BACKUP = {
  'server.properties': 'motd=backup',
  'world/level.dat': 'backup level',
  'config/a.yml': 'a: 1',
};

let count = 0;
async function backupOf(files: Record<string, string>): Promise<string> {
  const source = path.join(root, `source-${count}`);
  for (const [rel, content] of Object.entries(files)) write(path.join(source, rel), content);
  const archive = path.join(root, `backup-${count++}.tar.gz`);
  await createArchive(source, archive);
  return archive;
}

/** A volume mounted as `kind` in a volumes directory of its own, holding the live files. */
function mountedVolume(kind: Kind, jobId = 7): RestorePaths {
  const volumesDir = path.join(root, `volumes-${count++}`);
  const paths = restorePaths(volumesDir, UUID, jobId);
  mountOn(paths.volume, kind);
  for (const [rel, content] of Object.entries(LIVE)) write(path.join(paths.volume, rel), content);
  return paths;
}

/**
 * The volumes directory holds the volume (and the report, kept until the outcome is recorded)
 * only: nothing staged or thrown away beside it.
 */
function onlyTheVolume(paths: RestorePaths): void {
  const volumesDir = path.dirname(paths.volume);
  const trash = path.join(volumesDir, '.trash');
  const kept = new Set([UUID, '.trash', path.basename(paths.report)]);
  const left = [
    ...fs.readdirSync(volumesDir).filter((name) => !kept.has(name)),
    ...(fs.existsSync(trash) ? fs.readdirSync(trash) : []),
  ];
  expect(left).toEqual([]);
}

describe.runIf(canMount).each(['tmpfs', 'bind'] as const)('restoring onto a %s volume', (kind) => {
  it('is seen as a mount point', async () => {
    const paths = mountedVolume(kind);
    expect(await isMountPoint(paths.volume)).toBe(true);
    expect(await isMountPoint(path.join(paths.volume, 'world'))).toBe(false);
  });

  it('with truncate, makes the volume exactly the backup, and it stays the mount', async () => {
    const paths = mountedVolume(kind);
    const device = fs.statSync(paths.volume).dev;
    const archive = await backupOf(BACKUP);
    const report = await stageRestore(paths, archive, { truncate: true, maxBytes: null });
    expect(fs.existsSync(paths.inPlace.staging)).toBe(true);
    await swapIn(paths);

    expect(tree(paths.volume)).toEqual({
      'config/': '755',
      'config/a.yml': 'a: 1',
      'server.properties': 'motd=backup',
      'world/': '755',
      'world/level.dat': 'backup level',
    });
    expect(report.files).toBe(3);
    expect(fs.statSync(paths.volume).dev).toBe(device);
    expect(await isMountPoint(paths.volume)).toBe(true);
    onlyTheVolume(paths);
    expect(await savedReport(paths)).toMatchObject({ files: 3 });
  });

  it('without truncate, keeps what only the live volume has; the backup wins the rest', async () => {
    const paths = mountedVolume(kind);
    const archive = await backupOf(BACKUP);
    await stageRestore(paths, archive, { truncate: false, maxBytes: null });
    await swapIn(paths);
    expect(tree(paths.volume)).toMatchObject({
      'server.properties': 'motd=backup',
      'world/level.dat': 'backup level',
      'config/a.yml': 'a: 1',
      'live-only.txt': 'only live',
    });
    expect(Object.keys(tree(paths.volume)).filter((name) => name.startsWith('.aerie-restore'))).toEqual([]);
  });

  it('leaves the volume as it was when the archive is bad', async () => {
    const paths = mountedVolume(kind);
    const before = tree(paths.volume);
    const broken = path.join(root, `broken-${count++}.tar.gz`);
    fs.writeFileSync(broken, 'not a gzip stream');
    for (const truncate of [true, false]) {
      await expect(stageRestore(paths, broken, { truncate, maxBytes: null })).rejects.toThrow();
      expect(tree(paths.volume)).toEqual(before);
      expect(await recoverRestore(paths)).toBe('clean');
    }
  });

  describe('after a crash', () => {
    /** Staged, with the swap cut short by `crash`; then what recovery makes of it. */
    async function crashAndRecover(crash: (paths: RestorePaths) => void) {
      const paths = mountedVolume(kind);
      const archive = await backupOf(BACKUP);
      await stageRestore(paths, archive, { truncate: true, maxBytes: null });
      crash(paths);
      const outcome = await recoverRestore(paths);
      return { paths, outcome, volume: tree(paths.volume) };
    }
    const restored = {
      'config/': '755',
      'config/a.yml': 'a: 1',
      'server.properties': 'motd=backup',
      'world/': '755',
      'world/level.dat': 'backup level',
    };
    const move = (from: string, to: string, names: string[]) => {
      for (const name of names) fs.renameSync(path.join(from, name), path.join(to, name));
    };

    it('before the swap: undone, the live files untouched', async () => {
      const { paths, outcome, volume } = await crashAndRecover(() => undefined);
      expect(outcome).toBe('rolled-back');
      expect(volume).toEqual({
        'live-only.txt': 'only live',
        'server.properties': 'motd=live',
        'world/': '755',
        'world/level.dat': 'live level',
      });
      expect(await savedReport(paths)).toBeNull();
    });

    it('half-way through moving the live files out: finished', async () => {
      const { paths, outcome, volume } = await crashAndRecover((p) => {
        fs.mkdirSync(p.inPlace.moving);
        move(p.volume, p.inPlace.moving, ['live-only.txt']);
      });
      expect(outcome).toBe('completed');
      expect(volume).toEqual(restored);
      expect(await savedReport(paths)).toMatchObject({ files: 3 });
    });

    it('half-way through moving the restored files in: finished', async () => {
      const { outcome, volume } = await crashAndRecover((p) => {
        fs.mkdirSync(p.inPlace.moving);
        move(
          p.volume,
          p.inPlace.moving,
          Object.keys(LIVE).map((rel) => rel.split('/')[0]!),
        );
        fs.renameSync(p.inPlace.moving, p.inPlace.retired);
        move(p.inPlace.staging, p.volume, ['world']);
      });
      expect(outcome).toBe('completed');
      expect(volume).toEqual(restored);
    });

    it('while deleting the old files: finished', async () => {
      const { outcome, volume } = await crashAndRecover((p) => {
        fs.mkdirSync(p.inPlace.moving);
        move(p.volume, p.inPlace.moving, ['live-only.txt', 'server.properties', 'world']);
        fs.renameSync(p.inPlace.moving, p.inPlace.retired);
        move(p.inPlace.staging, p.volume, fs.readdirSync(p.inPlace.staging));
        fs.rmdirSync(p.inPlace.staging);
      });
      expect(outcome).toBe('completed');
      expect(volume).toEqual(restored);
    });
  });
});

describe.runIf(canMount)('a restore job onto a volume that is a mount point', () => {
  let app: TestApp;
  let token: string;
  let owner: Awaited<ReturnType<typeof createUser>>;

  beforeAll(async () => {
    // Restores of archive backups, as they were made before snapshots (those are tested in
    // test/backups/snapshot-*.test.ts), without the undo backup a restore takes first by default.
    app = await startTestApp({ env: { AERIE_BACKUP_FORMAT: 'archive', AERIE_RESTORE_UNDO_BACKUP: 'false' } });
    owner = await createUser(app);
    token = (await createApiKey(app, owner)).token;
  });
  afterAll(async () => {
    // The app's data directory holds the mounts: unmounted first.
    for (const dir of mounted.splice(0).reverse()) execFileSync('umount', ['-l', dir]);
    await app.close();
  });

  /** A server whose volume is a tmpfs holding the live files, and a backup of it to restore. */
  async function serverOnMount() {
    const server = await createServer(app, owner);
    mountOn(server.volume, 'tmpfs');
    for (const [rel, content] of Object.entries(LIVE)) write(path.join(server.volume, rel), content);
    const backup = await importBackup(app, server.id, await backupOf(BACKUP));
    return { server, backup };
  }

  it.each([true, false])('completes (truncate: %s) on the first attempt', async (truncate) => {
    const { server, backup } = await serverOnMount();
    const res = await postRestore(app, token, server.identifier, backup.uuid, { truncate });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);

    const [job] = await restoreJobsOf(app, server.id);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 1 });
    const files = tree(server.volume);
    expect(files).toMatchObject({ 'server.properties': 'motd=backup', 'config/a.yml': 'a: 1' });
    expect('live-only.txt' in files).toBe(!truncate);
    expect(Object.keys(files).filter((name) => name.startsWith('.aerie-restore'))).toEqual([]);
    expect(await isMountPoint(server.volume)).toBe(true);
    expect(await serverStatus(app, server.id)).toBeNull();
    const events = await activityOfServer(app, server.id, 'server:backup.restore-');
    expect(events.map((e) => e.event)).toEqual(['server:backup.restore-complete']);
  });

  it.each([true, false])(
    'refuses before any work (truncate: %s) when a filesystem is mounted inside the volume',
    async (truncate) => {
      const { server, backup } = await serverOnMount();
      // The live `world` directory is a filesystem of its own: a swap would carry it off with the
      // old tree, and deleting that tree would delete what the mount holds.
      mountOn(path.join(server.volume, 'world'), 'tmpfs');
      write(path.join(server.volume, 'world', 'live.dat'), 'live');
      const before = tree(server.volume);
      const res = await postRestore(app, token, server.identifier, backup.uuid, { truncate });
      expect(res.statusCode, res.body).toBe(204);
      await drainJobs(app);

      const [job] = await restoreJobsOf(app, server.id);
      expect(job).toMatchObject({ state: 'failed', attempts: 1 });
      const [failed] = await activityOfServer(app, server.id, 'server:backup.restore-failed');
      expect(failed?.properties.reason).toMatch(
        /^the volume has another filesystem mounted inside it \(world\); a restore would move or delete/,
      );
      expect(tree(server.volume)).toEqual(before);
      expect(await isMountPoint(path.join(server.volume, 'world'))).toBe(true);
      expect(await serverStatus(app, server.id)).toBeNull();
    },
  );
});
