import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { inflateRawSync } from 'node:zlib';
import { list, type ReadEntry } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import type { Progress } from '../../../src/storage/archive/archive.types.ts';
import { createArchive } from '../../../src/storage/archive/archive-writer.ts';
import { VolumeDir } from '../../../src/storage/volume-dir.ts';
import { extractArchive } from '../../../src/storage/archive/extract.ts';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function workspace(): { root: string; volume: string; output: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-'));
  roots.push(root);
  const volume = path.join(root, 'volume');
  fs.mkdirSync(volume);
  return { root, volume, output: path.join(root, 'backup.tar.gz') };
}

function write(file: string, content: string | Buffer, mode = 0o644): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  fs.chmodSync(file, mode);
}

/**
 * How many gzip members `data` holds, counted by gunzipping each in turn (a member ends where
 * its deflate data and trailer end).
 */
function gzipMembers(data: Buffer): number {
  let members = 0;
  for (let rest = data; rest.length > 0; members++) {
    // A 10-byte header (Aerie writes no optional fields), deflate data, an 8-byte trailer.
    const { engine } = inflateRawSync(rest.subarray(10), { info: true }) as unknown as {
      engine: { bytesWritten: number };
    };
    rest = rest.subarray(10 + engine.bytesWritten + 8);
  }
  return members;
}

/** Open descriptors of this process (0 where /proc is not available). */
function openDescriptors(): number {
  return fs.existsSync('/proc/self/fd') ? fs.readdirSync('/proc/self/fd').length : 0;
}

async function entriesOf(archive: string): Promise<{ path: string; type: string }[]> {
  const entries: { path: string; type: string }[] = [];
  await list({
    file: archive,
    onReadEntry: (entry: ReadEntry) => entries.push({ path: entry.path, type: entry.type }),
  });
  return entries;
}

/** path → kind, mode, mtime (whole seconds) and content digest, for comparing two trees. */
function describeTree(root: string): Record<string, string> {
  const result: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const stats = fs.lstatSync(full);
      const rel = path.relative(root, full);
      const mode = (stats.mode & 0o7777).toString(8);
      const mtime = Math.floor(stats.mtimeMs / 1000);
      if (stats.isDirectory()) {
        result[rel] = `dir ${mode} ${mtime}`;
        walk(full);
      } else {
        const digest = createHash('sha256').update(fs.readFileSync(full)).digest('hex');
        result[rel] = `file ${mode} ${mtime} ${digest}`;
      }
    }
  };
  walk(root);
  return result;
}

describe('createArchive', () => {
  it('round-trips a volume through extractArchive', async () => {
    const { root, volume, output } = workspace();
    write(path.join(volume, 'server.properties'), 'motd=hello\n');
    write(path.join(volume, 'start.sh'), '#!/bin/sh\n', 0o755);
    write(path.join(volume, 'world/region/r.0.0.mca'), Buffer.alloc(300_000, 7));
    write(path.join(volume, 'world/level.dat'), Buffer.from([1, 2, 3]), 0o600);
    write(path.join(volume, 'empty.txt'), '');
    write(path.join(volume, `${'long-directory-name-'.repeat(6)}/${'ü'.repeat(120)}.json`), '{}');
    fs.mkdirSync(path.join(volume, 'empty-dir'), { mode: 0o750 });
    fs.chmodSync(path.join(volume, 'empty-dir'), 0o750);
    fs.utimesSync(
      path.join(volume, 'world'),
      new Date('2022-02-02T02:02:02Z'),
      new Date('2022-02-02T02:02:02Z'),
    );

    const summary = await createArchive(volume, output);
    const restored = path.join(root, 'restored');
    fs.mkdirSync(restored);
    const report = await extractArchive(output, restored, { maxBytes: null });

    expect(describeTree(restored)).toEqual(describeTree(volume));
    expect(summary.files).toBe(6);
    expect(summary.bytes).toBe(11 + 10 + 300_000 + 3 + 0 + 2);
    expect(report.files).toBe(summary.files);
    expect(report.bytes).toBe(summary.bytes);
  });

  it('stamps each entry with the second its file was changed in, even a hair before the next', async () => {
    const { volume, output } = workspace();
    write(path.join(volume, 'late.txt'), 'x');
    fs.utimesSync(path.join(volume, 'late.txt'), 1_700_000_000.9997, 1_700_000_000.9997);
    await createArchive(volume, output);
    const entry = (await entriesOf(output)).find((e) => e.path === 'late.txt');
    const listed = execFileSync('tar', ['--full-time', '-tvzf', output], {
      encoding: 'utf8',
      env: { ...process.env, TZ: 'UTC' },
    });
    expect(entry).toBeDefined();
    expect(listed).toContain(new Date(1_700_000_000_000).toISOString().slice(11, 19));
  });

  it('writes a multi-member gzip that GNU tar, gzip, node-tar and a restore all read', async () => {
    const { root, volume, output } = workspace();
    for (let n = 0; n < 12; n++) write(path.join(volume, `logs/${n}.log`), `line ${n}\n`.repeat(2000 + n));
    write(path.join(volume, 'world/region.mca'), randomBytes(200_000));
    write(path.join(volume, 'empty.txt'), '');

    // 8 KiB blocks: dozens of gzip members, cut across tar headers and file contents.
    const summary = await createArchive(volume, output, undefined, undefined, { blockBytes: 8192 });

    const bytes = fs.readFileSync(output);
    expect(gzipMembers(bytes)).toBeGreaterThan(20);
    execFileSync('gzip', ['-t', output]);
    const listed = execFileSync('tar', ['-tzf', output], { encoding: 'utf8' }).trim().split('\n');
    expect(listed.sort()).toEqual((await entriesOf(output)).map((entry) => entry.path).sort());
    expect(listed).toContain('world/region.mca');
    const byTar = path.join(root, 'by-tar');
    fs.mkdirSync(byTar);
    execFileSync('tar', ['-xzf', output, '-C', byTar]);
    const restored = path.join(root, 'restored');
    fs.mkdirSync(restored);
    const report = await extractArchive(output, restored, { maxBytes: null });
    expect(describeTree(restored)).toEqual(describeTree(volume));
    expect(describeTree(byTar)).toEqual(describeTree(volume));
    expect(report.archiveSha256).toBe(summary.sha256);
    expect(summary.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(summary.archiveBytes).toBe(bytes.length);
  });

  it('stores paths relative to the volume, directories before their content', async () => {
    const { volume, output } = workspace();
    write(path.join(volume, 'a/b/c.txt'), 'c');

    await createArchive(volume, output);

    expect(await entriesOf(output)).toEqual([
      { path: 'a/', type: 'Directory' },
      { path: 'a/b/', type: 'Directory' },
      { path: 'a/b/c.txt', type: 'File' },
    ]);
  });

  it('returns the SHA-256 and size of the compressed file and leaves no partial file', async () => {
    const { root, volume, output } = workspace();
    write(path.join(volume, 'data.bin'), Buffer.alloc(100_000, 3));

    const summary = await createArchive(volume, output);

    const bytes = fs.readFileSync(output);
    expect(summary.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(summary.archiveBytes).toBe(bytes.length);
    expect(fs.readdirSync(root).sort()).toEqual(['backup.tar.gz', 'volume']);
  });

  it('skips symlinks and special files without following them', async () => {
    const { root, volume, output } = workspace();
    const outside = path.join(root, 'outside');
    write(path.join(outside, 'secret.txt'), 'host secret');
    write(path.join(volume, 'real.txt'), 'real');
    fs.symlinkSync(outside, path.join(volume, 'dir-link'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(volume, 'file-link'));
    fs.symlinkSync('/nonexistent', path.join(volume, 'dangling'));
    execFileSync('mkfifo', [path.join(volume, 'pipe')]);

    const summary = await createArchive(volume, output);

    expect(await entriesOf(output)).toEqual([{ path: 'real.txt', type: 'File' }]);
    expect(summary.files).toBe(1);
    expect(fs.readFileSync(output).includes(Buffer.from('host secret'))).toBe(false);
  });

  it('archives each hard-linked name as a regular file', async () => {
    const { root, volume, output } = workspace();
    write(path.join(volume, 'one.txt'), 'shared');
    fs.linkSync(path.join(volume, 'one.txt'), path.join(volume, 'two.txt'));

    await createArchive(volume, output);
    const restored = path.join(root, 'restored');
    fs.mkdirSync(restored);
    await extractArchive(output, restored, { maxBytes: null });

    expect(fs.readFileSync(path.join(restored, 'one.txt'), 'utf8')).toBe('shared');
    expect(fs.readFileSync(path.join(restored, 'two.txt'), 'utf8')).toBe('shared');
  });

  it('archives an empty volume as a valid empty archive', async () => {
    const { root, volume, output } = workspace();

    const summary = await createArchive(volume, output);
    const restored = path.join(root, 'restored');
    fs.mkdirSync(restored);

    expect(summary).toMatchObject({ files: 0, bytes: 0 });
    expect(await extractArchive(output, restored, { maxBytes: null })).toEqual({
      files: 0,
      directories: 0,
      bytes: 0,
      skipped: [],
      archiveSha256: summary.sha256,
    });
  });

  it('reports progress, ending with the totals', async () => {
    const { volume, output } = workspace();
    write(path.join(volume, 'a.txt'), 'aaaa');
    write(path.join(volume, 'b/c.txt'), 'cc');
    const calls: Progress[] = [];

    await createArchive(volume, output, (p) => calls.push(p));

    // Bytes of content, and bytes of the archive as written.
    expect(calls.at(-1)).toEqual({ files: 2, bytes: 6, archiveBytes: fs.statSync(output).size });
  });

  it('deletes the partial file and releases every descriptor when it fails', async () => {
    const { root, volume } = workspace();
    write(path.join(volume, 'a.txt'), 'a');
    const blocked = path.join(root, 'blocked.tar.gz');
    write(path.join(blocked, 'occupied'), 'a directory is in the way of the final rename');

    const descriptors = openDescriptors();
    await expect(createArchive(volume, blocked)).rejects.toThrow();
    await expect(createArchive(volume, path.join(root, 'missing-dir', 'b.tar.gz'))).rejects.toThrow();
    await expect(createArchive(path.join(root, 'no-volume'), path.join(root, 'c.tar.gz'))).rejects.toThrow();
    expect(fs.readdirSync(root).sort()).toEqual(['blocked.tar.gz', 'volume']);
    expect(openDescriptors()).toBe(descriptors);
  });
});

describe('createArchive to a sink of another kind (an upload)', () => {
  /** A volume of a few MiB, mixed text and noise, that makes many members at 16 KiB blocks. */
  function mixedVolume(): string {
    const { volume } = workspace();
    for (let n = 0; n < 6; n += 1) {
      write(path.join(volume, `logs/${n}.log`), `[${n}] a player joined\n`.repeat(20_000));
      write(path.join(volume, `world/region-${n}.bin`), randomBytes(300_000));
    }
    return volume;
  }

  /** A sink whose stream buffers everything until the archive is done, as an upload's body does. */
  function bufferingSink() {
    const stream = new PassThrough({ highWaterMark: 64 * 1024 * 1024 });
    return { stream, keepsChunks: true, finish: async () => {}, discard: async () => {} };
  }

  it('gives a stream that keeps its chunks copies: what it holds at the end is the archive', async () => {
    const volume = mixedVolume();
    const sink = bufferingSink();

    const summary = await createArchive(volume, sink, undefined, undefined, { blockBytes: 16 * 1024 });

    const chunks: Buffer[] = [];
    for await (const chunk of sink.stream) chunks.push(chunk as Buffer);
    const archive = Buffer.concat(chunks);
    expect(gzipMembers(archive)).toBeGreaterThan(100);
    expect(archive.length).toBe(summary.archiveBytes);
    expect(createHash('sha256').update(archive).digest('hex')).toBe(summary.sha256);
    const extracted = path.join(workspace().root, 'extracted');
    fs.mkdirSync(extracted);
    execFileSync('tar', ['-xzf', '-', '-C', extracted], { input: archive, maxBuffer: 64 * 1024 * 1024 });
    expect(describeTree(extracted)).toEqual(describeTree(volume));
  });

  it('fails, and does not wait for ever, when the stream is destroyed with a write pending', async () => {
    const volume = mixedVolume();
    // Buffers one chunk and holds the next write's callback, as a stalled upload does; then fails.
    const stream = new PassThrough({ highWaterMark: 1 });
    let discarded = false;
    const sink = {
      stream,
      keepsChunks: true,
      finish: async () => {},
      discard: () => {
        discarded = true;
        return Promise.resolve();
      },
    };
    setTimeout(() => stream.destroy(new Error('the upload failed')), 200);

    await expect(
      createArchive(volume, sink, undefined, undefined, { blockBytes: 16 * 1024 }),
    ).rejects.toThrow('the upload failed');
    expect(discarded).toBe(true);
  });
});

describe('VolumeDir', () => {
  // Pinning a directory relies on /proc/self/fd (Linux); elsewhere VolumeDir falls back to plain paths.
  it.skipIf(!fs.existsSync('/proc/self/fd'))(
    'keeps addressing the directory it opened even if its path is re-pointed by a symlink',
    async () => {
      const { root, volume } = workspace();
      write(path.join(volume, 'world/level.dat'), 'the real one');
      write(path.join(root, 'outside/level.dat'), 'host file');
      const dir = await VolumeDir.open(volume);
      const world = await dir.subdirectory('world');
      try {
        fs.renameSync(path.join(volume, 'world'), path.join(volume, 'moved'));
        fs.symlinkSync(path.join(root, 'outside'), path.join(volume, 'world'));

        expect(fs.readFileSync(world?.child('level.dat') ?? '', 'utf8')).toBe('the real one');
        expect(await dir.subdirectory('world')).toBeNull(); // a symlink is never opened as a directory
      } finally {
        await world?.close();
        await dir.close();
      }
    },
  );
});
