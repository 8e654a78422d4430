import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArchiveError } from '../../../src/storage/archive/archive.types.ts';
import { createArchive } from '../../../src/storage/archive/archive-writer.ts';
import { create as tarCreate } from 'tar';
import {
  discardReport,
  recoverRestore,
  restorePaths,
  savedReport,
  stageRestore,
  swapIn,
  emptyTrash,
  type RestorePaths,
} from '../../../src/storage/volumes/restore-files.ts';

const UUID = '5f0c1a9e-2b1c-4c1e-9a0d-6f3e2d1c0b9a';
const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

interface Setup {
  root: string;
  paths: RestorePaths;
  outside: string;
  /** Builds a backup from a description of files (path → content; a trailing / makes a directory). */
  backup: (tree: Record<string, string>) => Promise<string>;
}

function setup(): Setup {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-'));
  roots.push(root);
  const volumesDir = path.join(root, 'volumes');
  const paths = restorePaths(volumesDir, UUID, 7);
  fs.mkdirSync(paths.volume, { recursive: true, mode: 0o750 });
  fs.chmodSync(paths.volume, 0o750);
  const outside = path.join(root, 'outside');
  write(path.join(outside, 'sentinel.txt'), 'outside');
  let count = 0;
  const backup = async (tree: Record<string, string>): Promise<string> => {
    const source = path.join(root, `backup-source-${count}`);
    fs.mkdirSync(source);
    for (const [rel, content] of Object.entries(tree)) {
      if (rel.endsWith('/')) fs.mkdirSync(path.join(source, rel), { recursive: true });
      else write(path.join(source, rel), content);
    }
    const archive = path.join(root, `backup-${count++}.tar.gz`);
    await createArchive(source, archive);
    return archive;
  };
  return { root, paths, outside, backup };
}

function write(file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

/** Every path under `root` with its kind and content (or link text), to compare before/after. */
function snapshot(root: string): Record<string, string> {
  const result: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const stats = fs.lstatSync(full);
      const rel = path.relative(root, full);
      if (stats.isSymbolicLink()) result[rel] = `link ${fs.readlinkSync(full)}`;
      else if (stats.isDirectory()) {
        result[rel] = `dir ${(stats.mode & 0o777).toString(8)}`;
        walk(full);
      } else if (stats.isFile()) result[rel] = `file ${fs.readFileSync(full, 'utf8')}`;
      else result[rel] = 'special';
    }
  };
  walk(root);
  return result;
}

const exists = (p: string) => fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;

describe('restorePaths', () => {
  it('places the staging and retired trees next to the volume', () => {
    expect(restorePaths('/srv/volumes', UUID, 42)).toEqual({
      volume: `/srv/volumes/${UUID}`,
      staging: `/srv/volumes/.restore-${UUID}-42.staging`,
      retired: `/srv/volumes/.restore-${UUID}-42.old`,
      trash: `/srv/volumes/.trash/.restore-${UUID}-42.old`,
      report: `/srv/volumes/.restore-${UUID}-42.report.json`,
      // A volume that is a mount point is restored inside itself.
      inPlace: {
        staging: `/srv/volumes/${UUID}/.aerie-restore-42.staging`,
        moving: `/srv/volumes/${UUID}/.aerie-restore-42.moving`,
        retired: `/srv/volumes/${UUID}/.aerie-restore-42.old`,
      },
    });
  });

  it('rejects a server uuid that would leave the volumes directory', () => {
    expect(() => restorePaths('/srv/volumes', '../etc', 1)).toThrow();
    expect(() => restorePaths('/srv/volumes', '..', 1)).toThrow();
  });
});

describe('stageRestore', () => {
  it('with truncate, stages exactly the backup and leaves the live volume alone', async () => {
    const { paths, backup } = setup();
    write(path.join(paths.volume, 'live-only.txt'), 'live');
    write(path.join(paths.volume, 'config.yml'), 'live config');
    const archive = await backup({ 'config.yml': 'backup config', 'world/level.dat': 'level' });
    const live = snapshot(paths.volume);

    const report = await stageRestore(paths, archive, { truncate: true, maxBytes: null });

    expect(report.files).toBe(2);
    expect(snapshot(paths.staging)).toEqual({
      'config.yml': 'file backup config',
      world: 'dir 755',
      'world/level.dat': 'file level',
    });
    expect(fs.statSync(paths.staging).mode & 0o7777).toBe(0o750);
    expect(snapshot(paths.volume)).toEqual(live);
  });

  it('without truncate, keeps live-only entries and lets the backup win every clash', async () => {
    const { paths, outside, backup } = setup();
    const v = paths.volume;
    write(path.join(v, 'config.yml'), 'live config');
    write(path.join(v, 'world/region/r.0.0.mca'), 'live region');
    write(path.join(v, 'world/level.dat'), 'live level');
    write(path.join(v, 'logs/latest.log'), 'live log');
    fs.chmodSync(path.join(v, 'logs'), 0o700);
    write(path.join(v, 'cache'), 'live file where the backup has a directory');
    fs.mkdirSync(path.join(v, 'mods'));
    fs.symlinkSync(outside, path.join(v, 'plugins'));
    fs.symlinkSync('../outside/sentinel.txt', path.join(v, 'relative-link'));
    execFileSync('mkfifo', [path.join(v, 'pipe')]);
    const archive = await backup({
      'config.yml': 'backup config',
      'world/level.dat': 'backup level',
      'cache/': '',
      mods: 'backup file where the live volume has a directory',
      'plugins/x.jar': 'jar',
    });
    const live = snapshot(v);
    const outsideBefore = snapshot(outside);

    await stageRestore(paths, archive, { truncate: false, maxBytes: null });

    const s = paths.staging;
    expect(snapshot(s)).toEqual({
      'config.yml': 'file backup config',
      world: 'dir 755',
      'world/level.dat': 'file backup level',
      'world/region': 'dir 755',
      'world/region/r.0.0.mca': 'file live region',
      logs: 'dir 700',
      'logs/latest.log': 'file live log',
      cache: 'dir 755',
      mods: 'file backup file where the live volume has a directory',
      plugins: 'dir 755',
      'plugins/x.jar': 'file jar',
      'relative-link': 'link ../outside/sentinel.txt',
    });
    // Live-only files are hard links, not copies.
    expect(fs.statSync(path.join(s, 'logs/latest.log')).ino).toBe(
      fs.statSync(path.join(v, 'logs/latest.log')).ino,
    );
    expect(snapshot(v)).toEqual(live);
    expect(snapshot(outside)).toEqual(outsideBefore);
  });

  it('keeps the mtime of a backup directory that received live entries', async () => {
    const { paths, backup } = setup();
    write(path.join(paths.volume, 'world/live.dat'), 'live');
    const archive = await backup({ 'world/backup.dat': 'backup' });

    await stageRestore(paths, archive, { truncate: true, maxBytes: null });
    const mtimeFromBackup = fs.statSync(path.join(paths.staging, 'world')).mtimeMs;
    await stageRestore(paths, archive, { truncate: false, maxBytes: null });

    expect(fs.existsSync(path.join(paths.staging, 'world/live.dat'))).toBe(true);
    expect(fs.statSync(path.join(paths.staging, 'world')).mtimeMs).toBe(mtimeFromBackup);
  });

  it('enforces maxBytes on the backup plus the kept live files', async () => {
    const { paths, backup } = setup();
    write(path.join(paths.volume, 'big.bin'), 'x'.repeat(200_000));
    const archive = await backup({ 'small.txt': 'small' });
    const live = snapshot(paths.volume);

    await stageRestore(paths, archive, { truncate: true, maxBytes: 100_000 });
    const err = await stageRestore(paths, archive, { truncate: false, maxBytes: 100_000 }).catch(
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(ArchiveError);
    expect((err as ArchiveError).reason).toBe('disk-limit');
    expect(exists(paths.staging)).toBe(false);
    expect(snapshot(paths.volume)).toEqual(live);
  });

  it('replaces a leftover staging directory and removes staging when extraction fails', async () => {
    const { root, paths, backup } = setup();
    write(path.join(paths.staging, 'leftover.txt'), 'from a dead worker');
    const archive = await backup({ 'a.txt': 'a' });

    await stageRestore(paths, archive, { truncate: true, maxBytes: null });
    expect(snapshot(paths.staging)).toEqual({ 'a.txt': 'file a' });

    const broken = path.join(root, 'broken.tar.gz');
    fs.writeFileSync(broken, fs.readFileSync(archive).subarray(0, 30));
    const err = await stageRestore(paths, broken, { truncate: false, maxBytes: null }).catch(
      (e: unknown) => e,
    );
    expect((err as ArchiveError).reason).toBe('corrupt');
    expect(exists(paths.staging)).toBe(false);
  });
});

describe('swapIn', () => {
  it('puts the staged tree in place and moves the old one to the trash, which emptyTrash deletes without following its symlinks', async () => {
    const { paths, outside, backup } = setup();
    write(path.join(paths.volume, 'old.txt'), 'old');
    fs.symlinkSync(outside, path.join(paths.volume, 'outside-link'));
    const archive = await backup({ 'new.txt': 'new' });
    await stageRestore(paths, archive, { truncate: true, maxBytes: null });

    await swapIn(paths);

    expect(snapshot(paths.volume)).toEqual({ 'new.txt': 'file new' });
    expect(exists(paths.staging)).toBe(false);
    expect(exists(paths.retired)).toBe(false);
    expect(snapshot(paths.trash)).toMatchObject({ 'old.txt': 'file old' });
    // A tree some other restore left in the trash (its worker died) goes too.
    write(path.join(path.dirname(paths.trash), 'left-by-a-crash', 'a/b.txt'), 'b');

    await emptyTrash(path.dirname(paths.volume));

    expect(fs.readdirSync(path.dirname(paths.trash))).toEqual([]);
    expect(snapshot(outside)).toEqual({ 'sentinel.txt': 'file outside' });
    expect(snapshot(paths.volume)).toEqual({ 'new.txt': 'file new' });
  });

  it('leaves emptyTrash nothing to do when no restore ever swapped', async () => {
    const { paths } = setup();
    await expect(emptyTrash(path.dirname(paths.volume))).resolves.toBeUndefined();
  });
});

describe('read-only directories', () => {
  it('are merged with their mode and removed again when the old volume is retired', async () => {
    const { paths, backup } = setup();
    write(path.join(paths.volume, 'readonly/inner/data.txt'), 'data');
    fs.chmodSync(path.join(paths.volume, 'readonly/inner'), 0o555);
    fs.chmodSync(path.join(paths.volume, 'readonly'), 0o555);
    const archive = await backup({ 'a.txt': 'a' });

    await stageRestore(paths, archive, { truncate: false, maxBytes: null });
    expect(snapshot(paths.staging)).toMatchObject({
      readonly: 'dir 555',
      'readonly/inner/data.txt': 'file data',
    });
    await swapIn(paths);
    await emptyTrash(path.dirname(paths.volume));

    expect(exists(paths.retired)).toBe(false);
    expect(exists(paths.trash)).toBe(false);
    expect(fs.readFileSync(path.join(paths.volume, 'readonly/inner/data.txt'), 'utf8')).toBe('data');
    for (const dir of ['readonly', 'readonly/inner']) fs.chmodSync(path.join(paths.volume, dir), 0o755); // for cleanup
  });
});

describe('recoverRestore', () => {
  function leave(paths: RestorePaths, dirs: { volume?: string; staging?: string; retired?: string }): void {
    fs.rmSync(paths.volume, { recursive: true, force: true });
    for (const [key, content] of Object.entries(dirs)) {
      write(path.join(paths[key as 'volume' | 'staging' | 'retired'], 'marker.txt'), content);
    }
  }

  it('reports clean when nothing is left over', async () => {
    const { paths } = setup();
    expect(await recoverRestore(paths)).toBe('clean');
    expect(exists(paths.volume)).toBe(true);
  });

  it('rolls back a restore that died before the swap', async () => {
    const { paths } = setup();
    leave(paths, { volume: 'live', staging: 'staged' });

    expect(await recoverRestore(paths)).toBe('rolled-back');
    expect(snapshot(paths.volume)).toEqual({ 'marker.txt': 'file live' });
    expect(exists(paths.staging)).toBe(false);
  });

  it('completes a swap that died between the two renames', async () => {
    const { paths } = setup();
    leave(paths, { staging: 'staged', retired: 'old' });

    expect(await recoverRestore(paths)).toBe('completed');
    expect(snapshot(paths.volume)).toEqual({ 'marker.txt': 'file staged' });
    expect(exists(paths.staging)).toBe(false);
    expect(exists(paths.retired)).toBe(false);
  });

  it('puts the old volume back when only the retired tree is left', async () => {
    const { paths } = setup();
    leave(paths, { retired: 'old' });

    expect(await recoverRestore(paths)).toBe('rolled-back');
    expect(snapshot(paths.volume)).toEqual({ 'marker.txt': 'file old' });
    expect(exists(paths.retired)).toBe(false);
  });

  it('finishes deleting the retired tree after a completed swap, without following its symlinks', async () => {
    const { paths, outside } = setup();
    leave(paths, { volume: 'restored', retired: 'old' });
    fs.symlinkSync(outside, path.join(paths.retired, 'outside-link'));

    expect(await recoverRestore(paths)).toBe('completed');
    expect(snapshot(paths.volume)).toEqual({ 'marker.txt': 'file restored' });
    expect(exists(paths.retired)).toBe(false);
    expect(snapshot(outside)).toEqual({ 'sentinel.txt': 'file outside' });
  });

  it('rolls back a staging tree left with no volume at all', async () => {
    const { paths } = setup();
    leave(paths, { staging: 'staged' });

    expect(await recoverRestore(paths)).toBe('rolled-back');
    expect(exists(paths.staging)).toBe(false);
  });

  it('is idempotent', async () => {
    const { paths } = setup();
    leave(paths, { staging: 'staged', retired: 'old' });

    expect(await recoverRestore(paths)).toBe('completed');
    expect(await recoverRestore(paths)).toBe('clean');
    expect(snapshot(paths.volume)).toEqual({ 'marker.txt': 'file staged' });
  });
});

describe('the saved report', () => {
  it('is saved with staging, and read back once that tree has been swapped in as the volume', async () => {
    const { paths, backup } = setup();
    const archive = await backup({ 'a.txt': 'a', 'dir/b.txt': 'b' });
    const report = await stageRestore(paths, archive, { truncate: true, maxBytes: null });
    expect(exists(paths.report)).toBe(true);
    expect(await savedReport(paths)).toBeNull(); // the volume is not the staged tree (yet)

    await swapIn(paths);

    expect(await savedReport(paths)).toEqual(report);
    // Swapped in and cleaned up, outcome not recorded: the report says the restore completed.
    expect(await recoverRestore(paths)).toBe('completed');
    expect(await recoverRestore(paths)).toBe('completed');
    await discardReport(paths);
    expect(exists(paths.report)).toBe(false);
    expect(await recoverRestore(paths)).toBe('clean');
  });

  it('is removed, before the staging tree, when a restore is rolled back', async () => {
    const { paths, backup } = setup();
    await stageRestore(paths, await backup({ 'a.txt': 'a' }), { truncate: true, maxBytes: null });

    expect(await recoverRestore(paths)).toBe('rolled-back');
    expect(exists(paths.report)).toBe(false);
    expect(exists(paths.staging)).toBe(false);
  });

  it('is ignored and removed when the tree it describes never became the volume', async () => {
    const { paths, backup } = setup();
    await stageRestore(paths, await backup({ 'a.txt': 'a' }), { truncate: true, maxBytes: null });
    fs.rmSync(paths.staging, { recursive: true }); // e.g. a stalled worker's, removed by another

    expect(await recoverRestore(paths)).toBe('clean');
    expect(exists(paths.report)).toBe(false);
  });

  it('lists at most 100 skipped entries and counts the rest', async () => {
    const { root, paths } = setup();
    const source = path.join(root, 'links');
    fs.mkdirSync(source);
    for (let i = 0; i < 150; i++) fs.symlinkSync('target', path.join(source, `l${i}`));
    const archive = path.join(root, 'links.tar.gz');
    await tarCreate({ gzip: true, file: archive, cwd: source }, fs.readdirSync(source));

    const report = await stageRestore(paths, archive, { truncate: true, maxBytes: null });
    expect(report.skipped).toHaveLength(150);
    await swapIn(paths);

    const saved = await savedReport(paths);
    expect(saved?.skipped).toEqual(report.skipped.slice(0, 100));
    expect(saved?.skippedOmitted).toBe(50);
  });
});
