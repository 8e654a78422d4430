/**
 * Hostile archives against a whole restore's file work (stageRestore, then swapIn) on a live
 * volume full of symlinks that point outside it, on real directories (hostile-layout.ts): the live
 * volume is untouched until the swap, nothing outside ever changes, and a failure leaves the
 * volume exactly as it was.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ArchiveFailure } from '../../../src/storage/archive/archive.types.ts';
import {
  restorePaths,
  stageRestore,
  swapIn,
  type RestorePaths,
} from '../../../src/storage/volumes/restore-files.ts';
import { rawTar } from '../../support/raw-tar.ts';
import {
  archive,
  archiveBytes,
  archiveError,
  exists,
  expectFile,
  gzipBomb,
  KiB,
  makeLayout,
  MiB,
  outsideSnapshot,
  overlapping,
  removeGzipBomb,
  removeLayouts,
  snapshot,
  type Layout,
} from '../archive/hostile-layout.ts';

afterEach(removeLayouts);
afterAll(removeGzipBomb);

describe('restore: stageRestore + swapIn against a live volume', () => {
  /**
   * A live volume with ordinary files, nested directories, and symlinks that point outside:
   * plugins -> <outside>/dir, data.txt -> <outside>/file.txt, mods -> <outside>/dir.
   */
  async function populateVolume(layout: Layout): Promise<void> {
    const v = layout.volume;
    await writeFile(join(v, 'server.properties'), 'motd=live\n', { mode: 0o640 });
    await writeFile(join(v, 'config.yml'), 'live config\n');
    await writeFile(join(v, 'start.sh'), '#!/bin/sh\necho live\n', { mode: 0o755 });
    await mkdir(join(v, 'world', 'region'), { recursive: true });
    await writeFile(join(v, 'world', 'level.dat'), randomBytes(4 * KiB));
    await writeFile(join(v, 'world', 'region', 'r.0.0.mca'), randomBytes(16 * KiB));
    await mkdir(join(v, 'logs'), { mode: 0o700 });
    await chmod(join(v, 'logs'), 0o700);
    await symlink(join(layout.outside, 'dir'), join(v, 'plugins'));
    await symlink(join(layout.outside, 'file.txt'), join(v, 'data.txt'));
    await symlink(join(layout.outside, 'dir'), join(v, 'mods'));
  }

  let jobId = 0;

  async function setup(): Promise<{ layout: Layout; paths: RestorePaths }> {
    const layout = await makeLayout();
    await populateVolume(layout);
    jobId += 1;
    const paths = restorePaths(layout.volumesDir, layout.uuid, jobId);
    expect(paths.volume).toBe(layout.volume);
    return { layout, paths };
  }

  it('merge (truncate false): leaves the live volume untouched until swapIn, then keeps live files and archive wins', async () => {
    const { layout, paths } = await setup();
    const file = await archive(layout, [
      { path: 'config.yml', content: 'archive config\n' },
      { path: 'world/', type: '5' },
      { path: 'world/level.dat', content: 'archive level\n' },
      { path: 'new.txt', content: 'new\n' },
    ]);
    const live = await snapshot(layout.volume);
    const beforeOutside = await outsideSnapshot(layout);

    await stageRestore(paths, file, { truncate: false, maxBytes: null });
    expect(await snapshot(layout.volume)).toEqual(live);

    await swapIn(paths);

    const v = layout.volume;
    await expectFile(join(v, 'config.yml'), 'archive config\n');
    await expectFile(join(v, 'world', 'level.dat'), 'archive level\n');
    await expectFile(join(v, 'new.txt'), 'new\n');
    await expectFile(join(v, 'server.properties'), 'motd=live\n');
    expect(await readFile(join(v, 'world', 'region', 'r.0.0.mca'))).toHaveLength(16 * KiB);
    expect(await exists(paths.staging)).toBe(false);
    expect(await exists(paths.retired)).toBe(false);
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
  });

  it('merge: a live symlink to an outside directory is never followed (archive has plugins/x.jar)', async () => {
    const { layout, paths } = await setup();
    const file = await archive(layout, [
      { path: 'plugins/', type: '5' },
      { path: 'plugins/x.jar', content: 'jar\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);

    await stageRestore(paths, file, { truncate: false, maxBytes: null });
    await swapIn(paths);

    // The outside directory: no x.jar, sentinel intact, same mode and mtime, no extra hard links.
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect(await exists(join(layout.outside, 'dir', 'x.jar'))).toBe(false);
    // The volume's plugins is now a real directory with the archive's content only.
    const plugins = join(layout.volume, 'plugins');
    expect((await lstat(plugins)).isDirectory()).toBe(true);
    await expectFile(join(plugins, 'x.jar'), 'jar\n');
    expect(await exists(join(plugins, 'sentinel.txt'))).toBe(false);
  });

  it('merge: a live symlink data.txt -> outside file is replaced, the outside file is unchanged', async () => {
    const { layout, paths } = await setup();
    const file = await archive(layout, [{ path: 'data.txt', content: 'archive data\n' }]);
    const beforeOutside = await outsideSnapshot(layout);

    await stageRestore(paths, file, { truncate: false, maxBytes: null });
    await swapIn(paths);

    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    await expectFile(join(layout.outside, 'file.txt'), 'outside file: do not touch\n');
    await expectFile(join(layout.volume, 'data.txt'), 'archive data\n');
  });

  it('merge: a live symlinked directory the archive does not mention is not descended into', async () => {
    const { layout, paths } = await setup();
    const file = await archive(layout, [{ path: 'new.txt', content: 'new\n' }]);
    const beforeOutside = await outsideSnapshot(layout);

    await stageRestore(paths, file, { truncate: false, maxBytes: null });
    await swapIn(paths);

    // Hard-linking the outside sentinel into the volume would hand the server a writable alias.
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect((await stat(join(layout.outside, 'dir', 'sentinel.txt'))).nlink).toBe(1);
    const mods = join(layout.volume, 'mods');
    if (await exists(mods))
      expect((await lstat(mods)).isDirectory(), 'mods became a real directory').toBe(false);
    await expectFile(join(layout.volume, 'new.txt'), 'new\n');
  });

  it('truncate: the old volume is deleted after the swap by removing its links, not their targets', async () => {
    const { layout, paths } = await setup();
    const file = await archive(layout, [
      { path: 'plugins/', type: '5' },
      { path: 'plugins/x.jar', content: 'jar\n' },
      { path: 'data.txt', content: 'archive data\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);
    const live = await snapshot(layout.volume);

    await stageRestore(paths, file, { truncate: true, maxBytes: null });
    expect(await snapshot(layout.volume)).toEqual(live);
    await swapIn(paths);

    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    await expectFile(join(layout.outside, 'dir', 'sentinel.txt'), 'sentinel: do not touch\n');
    expect(Object.keys(await snapshot(layout.volume)).sort()).toEqual(
      ['.', 'data.txt', 'plugins', 'plugins/x.jar'].sort(),
    );
    expect((await lstat(join(layout.volume, 'plugins'))).isDirectory()).toBe(true);
    expect(await exists(paths.staging)).toBe(false);
    expect(await exists(paths.retired)).toBe(false);
  });

  interface FailureCase {
    name: string;
    reason: ArchiveFailure;
    maxBytes?: number;
    write: (layout: Layout) => Promise<string>;
  }

  const failures: FailureCase[] = [
    {
      name: 'a ".." entry after entries that overlap the live volume',
      reason: 'unsafe-path',
      write: (layout) =>
        archive(layout, [...overlapping, { path: '../../outside/escape.txt', content: 'x\n' }]),
    },
    {
      name: 'random bytes',
      reason: 'corrupt',
      write: (layout) => archiveBytes(layout, randomBytes(32 * KiB)),
    },
    {
      name: 'a gzip of non-tar garbage',
      reason: 'corrupt',
      write: (layout) => archiveBytes(layout, gzipSync(randomBytes(32 * KiB))),
    },
    {
      name: 'a tar truncated in the middle of a file',
      reason: 'corrupt',
      write: (layout) => {
        const head = rawTar(overlapping, { endBlocks: 0 }).length;
        return archive(layout, [...overlapping, { path: 'big.bin', content: randomBytes(64 * KiB) }], {
          truncateTarAt: head + 512 + 10 * KiB,
        });
      },
    },
    {
      name: 'a header with a wrong checksum',
      reason: 'corrupt',
      write: (layout) =>
        archive(layout, [
          ...overlapping,
          { path: 'bad.txt', content: 'bad\n', checksum: 'wrong' },
          { path: 'later.txt', content: 'later\n' },
        ]),
    },
    {
      name: 'a gzip stream cut short',
      reason: 'corrupt',
      write: async (layout) => {
        const whole = await archive(layout, [
          ...overlapping,
          { path: 'big.bin', content: randomBytes(128 * KiB) },
        ]);
        const gz = await readFile(whole);
        await rm(whole);
        return archiveBytes(layout, gz.subarray(0, Math.floor(gz.length * 0.7)));
      },
    },
    {
      name: 'a gzip bomb over the disk limit',
      reason: 'disk-limit',
      maxBytes: 10 * MiB,
      write: () => gzipBomb(),
    },
    {
      name: 'a path under a regular file of the archive',
      reason: 'conflict',
      write: (layout) =>
        archive(layout, [
          ...overlapping,
          { path: 'a', content: 'file\n' },
          { path: 'a/b', content: 'under a file\n' },
        ]),
    },
  ];

  it('failing stageRestore in the merge phase (backup fits, backup + kept live files do not) leaves the live volume identical', async () => {
    const { layout, paths } = await setup();
    // 4 KiB + 4 bytes for the backup; the live volume adds over 20 KiB of content plus entries.
    const file = await archive(layout, [{ path: 'new.txt', content: 'new\n' }]);
    const live = await snapshot(layout.volume);
    const beforeOutside = await outsideSnapshot(layout);

    const err = await archiveError(stageRestore(paths, file, { truncate: false, maxBytes: 24 * KiB }));

    expect(err.reason).toBe('disk-limit');
    expect(await snapshot(layout.volume)).toEqual(live);
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect(await exists(paths.staging), 'staging directory left behind').toBe(false);
    expect(await exists(paths.retired)).toBe(false);
  });

  for (const truncate of [false, true]) {
    for (const failure of failures) {
      it(`failing stageRestore (truncate ${truncate}, ${failure.name}) leaves the live volume identical and removes staging`, async () => {
        const { layout, paths } = await setup();
        const file = await failure.write(layout);
        const live = await snapshot(layout.volume);
        const beforeOutside = await outsideSnapshot(layout);

        const err = await archiveError(
          stageRestore(paths, file, { truncate, maxBytes: failure.maxBytes ?? null }),
        );

        expect(err.reason).toBe(failure.reason);
        expect(await snapshot(layout.volume)).toEqual(live);
        expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
        expect(await exists(paths.staging), 'staging directory left behind').toBe(false);
        expect(await exists(paths.retired)).toBe(false);
      });
    }
  }
});
