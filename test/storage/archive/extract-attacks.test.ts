/**
 * Hostile archives against extractArchive, on real directories (hostile-layout.ts): nothing is
 * ever written outside the destination, links and devices are never created, and what cannot be
 * extracted safely fails with the right reason. The ordinary behaviour is in extract.test.ts; that
 * the verifier refuses exactly the same archives, in archive-agreement.test.ts.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ExtractReport, SkippedEntry } from '../../../src/storage/archive/archive.types.ts';
import { extractArchive } from '../../../src/storage/archive/extract.ts';
import type { RawEntry } from '../../support/raw-tar.ts';
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
  removeGzipBomb,
  removeLayouts,
  snapshot,
  surroundings,
  unlimited,
  type Layout,
} from './hostile-layout.ts';

afterEach(removeLayouts);
afterAll(removeGzipBomb);

async function totalFileBytes(dir: string): Promise<number> {
  if (!(await exists(dir))) return 0;
  let total = 0;
  for (const info of Object.values(await snapshotSizes(dir))) total += info;
  return total;
}

async function snapshotSizes(dir: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  async function visit(abs: string, rel: string): Promise<void> {
    const st = await lstat(abs);
    if (st.isFile()) out[rel] = st.size;
    if (st.isDirectory()) {
      for (const name of await readdir(abs)) await visit(join(abs, name), `${rel}/${name}`);
    }
  }
  await visit(dir, '.');
  return out;
}

function normalizeEntryPath(path: string): string {
  return path.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
}

function skippedAs(report: ExtractReport, path: string): SkippedEntry['kind'] | undefined {
  const hit = report.skipped.find((s) => normalizeEntryPath(s.path) === path);
  if (hit !== undefined) expect(hit.reason, `reason for skipping ${path}`).toMatch(/\S/);
  return hit?.kind;
}

// ---------------------------------------------------------------------------------------------

describe('extractArchive: path traversal', () => {
  async function expectRejectedTraversal(entries: RawEntry[]): Promise<void> {
    const layout = await makeLayout();
    const file = await archive(layout, entries);
    const before = await surroundings(layout);
    const beforeOutside = await outsideSnapshot(layout);

    const err = await archiveError(extractArchive(file, layout.volume, unlimited));

    expect(err.reason).toBe('unsafe-path');
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect(await surroundings(layout)).toEqual(before);
  }

  it('rejects an entry whose path climbs out with ".." (nothing created outside)', async () => {
    await expectRejectedTraversal([
      { path: 'ok.txt', content: 'fine\n' },
      { path: '../../outside/escape.txt', content: 'escaped\n' },
    ]);
  });

  it('rejects a ".." component in the middle of a path', async () => {
    await expectRejectedTraversal([
      { path: 'sub/', type: '5' },
      { path: 'sub/../../../outside/mid.txt', content: 'escaped\n' },
    ]);
  });

  it('rejects a ".." component even when the path would resolve back inside', async () => {
    await expectRejectedTraversal([{ path: 'a/../inside.txt', content: 'sneaky\n' }]);
  });

  it('rejects ".." carried in the ustar prefix field', async () => {
    await expectRejectedTraversal([{ path: 'prefixed.txt', prefix: '../../outside', content: 'escaped\n' }]);
  });

  it('rejects ".." carried in a PAX path record behind an innocent header name', async () => {
    await expectRejectedTraversal([
      {
        path: 'innocent.txt',
        pax: { path: '../../outside/pax.txt' },
        content: 'escaped\n',
      },
    ]);
  });

  it('rejects a directory entry that climbs out with ".."', async () => {
    await expectRejectedTraversal([{ path: '../../outside/newdir/', type: '5' }]);
  });

  it('rejects ".." carried in a GNU long-name record', async () => {
    await expectRejectedTraversal([
      { path: '././@LongLink', type: 'L', content: '../../outside/gnu.txt\0' },
      { path: 'short.txt', content: 'escaped\n' },
    ]);
  });
});

describe('extractArchive: absolute paths', () => {
  it('places "/etc/…" and an absolute path to the outside directory inside the destination', async () => {
    const layout = await makeLayout();
    const probe = `/etc/aerie-probe-${randomUUID()}.conf`;
    const aimed = join(layout.outside, 'abs.txt'); // absolute: /tmp/…/outside/abs.txt
    const file = await archive(layout, [
      { path: probe, content: 'probe\n' },
      { path: aimed, content: 'aimed\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);
    const before = await surroundings(layout);

    try {
      const report = await extractArchive(file, layout.volume, unlimited);

      expect(await exists(probe), `${probe} must not be written`).toBe(false);
      expect(await exists(aimed), `${aimed} must not be written`).toBe(false);
      await expectFile(join(layout.volume, probe.slice(1)), 'probe\n');
      await expectFile(join(layout.volume, aimed.slice(1)), 'aimed\n');
      expect(report.files).toBe(2);
      expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
      expect(await surroundings(layout)).toEqual(before);
    } finally {
      await rm(probe, { force: true });
    }
  });

  it('strips every leading slash from "//x" and "///x" paths', async () => {
    const layout = await makeLayout();
    const aimed = join(layout.outside, 'dbl.txt');
    const file = await archive(layout, [
      { path: '/' + aimed, content: 'double\n' },
      { path: '///triple/t.txt', content: 'triple\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);
    const before = await surroundings(layout);

    const report = await extractArchive(file, layout.volume, unlimited);

    expect(await exists(aimed)).toBe(false);
    expect(await exists('/triple/t.txt')).toBe(false);
    await expectFile(join(layout.volume, aimed.slice(1)), 'double\n');
    await expectFile(join(layout.volume, 'triple', 't.txt'), 'triple\n');
    expect(report.files).toBe(2);
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect(await surroundings(layout)).toEqual(before);
  });
});

describe('extractArchive: links and special files are skipped and reported', () => {
  /** Extracts `entry` followed by a plain file; the entry must be skipped as `kind`. */
  async function expectSkipped(
    entry: RawEntry,
    kind: SkippedEntry['kind'],
  ): Promise<{ layout: Layout; report: ExtractReport }> {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'before.txt', content: 'before\n' },
      entry,
      { path: 'after.txt', content: 'after\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);
    const before = await surroundings(layout);

    const report = await extractArchive(file, layout.volume, unlimited);

    const name = normalizeEntryPath(entry.path);
    expect(await exists(join(layout.volume, name)), `${name} must not be created`).toBe(false);
    expect(skippedAs(report, name)).toBe(kind);
    expect(report.skipped).toHaveLength(1);
    // Extraction carried on past the skipped entry.
    await expectFile(join(layout.volume, 'before.txt'), 'before\n');
    await expectFile(join(layout.volume, 'after.txt'), 'after\n');
    expect(report.files).toBe(2);
    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect(await surroundings(layout)).toEqual(before);
    return { layout, report };
  }

  it('skips a symlink to an absolute path (/etc/passwd)', async () => {
    await expectSkipped({ path: 'passwd-link', type: '2', linkname: '/etc/passwd' }, 'symlink');
  });

  it('skips a symlink whose target climbs out with ".."', async () => {
    await expectSkipped({ path: 'rel-link', type: '2', linkname: '../../outside/file.txt' }, 'symlink');
  });

  it('skips a symlink even when its target stays inside', async () => {
    await expectSkipped({ path: 'inner-link', type: '2', linkname: 'before.txt' }, 'symlink');
  });

  it('defeats the two-step symlink attack (evil -> /abs/outside, then evil/pwned)', async () => {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'evil', type: '2', linkname: layout.outside },
      { path: 'evil/pwned.txt', content: 'pwned\n' },
      { path: 'evil/dir/sentinel.txt', content: 'overwritten\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);
    const before = await surroundings(layout);

    const report = await extractArchive(file, layout.volume, unlimited);

    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect(await surroundings(layout)).toEqual(before);
    expect((await lstat(join(layout.volume, 'evil'))).isDirectory()).toBe(true);
    await expectFile(join(layout.volume, 'evil', 'pwned.txt'), 'pwned\n');
    await expectFile(join(layout.volume, 'evil', 'dir', 'sentinel.txt'), 'overwritten\n');
    expect(skippedAs(report, 'evil')).toBe('symlink');
  });

  it('defeats the two-step symlink attack with a relative target (evil -> ../../outside)', async () => {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'evil', type: '2', linkname: '../../outside' },
      { path: 'evil/file.txt', content: 'overwritten\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);

    const report = await extractArchive(file, layout.volume, unlimited);

    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect((await lstat(join(layout.volume, 'evil'))).isDirectory()).toBe(true);
    await expectFile(join(layout.volume, 'evil', 'file.txt'), 'overwritten\n');
    expect(skippedAs(report, 'evil')).toBe('symlink');
  });

  it('skips a hard link to /etc/passwd', async () => {
    const before = await stat('/etc/passwd');
    const beforeHash = createHash('sha256')
      .update(await readFile('/etc/passwd'))
      .digest('hex');

    await expectSkipped({ path: 'passwd', type: '1', linkname: '/etc/passwd' }, 'hardlink');

    const after = await stat('/etc/passwd');
    expect(after.nlink).toBe(before.nlink);
    expect(after.size).toBe(before.size);
    expect(
      createHash('sha256')
        .update(await readFile('/etc/passwd'))
        .digest('hex'),
    ).toBe(beforeHash);
  });

  it('skips a hard link whose target climbs out with "../../x"', async () => {
    const layout = await makeLayout();
    // ../../x seen from <root>/volumes/<uuid> is <root>/x.
    await writeFile(join(layout.root, 'x'), 'x: do not touch\n');
    const file = await archive(layout, [
      { path: 'link-up', type: '1', linkname: '../../x' },
      { path: 'after.txt', content: 'after\n' },
    ]);
    const before = await snapshot(layout.root, { exclude: [`volumes/${layout.uuid}`], nlink: true });

    const report = await extractArchive(file, layout.volume, unlimited);

    expect(await exists(join(layout.volume, 'link-up'))).toBe(false);
    expect(skippedAs(report, 'link-up')).toBe('hardlink');
    await expectFile(join(layout.volume, 'after.txt'), 'after\n');
    expect(await snapshot(layout.root, { exclude: [`volumes/${layout.uuid}`], nlink: true })).toEqual(before);
  });

  it('skips a hard link to an outside file, so a later file of that name cannot write through it', async () => {
    const layout = await makeLayout();
    const secret = join(layout.outside, 'secret.txt');
    const file = await archive(layout, [
      { path: 'hl', type: '1', linkname: secret },
      { path: 'hl', content: 'pwned\n' },
    ]);
    const beforeOutside = await outsideSnapshot(layout);

    const report = await extractArchive(file, layout.volume, unlimited);

    expect(await outsideSnapshot(layout)).toEqual(beforeOutside);
    expect((await stat(secret)).nlink).toBe(1);
    await expectFile(join(layout.volume, 'hl'), 'pwned\n');
    expect((await stat(join(layout.volume, 'hl'))).nlink).toBe(1);
    expect(skippedAs(report, 'hl')).toBe('hardlink');
  });

  it('skips a hard link even when its target is a file of the same archive', async () => {
    await expectSkipped({ path: 'copy.txt', type: '1', linkname: 'before.txt' }, 'hardlink');
  });

  it('skips a character device (/dev/null look-alike)', async () => {
    await expectSkipped({ path: 'null', type: '3', devmajor: 1, devminor: 3 }, 'character-device');
  });

  it('skips a block device (/dev/sda look-alike)', async () => {
    await expectSkipped({ path: 'sda', type: '4', devmajor: 8, devminor: 0 }, 'block-device');
  });

  it('skips a FIFO', async () => {
    await expectSkipped({ path: 'pipe', type: '6' }, 'fifo');
  });
});

describe('extractArchive: modes', () => {
  it('strips setuid and setgid bits from files and directories', async () => {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'bin/', type: '5', mode: 0o2775 },
      { path: 'bin/suid', content: '#!/bin/sh\n', mode: 0o4755 },
      { path: 'bin/sgid', content: '#!/bin/sh\n', mode: 0o2755 },
      { path: 'bin/both', content: '#!/bin/sh\n', mode: 0o6777 },
    ]);

    await extractArchive(file, layout.volume, unlimited);

    for (const name of ['bin', 'bin/suid', 'bin/sgid', 'bin/both']) {
      const mode = (await lstat(join(layout.volume, name))).mode;
      expect(mode & 0o6000, `${name} mode ${(mode & 0o7777).toString(8)}`).toBe(0);
    }
    // The ordinary permission bits are what restores a working server (scripts stay executable).
    expect((await lstat(join(layout.volume, 'bin/suid'))).mode & 0o100).toBe(0o100);
  });
});

describe('extractArchive: disk limit', () => {
  it('stops a gzip bomb (1 GiB of zeros, ~1 MiB compressed) with a 10 MiB limit, quickly', async () => {
    const layout = await makeLayout();
    const file = await gzipBomb();
    expect((await stat(file)).size).toBeLessThan(2 * MiB);

    const started = performance.now();
    const err = await archiveError(extractArchive(file, layout.volume, { maxBytes: 10 * MiB }));
    const elapsed = performance.now() - started;

    expect(err.reason).toBe('disk-limit');
    // Reading the whole bomb alone takes well over a second; the limit must cut it short.
    expect(elapsed).toBeLessThan(1000);
    expect(await totalFileBytes(layout.volume)).toBeLessThanOrEqual(10 * MiB);
  });

  it('counts 4 KiB per entry: 2600 empty files exceed 10 MiB', async () => {
    const layout = await makeLayout();
    const entries: RawEntry[] = [];
    for (let i = 0; i < 2600; i++) entries.push({ path: `f${i}`, content: '' });
    const file = await archive(layout, entries);

    const err = await archiveError(extractArchive(file, layout.volume, { maxBytes: 10 * MiB }));

    expect(err.reason).toBe('disk-limit');
  });

  it('adds up files that each fit: three 4 MiB files exceed 10 MiB', async () => {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'a.bin', content: Buffer.alloc(4 * MiB, 1) },
      { path: 'b.bin', content: Buffer.alloc(4 * MiB, 2) },
      { path: 'c.bin', content: Buffer.alloc(4 * MiB, 3) },
    ]);

    const err = await archiveError(extractArchive(file, layout.volume, { maxBytes: 10 * MiB }));

    expect(err.reason).toBe('disk-limit');
    expect(await totalFileBytes(layout.volume)).toBeLessThanOrEqual(10 * MiB);
  });

  it('allows exactly maxBytes (content + 4096 per entry) and refuses one byte more', async () => {
    const layout = await makeLayout();
    const limit = { maxBytes: 1 * MiB };
    const fits = await archive(layout, [{ path: 'fits.bin', content: Buffer.alloc(MiB - 4096, 7) }]);
    const over = await archive(layout, [{ path: 'over.bin', content: Buffer.alloc(MiB - 4095, 7) }]);
    const second = join(layout.volumesDir, randomUUID());
    await mkdir(second);

    const report = await extractArchive(fits, layout.volume, limit);
    expect(report.files).toBe(1);
    expect(report.bytes).toBe(MiB - 4096);
    expect((await stat(join(layout.volume, 'fits.bin'))).size).toBe(MiB - 4096);

    const err = await archiveError(extractArchive(over, second, limit));
    expect(err.reason).toBe('disk-limit');
  });
});

describe('extractArchive: corrupt input', () => {
  async function expectCorrupt(file: (layout: Layout) => Promise<string>): Promise<void> {
    const layout = await makeLayout();
    const path = await file(layout);
    const before = await surroundings(layout);

    const err = await archiveError(extractArchive(path, layout.volume, unlimited));

    expect(err.reason).toBe('corrupt');
    expect(await surroundings(layout)).toEqual(before);
  }

  it('rejects random bytes (not gzip at all)', async () => {
    await expectCorrupt((layout) => archiveBytes(layout, randomBytes(64 * KiB)));
  });

  it('rejects a valid gzip stream of non-tar garbage', async () => {
    await expectCorrupt((layout) => archiveBytes(layout, gzipSync(randomBytes(64 * KiB))));
  });

  it('rejects a tar.gz truncated in the middle of a file’s content', async () => {
    const content = randomBytes(100 * KiB);
    await expectCorrupt((layout) =>
      archive(
        layout,
        [
          { path: 'first.txt', content: 'ok\n' },
          { path: 'big.bin', content },
        ],
        {
          // first.txt header + content block, big.bin header, then 40 KiB of its 100 KiB.
          truncateTarAt: 3 * 512 + 40 * KiB,
        },
      ),
    );
  });

  it('rejects a tar header with a wrong checksum in the middle of the archive', async () => {
    await expectCorrupt((layout) =>
      archive(layout, [
        { path: 'good.txt', content: 'good\n' },
        { path: 'bad.txt', content: 'bad\n', checksum: 'wrong' },
        { path: 'later.txt', content: 'later\n' },
      ]),
    );
  });

  it('rejects an archive whose first header has a wrong checksum', async () => {
    await expectCorrupt((layout) =>
      archive(layout, [{ path: 'bad.txt', content: 'bad\n', checksum: 'wrong' }]),
    );
  });

  it('rejects a gzip stream cut short', async () => {
    const content = randomBytes(200 * KiB); // incompressible, so the cut lands inside the content
    await expectCorrupt(async (layout) => {
      const whole = await archive(layout, [
        { path: 'first.txt', content: 'ok\n' },
        { path: 'big.bin', content },
      ]);
      const gz = await readFile(whole);
      await rm(whole);
      return archiveBytes(layout, gz.subarray(0, Math.floor(gz.length * 0.6)));
    });
  });
});

describe('extractArchive: conflicts', () => {
  it('rejects a path whose parent was a regular file earlier in the archive', async () => {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'a', content: 'a is a file\n' },
      { path: 'a/b', content: 'b under a file\n' },
    ]);
    const before = await surroundings(layout);

    const err = await archiveError(extractArchive(file, layout.volume, unlimited));

    expect(err.reason).toBe('conflict');
    expect(await surroundings(layout)).toEqual(before);
  });

  it('rejects a deeper path under an earlier regular file', async () => {
    const layout = await makeLayout();
    const file = await archive(layout, [
      { path: 'dir/', type: '5' },
      { path: 'dir/a', content: 'a is a file\n' },
      { path: 'dir/a/b/c.txt', content: 'c under a file\n' },
    ]);

    const err = await archiveError(extractArchive(file, layout.volume, unlimited));

    expect(err.reason).toBe('conflict');
  });
});
