/**
 * A partial restore's file work, without the API: RestoreSelection (what a chosen path restores,
 * which directories only hold it, what the backup writes into staging; a path under another chosen
 * one collapsed; what it refuses), and stageRestore with `only` then swapIn on real directories and
 * real .tar.gz files. What is chosen ends as the backup has it (with truncate, exactly); what is
 * not stays as the live volume has it, the directories above a chosen path keeping their live mode
 * and mtime; the disk limit counts the merged result; entries outside the selection are never
 * written, yet an unsafe or contradictory archive is still refused as a whole.
 */
import { randomBytes } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  readFile,
  readdir,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArchiveError } from '../../src/storage/archive/archive.types.ts';
import { RestoreSelection } from '../../src/storage/volumes/restore-selection.ts';
import {
  restorePaths,
  stageRestore,
  swapIn,
  type RestorePaths,
} from '../../src/storage/volumes/restore-files.ts';
import { contents, tarGzOf, writeTree, type TreeSpec } from '../support/archives.ts';
import {
  archive as rawArchive,
  archiveError,
  exists,
  makeLayout,
  outsideSnapshot,
  removeLayouts,
  type Layout,
} from './archive/hostile-layout.ts';

afterEach(removeLayouts);

describe('RestoreSelection', () => {
  const selection = new RestoreSelection(['world/region', 'server.properties', 'plugins/a/b.jar']);

  it('restores a chosen path and everything under it, and nothing beside or above it', () => {
    for (const rel of ['world/region', 'world/region/r.0.0.mca', 'world/region/deep/x', 'server.properties'])
      expect(selection.restores(rel), rel).toBe(true);
    for (const rel of [
      '',
      'world',
      'world/regions',
      'world/region2',
      'world/level.dat',
      'server.properties2',
    ])
      expect(selection.restores(rel), rel).toBe(false);
    // A chosen file has nothing under it, but the rule is by path: it would be restored too.
    expect(selection.restores('server.properties/x')).toBe(true);
  });

  it('holds exactly the directories above a chosen path, the volume’s root included', () => {
    for (const rel of ['', 'world', 'plugins', 'plugins/a']) expect(selection.holds(rel), rel).toBe(true);
    for (const rel of ['world/region', 'world/region/x', 'plugins/a/b.jar', 'logs', 'plug', 'worl'])
      expect(selection.holds(rel), rel).toBe(false);
  });

  it('wants the backup’s entries that are held or restored, and no other', () => {
    for (const rel of ['', 'world', 'world/region', 'world/region/r.0.0.mca', 'plugins/a', 'plugins/a/b.jar'])
      expect(selection.wants(rel), rel).toBe(true);
    for (const rel of ['logs', 'logs/latest.log', 'world/level.dat', 'plugins/c.jar', 'plugins/a/c.jar'])
      expect(selection.wants(rel), rel).toBe(false);
  });

  it('collapses a path under another chosen one, and a path given twice, into one sorted list', () => {
    const nested = new RestoreSelection(['world/region/r.0.0.mca', 'world', 'b', 'world/region', 'b', 'a/x']);
    expect(nested.paths).toEqual(['a/x', 'b', 'world']);
    // `world` holds nothing: it is chosen, so it is restored, not merely a directory above one.
    expect(nested.holds('world')).toBe(false);
    expect(nested.restores('world/level.dat')).toBe(true);
  });

  it('refuses no paths, the volume itself, an absolute path and a path ending in /', () => {
    for (const paths of [[], [''], ['/world'], ['world/'], ['ok', '']])
      expect(() => new RestoreSelection(paths), JSON.stringify(paths)).toThrow(
        'a partial restore names paths inside the volume',
      );
  });
});

describe('stageRestore with `only`, then swapIn, on a live volume', () => {
  let jobId = 0;

  interface Setup {
    layout: Layout;
    paths: RestorePaths;
    /** A real .tar.gz of `spec` (written by writeTree, archived by node-tar). */
    backup: (spec: TreeSpec, touch?: (source: string) => Promise<void>) => Promise<string>;
  }

  async function setup(live: TreeSpec): Promise<Setup> {
    const layout = await makeLayout();
    await writeTree(layout.volume, live);
    jobId += 1;
    let made = 0;
    const backup = async (spec: TreeSpec, touch?: (source: string) => Promise<void>) => {
      const source = path.join(layout.archives, `source-${made}`);
      await writeTree(source, spec);
      await touch?.(source);
      return tarGzOf(source, path.join(layout.archives, `backup-${made++}.tar.gz`));
    };
    return { layout, paths: restorePaths(layout.volumesDir, layout.uuid, jobId), backup };
  }

  async function restore(
    { paths }: Setup,
    archive: string,
    only: string[],
    options: { truncate: boolean; maxBytes?: number | null },
  ) {
    const report = await stageRestore(paths, archive, {
      truncate: options.truncate,
      maxBytes: options.maxBytes ?? null,
      only: new RestoreSelection(only),
    });
    await swapIn(paths);
    return report;
  }

  const text = (file: string) => readFile(file, 'utf8');

  it('without truncate, lays the backup’s version over a chosen file and keeps live-only files in a chosen directory', async () => {
    const s = await setup({
      'config.yml': 'live config',
      'world/level.dat': 'live level',
      'world/live-only.dat': 'live only',
      'world/region/r.0.0.mca': 'live region',
      'logs/latest.log': 'live log',
    });
    const file = await s.backup({
      'config.yml': 'backup config',
      'world/level.dat': 'backup level',
      'world/region/r.0.0.mca': 'backup region',
      'world/region/r.1.1.mca': 'backup-only region',
      'backup-only.txt': 'not chosen',
    });

    const report = await restore(s, file, ['config.yml', 'world'], { truncate: false });

    const v = s.layout.volume;
    expect(await text(path.join(v, 'config.yml'))).toBe('backup config');
    expect(await text(path.join(v, 'world/level.dat'))).toBe('backup level');
    expect(await text(path.join(v, 'world/region/r.0.0.mca'))).toBe('backup region');
    expect(await text(path.join(v, 'world/region/r.1.1.mca'))).toBe('backup-only region');
    expect(await text(path.join(v, 'world/live-only.dat'))).toBe('live only');
    expect(await text(path.join(v, 'logs/latest.log'))).toBe('live log');
    // The backup's file outside the selection is not brought back.
    expect(await exists(path.join(v, 'backup-only.txt'))).toBe(false);
    // The report counts what was written: the chosen files, not the whole backup.
    expect(report.files).toBe(4);
  });

  it('with truncate, removes what only the live volume has under a chosen directory, and nothing outside it', async () => {
    const s = await setup({
      'world/level.dat': 'live level',
      'world/added.txt': 'beside the chosen directory',
      'world/region/r.0.0.mca': 'live region',
      'world/region/r.9.9.mca': 'added since the backup',
      'world/region/sub/deep.txt': 'added since too',
      'logs/latest.log': 'live log',
      'server.properties': 'motd=live',
    });
    const file = await s.backup({
      'world/level.dat': 'backup level',
      'world/region/r.0.0.mca': 'backup region',
      'server.properties': 'motd=backup',
    });
    const before = await contents(s.layout.volume);

    await restore(s, file, ['world/region'], { truncate: true });

    const after = await contents(s.layout.volume);
    const region = Object.keys(after).filter((rel) => rel.startsWith('world/region'));
    expect(region.sort()).toEqual(['world/region', 'world/region/r.0.0.mca']);
    expect(await text(path.join(s.layout.volume, 'world/region/r.0.0.mca'))).toBe('backup region');
    // Everything outside the chosen directory is exactly the live volume's.
    for (const [rel, node] of Object.entries(before)) {
      if (rel.startsWith('world/region')) continue;
      expect(after[rel], rel).toEqual(node);
    }
    expect(
      Object.keys(after)
        .filter((rel) => !rel.startsWith('world/region'))
        .sort(),
    ).toEqual(
      Object.keys(before)
        .filter((rel) => !rel.startsWith('world/region'))
        .sort(),
    );
  });

  it('with truncate, a chosen file ends as the backup has it and its live siblings stay', async () => {
    const s = await setup({ 'a/keep.txt': 'live sibling', 'a/chosen.txt': 'live chosen' });
    const file = await s.backup({ 'a/chosen.txt': 'backup chosen', 'a/other.txt': 'backup other' });
    await restore(s, file, ['a/chosen.txt'], { truncate: true });
    expect(Object.keys(await contents(s.layout.volume)).sort()).toEqual(['a', 'a/chosen.txt', 'a/keep.txt']);
    expect(await text(path.join(s.layout.volume, 'a/keep.txt'))).toBe('live sibling');
    expect(await text(path.join(s.layout.volume, 'a/chosen.txt'))).toBe('backup chosen');
  });

  for (const truncate of [false, true]) {
    it(`keeps the live mode and mtime of the directories above a chosen path (truncate ${truncate})`, async () => {
      const s = await setup({
        'world/region/r.0.0.mca': 'live region',
        'world/level.dat': 'live level',
      });
      const v = s.layout.volume;
      const liveTime = new Date('2020-02-02T02:02:02.000Z');
      await chmod(path.join(v, 'world'), 0o700);
      await chmod(path.join(v, 'world/region'), 0o710);
      await utimes(path.join(v, 'world/region'), liveTime, liveTime);
      await utimes(path.join(v, 'world'), liveTime, liveTime);
      const backupTime = new Date('2021-03-03T03:03:03.000Z');
      const fileTime = new Date('2022-04-04T04:04:04.000Z');
      const file = await s.backup(
        {
          'world/': { dir: true, mode: 0o755 },
          'world/region/': { dir: true, mode: 0o775 },
          'world/region/r.0.0.mca': { content: 'backup region', mode: 0o600 },
          'plugins/': { dir: true, mode: 0o750 },
          'plugins/config.yml': 'backup plugin config',
        },
        async (source) => {
          await utimes(path.join(source, 'world/region/r.0.0.mca'), fileTime, fileTime);
          for (const dir of ['world/region', 'world', 'plugins'])
            await utimes(path.join(source, dir), backupTime, backupTime);
        },
      );

      await restore(s, file, ['world/region/r.0.0.mca', 'plugins/config.yml'], { truncate });

      const world = await stat(path.join(v, 'world'));
      const region = await stat(path.join(v, 'world/region'));
      expect(world.mode & 0o7777).toBe(0o700);
      expect(world.mtimeMs).toBe(liveTime.getTime());
      expect(region.mode & 0o7777).toBe(0o710);
      expect(region.mtimeMs).toBe(liveTime.getTime());
      // The chosen file is the backup's: content, mode and mtime.
      const chosen = await stat(path.join(v, 'world/region/r.0.0.mca'));
      expect(await text(path.join(v, 'world/region/r.0.0.mca'))).toBe('backup region');
      expect(chosen.mode & 0o7777).toBe(0o600);
      expect(chosen.mtimeMs).toBe(fileTime.getTime());
      // A directory above a chosen path that the live volume lacks is made as the backup has it.
      const plugins = await stat(path.join(v, 'plugins'));
      expect(plugins.mode & 0o7777).toBe(0o750);
      expect(plugins.mtimeMs).toBe(backupTime.getTime());
      expect(await text(path.join(v, 'world/level.dat'))).toBe('live level');
    });
  }

  it('leaves an unchosen file that differs from the backup as the live one, the same inode', async () => {
    const s = await setup({ 'server.properties': 'motd=live', 'chosen.txt': 'live chosen' });
    await chmod(path.join(s.layout.volume, 'server.properties'), 0o640);
    const inode = (await stat(path.join(s.layout.volume, 'server.properties'))).ino;
    const file = await s.backup({
      'server.properties': { content: 'motd=backup', mode: 0o644 },
      'chosen.txt': 'backup chosen',
    });
    for (const truncate of [false, true]) {
      await restore(s, file, ['chosen.txt'], { truncate });
      const kept = await stat(path.join(s.layout.volume, 'server.properties'));
      expect(await text(path.join(s.layout.volume, 'server.properties'))).toBe('motd=live');
      expect(kept.mode & 0o7777).toBe(0o640);
      // Carried over as a hard link, not a copy.
      expect(kept.ino).toBe(inode);
      jobId += 1;
      s.paths = restorePaths(s.layout.volumesDir, s.layout.uuid, jobId);
    }
  });

  it('replaces a live symlink above a chosen path with the backup’s directory, never following it', async () => {
    const s = await setup({ 'server.properties': 'live' });
    await symlink(path.join(s.layout.outside, 'dir'), path.join(s.layout.volume, 'plugins'));
    const outside = await outsideSnapshot(s.layout);
    const file = await s.backup({ 'plugins/x.jar': 'jar', 'plugins/y.jar': 'not chosen' });

    await restore(s, file, ['plugins/x.jar'], { truncate: false });

    expect(await outsideSnapshot(s.layout)).toEqual(outside);
    expect(await exists(path.join(s.layout.outside, 'dir', 'x.jar'))).toBe(false);
    expect((await lstat(path.join(s.layout.volume, 'plugins'))).isDirectory()).toBe(true);
    expect((await readdir(path.join(s.layout.volume, 'plugins'))).sort()).toEqual(['x.jar']);
  });

  describe('the disk limit', () => {
    const KB = 1000;

    for (const truncate of [false, true]) {
      it(`counts the live files kept around the chosen paths (truncate ${truncate}), and nothing of the backup left out`, async () => {
        const s = await setup({ 'big.bin': randomBytes(200 * KB), 'small.txt': 'live small' });
        const file = await s.backup({ 'small.txt': 'backup small', 'huge.bin': randomBytes(500 * KB) });
        const live = await contents(s.layout.volume);

        // The backup's chosen file is tiny, but the live big.bin stays: together over 100 kB.
        const refused = await archiveError(
          stageRestore(s.paths, file, {
            truncate,
            maxBytes: 100 * KB,
            only: new RestoreSelection(['small.txt']),
          }),
        );
        expect(refused.reason).toBe('disk-limit');
        expect(refused.message).toContain('the backup plus the kept files would exceed');
        expect(await exists(s.paths.staging)).toBe(false);
        expect(await exists(s.paths.report)).toBe(false);
        expect(await contents(s.layout.volume)).toEqual(live);

        // Under 300 kB: the backup's 500 kB huge.bin is not chosen, so not charged.
        await restore(s, file, ['small.txt'], { truncate, maxBytes: 300 * KB });
        expect(await text(path.join(s.layout.volume, 'small.txt'))).toBe('backup small');
        expect(await exists(path.join(s.layout.volume, 'huge.bin'))).toBe(false);
        expect((await stat(path.join(s.layout.volume, 'big.bin'))).size).toBe(200 * KB);
      });
    }

    it('counts a chosen directory’s live-only files without truncate, and not with it', async () => {
      const s = await setup({ 'world/live-only.bin': randomBytes(200 * KB) });
      const file = await s.backup({ 'world/level.dat': 'level' });
      const refused = await archiveError(
        stageRestore(s.paths, file, {
          truncate: false,
          maxBytes: 100 * KB,
          only: new RestoreSelection(['world']),
        }),
      );
      expect(refused.reason).toBe('disk-limit');
      await restore(s, file, ['world'], { truncate: true, maxBytes: 100 * KB });
      expect((await readdir(path.join(s.layout.volume, 'world'))).sort()).toEqual(['level.dat']);
    });
  });

  describe('entries of the archive outside the selection', () => {
    it('are not written, whatever they are: files, links, devices, an absolute path', async () => {
      const s = await setup({ 'keep.txt': 'live' });
      const planted = path.join(s.layout.outside, 'planted.txt');
      const file = await rawArchive(s.layout, [
        { path: 'chosen.txt', content: 'backup chosen' },
        { path: 'other.txt', content: 'not chosen' },
        { path: 'link', type: '2', linkname: s.layout.outside },
        { path: 'hard', type: '1', linkname: 'chosen.txt' },
        { path: 'fifo', type: '6' },
        // An absolute path is read as one inside the volume: here, not chosen.
        { path: planted, content: 'planted' },
      ]);
      const outside = await outsideSnapshot(s.layout);

      const report = await restore(s, file, ['chosen.txt'], { truncate: false });

      expect(report.files).toBe(1);
      // Links and special entries outside the selection are not even reported as skipped.
      expect(report.skipped).toEqual([]);
      expect(Object.keys(await contents(s.layout.volume)).sort()).toEqual(['chosen.txt', 'keep.txt']);
      expect(await exists(planted)).toBe(false);
      expect(await outsideSnapshot(s.layout)).toEqual(outside);
    });

    it('reports a chosen link as skipped, as a whole restore does', async () => {
      const s = await setup({});
      const file = await rawArchive(s.layout, [
        { path: 'dir/', type: '5' },
        { path: 'dir/link', type: '2', linkname: '/etc/passwd' },
        { path: 'dir/file.txt', content: 'file' },
      ]);
      const report = await restore(s, file, ['dir'], { truncate: false });
      expect(report.skipped).toEqual([expect.objectContaining({ path: 'dir/link', kind: 'symlink' })]);
      expect(await exists(path.join(s.layout.volume, 'dir/link'))).toBe(false);
    });

    for (const [label, hostile, reason] of [
      ['a `..` entry', { path: '../escape.txt', content: 'escaped' }, 'unsafe-path'],
      ['a `a/../../x` entry', { path: 'a/../../escape.txt', content: 'escaped' }, 'unsafe-path'],
      [
        'a `..` in a PAX path record',
        { path: 'innocent.txt', pax: { path: '../escape.txt' }, content: 'x' },
        'unsafe-path',
      ],
      [
        'a name over 255 bytes',
        { path: `${'n'.repeat(256)}.txt`, content: 'x', longPath: 'pax' },
        'name-too-long',
      ],
    ] as const) {
      it(`still refuse the whole restore for ${label}, before and after the chosen entry`, async () => {
        for (const order of ['before', 'after'] as const) {
          const s = await setup({ 'keep.txt': 'live', 'chosen.txt': 'live chosen' });
          const chosen = { path: 'chosen.txt', content: 'backup chosen' };
          const file = await rawArchive(s.layout, order === 'before' ? [hostile, chosen] : [chosen, hostile]);
          const live = await contents(s.layout.volume);
          const outside = await outsideSnapshot(s.layout);

          const refused = await archiveError(
            stageRestore(s.paths, file, {
              truncate: false,
              maxBytes: null,
              only: new RestoreSelection(['chosen.txt']),
            }),
          );

          expect(refused, order).toBeInstanceOf(ArchiveError);
          expect(refused.reason, order).toBe(reason);
          expect(await exists(s.paths.staging), order).toBe(false);
          expect(await contents(s.layout.volume), order).toEqual(live);
          expect(await outsideSnapshot(s.layout), order).toEqual(outside);
          expect(await exists(path.join(s.layout.volumesDir, 'escape.txt')), order).toBe(false);
          await rm(s.layout.root, { recursive: true, force: true });
        }
      });
    }

    it('still refuse an archive that contradicts itself outside the selection', async () => {
      const s = await setup({});
      const file = await rawArchive(s.layout, [
        { path: 'chosen.txt', content: 'backup chosen' },
        { path: 'a', content: 'a file' },
        { path: 'a/b', content: 'under a file' },
      ]);
      const refused = await archiveError(
        stageRestore(s.paths, file, {
          truncate: false,
          maxBytes: null,
          only: new RestoreSelection(['chosen.txt']),
        }),
      );
      expect(refused.reason).toBe('conflict');
      expect(await exists(s.paths.staging)).toBe(false);
    });
  });

  it('without truncate keeps a chosen path the backup lacks; with truncate removes it, as the backup has it (the API refuses such a path first)', async () => {
    const s = await setup({ 'world/level.dat': 'live level', 'other.txt': 'live' });
    const file = await s.backup({ 'other.txt': 'backup' });
    await restore(s, file, ['world'], { truncate: false });
    expect(await text(path.join(s.layout.volume, 'world/level.dat'))).toBe('live level');
    expect(await text(path.join(s.layout.volume, 'other.txt'))).toBe('live');

    jobId += 1;
    s.paths = restorePaths(s.layout.volumesDir, s.layout.uuid, jobId);
    await restore(s, file, ['world'], { truncate: true });
    expect(await exists(path.join(s.layout.volume, 'world'))).toBe(false);
    expect(await text(path.join(s.layout.volume, 'other.txt'))).toBe('live');
  });

  it('gives the volume’s root its live mode', async () => {
    const s = await setup({ 'a.txt': 'live' });
    await chmod(s.layout.volume, 0o750);
    const file = await s.backup({ 'a.txt': 'backup' });
    await restore(s, file, ['a.txt'], { truncate: true });
    expect((await stat(s.layout.volume)).mode & 0o7777).toBe(0o750);
    await mkdir(path.join(s.layout.volume, 'x')); // still a usable directory
    await writeFile(path.join(s.layout.volume, 'x/y'), 'ok');
  });
});
