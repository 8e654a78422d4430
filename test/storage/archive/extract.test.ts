/**
 * extractArchive on ordinary archives and on simple refusals: content, modes, times, skipped
 * entries, long paths, damage, the disk limit, progress. Crafted hostile archives against real
 * directories are in extract-attacks.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header, Pax, type HeaderData } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ArchiveError,
  type ArchiveFailure,
  type Progress,
} from '../../../src/storage/archive/archive.types.ts';
import { extractArchive } from '../../../src/storage/archive/extract.ts';

const MiB = 1024 * 1024;
const MTIME = new Date('2024-03-01T12:00:00Z');

interface Entry extends HeaderData {
  path: string;
  content?: string | Buffer;
  /** Extra pax fields written in front of the entry (e.g. a path ustar cannot hold). */
  pax?: HeaderData;
}

/** A tar built header by header, so tests can write entries ordinary archivers refuse to. */
function tar(entries: Entry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const { content = '', pax, ...fields } of entries) {
    const body = Buffer.from(content);
    const type = fields.type ?? (fields.path.endsWith('/') ? 'Directory' : 'File');
    const header = new Header({ mode: 0o644, mtime: MTIME, ...fields, type, size: body.length });
    const needsPax = header.encode();
    if (pax || needsPax)
      blocks.push(new Pax({ path: fields.path, linkpath: fields.linkpath, ...pax }).encode());
    blocks.push(header.block ?? Buffer.alloc(0), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

const roots: string[] = [];

afterEach(() => {
  // rm(1) rather than fs.rmSync: some trees hold paths longer than one system call accepts.
  for (const root of roots.splice(0)) execFileSync('rm', ['-rf', root]);
});

function workspace(): { archive: (data: Buffer) => string; dest: string; root: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-'));
  roots.push(root);
  const dest = path.join(root, 'dest');
  fs.mkdirSync(dest);
  let count = 0;
  const archive = (data: Buffer): string => {
    const file = path.join(root, `archive-${count++}.tar.gz`);
    fs.writeFileSync(file, data);
    return file;
  };
  return { archive, dest, root };
}

async function extract(entries: Entry[], maxBytes: number | null = null) {
  const { archive, dest } = workspace();
  const report = await extractArchive(archive(gzipSync(tar(entries))), dest, { maxBytes });
  return { report, dest };
}

async function failure(promise: Promise<unknown>): Promise<ArchiveFailure> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArchiveError);
  return (err as ArchiveError).reason;
}

/** Open descriptors of this process (0 where /proc is not available). */
function openDescriptors(): number {
  return fs.existsSync('/proc/self/fd') ? fs.readdirSync('/proc/self/fd').length : 0;
}

const modeOf = (file: string) => fs.lstatSync(file).mode & 0o7777;

describe('extractArchive: regular content', () => {
  it('creates files and directories with their content, modes and mtimes', async () => {
    const dirTime = new Date('2023-05-05T05:05:05Z');
    const { report, dest } = await extract([
      { path: 'config/', mode: 0o750, mtime: dirTime },
      { path: 'config/server.yml', content: 'port: 25565\n', mode: 0o640 },
      { path: 'run.sh', content: '#!/bin/sh\n', mode: 0o4755 },
      { path: 'empty.txt' },
    ]);

    expect(report).toMatchObject({ files: 3, directories: 1, bytes: 22, skipped: [] });
    expect(fs.readFileSync(path.join(dest, 'config/server.yml'), 'utf8')).toBe('port: 25565\n');
    expect(fs.readFileSync(path.join(dest, 'empty.txt'), 'utf8')).toBe('');
    expect(modeOf(path.join(dest, 'config'))).toBe(0o750);
    expect(modeOf(path.join(dest, 'config/server.yml'))).toBe(0o640);
    expect(modeOf(path.join(dest, 'run.sh'))).toBe(0o755); // setuid stripped
    expect(fs.statSync(path.join(dest, 'run.sh')).mtime).toEqual(MTIME);
    // The directory's mtime survives the file written into it afterwards.
    expect(fs.statSync(path.join(dest, 'config')).mtime).toEqual(dirTime);
  });

  it('keeps directories writable for their owner and strips special bits', async () => {
    const { dest } = await extract([
      { path: 'locked/', mode: 0o500 },
      { path: 'locked/inside.txt', content: 'still written' },
      { path: 'shared/', mode: 0o3775 },
    ]);

    expect(fs.readFileSync(path.join(dest, 'locked/inside.txt'), 'utf8')).toBe('still written');
    expect(modeOf(path.join(dest, 'locked'))).toBe(0o700);
    expect(modeOf(path.join(dest, 'shared'))).toBe(0o775);
  });

  it('accepts old-style and contiguous file types', async () => {
    const { report, dest } = await extract([
      { path: 'old.txt', type: 'OldFile', content: 'old' },
      { path: 'contiguous.txt', type: 'ContiguousFile', content: 'contiguous' },
    ]);

    expect(report.files).toBe(2);
    expect(fs.readFileSync(path.join(dest, 'old.txt'), 'utf8')).toBe('old');
    expect(fs.readFileSync(path.join(dest, 'contiguous.txt'), 'utf8')).toBe('contiguous');
  });

  it('puts absolute and ./ paths inside the destination and creates missing parents', async () => {
    const { report, dest } = await extract([
      { path: './', mode: 0o777 },
      { path: '/etc/passwd', content: 'not the real one' },
      { path: './deep/er/file.txt', content: 'x' },
      { path: 'a//b/./c.txt', content: 'y' },
    ]);

    expect(fs.readFileSync(path.join(dest, 'etc/passwd'), 'utf8')).toBe('not the real one');
    expect(fs.readFileSync(path.join(dest, 'deep/er/file.txt'), 'utf8')).toBe('x');
    expect(fs.readFileSync(path.join(dest, 'a/b/c.txt'), 'utf8')).toBe('y');
    expect(modeOf(dest)).not.toBe(0o777); // the root entry is ignored
    expect(report.directories).toBe(5); // etc, deep, deep/er, a, a/b
  });

  it('resolves long names through pax headers', async () => {
    const long = `${'d'.repeat(150)}/${'é'.repeat(100)}.txt`;
    const { dest } = await extract([{ path: long, content: 'long' }]);

    expect(fs.readFileSync(path.join(dest, long), 'utf8')).toBe('long');
  });

  it('lets a later copy of a path replace the earlier one', async () => {
    const { dest } = await extract([
      { path: 'dup.txt', content: 'first, and longer' },
      { path: 'dup.txt', content: 'second', mode: 0o600 },
      { path: 'read-only.txt', content: 'first', mode: 0o444 },
      { path: 'read-only.txt', content: 'second', mode: 0o444 },
    ]);

    expect(fs.readFileSync(path.join(dest, 'dup.txt'), 'utf8')).toBe('second');
    expect(modeOf(path.join(dest, 'dup.txt'))).toBe(0o600);
    expect(fs.readFileSync(path.join(dest, 'read-only.txt'), 'utf8')).toBe('second');
  });

  it('streams large files intact', async () => {
    const data = randomBytes(6 * MiB + 123);
    const { report, dest } = await extract([{ path: 'world/region.mca', content: data }]);

    const written = fs.readFileSync(path.join(dest, 'world/region.mca'));
    expect(createHash('sha256').update(written).digest('hex')).toBe(
      createHash('sha256').update(data).digest('hex'),
    );
    expect(report.bytes).toBe(data.length);
  });

  it('treats an archive without entries as an empty tree', async () => {
    const { archive, dest } = workspace();
    const emptyTars = [Buffer.alloc(1024), Buffer.alloc(10240), Buffer.alloc(0)];
    for (const data of emptyTars) {
      const gz = gzipSync(data);
      const report = await extractArchive(archive(gz), dest, { maxBytes: 0 });
      // The checksum is of the archive file as read, taken on the same pass.
      const archiveSha256 = createHash('sha256').update(gz).digest('hex');
      expect(report).toEqual({ files: 0, directories: 0, bytes: 0, skipped: [], archiveSha256 });
    }
    expect(fs.readdirSync(dest)).toEqual([]);
  });
});

describe('extractArchive: entries that are never created', () => {
  it('skips links, devices, FIFOs and unknown types and reports each', async () => {
    const { report, dest } = await extract([
      { path: 'link', type: 'SymbolicLink', linkpath: '/etc' },
      { path: 'hard', type: 'Link', linkpath: 'link' },
      { path: 'tty', type: 'CharacterDevice', devmaj: 4, devmin: 1 },
      { path: 'disk', type: 'BlockDevice', devmaj: 8, devmin: 0 },
      { path: 'pipe', type: 'FIFO' },
      { path: 'sparse', type: 'SparseFile' },
      { path: 'kept.txt', content: 'kept' },
    ]);

    expect(report.skipped.map(({ path: p, kind }) => [p, kind])).toEqual([
      ['link', 'symlink'],
      ['hard', 'hardlink'],
      ['tty', 'character-device'],
      ['disk', 'block-device'],
      ['pipe', 'fifo'],
      ['sparse', 'other'],
    ]);
    expect(report.skipped.every((s) => s.reason.length > 0)).toBe(true);
    expect(fs.readdirSync(dest)).toEqual(['kept.txt']);
  });

  it('lists the first 1000 skipped entries and counts the rest', async () => {
    const links: Entry[] = Array.from({ length: 1005 }, (_, i) => ({
      path: `l${i}`,
      type: 'SymbolicLink',
      linkpath: 'x',
    }));
    const { report } = await extract(links);
    expect(report.skipped).toHaveLength(1000);
    expect(report.skippedOmitted).toBe(5);
  });
});

describe('extractArchive: refusals', () => {
  const cases: { name: string; entries: Entry[]; reason: ArchiveFailure }[] = [
    { name: 'a .. component', entries: [{ path: '../escape.txt', content: 'x' }], reason: 'unsafe-path' },
    { name: 'a .. in the middle', entries: [{ path: 'a/../../x', content: 'x' }], reason: 'unsafe-path' },
    {
      name: 'a .. in a skipped symlink',
      entries: [{ path: '../l', type: 'SymbolicLink', linkpath: 'x' }],
      reason: 'unsafe-path',
    },
    {
      name: 'a component over 255 bytes',
      entries: [{ path: `${'n'.repeat(256)}`, content: 'x' }],
      reason: 'name-too-long',
    },
    {
      name: 'a path over 4096 bytes',
      entries: [{ path: Array.from({ length: 20 }, () => 'p'.repeat(250)).join('/'), content: 'x' }],
      reason: 'name-too-long',
    },
    {
      name: 'a file under a file',
      entries: [
        { path: 'a', content: 'file' },
        { path: 'a/b', content: 'under' },
      ],
      reason: 'conflict',
    },
    {
      name: 'a file over a directory',
      entries: [{ path: 'd/' }, { path: 'd', content: 'file' }],
      reason: 'conflict',
    },
    {
      name: 'a directory over a file',
      entries: [{ path: 'f', content: 'file' }, { path: 'f/' }],
      reason: 'conflict',
    },
  ];

  for (const { name, entries, reason } of cases) {
    it(`fails with ${reason} on ${name}`, async () => {
      const { archive, dest, root } = workspace();
      expect(await failure(extractArchive(archive(gzipSync(tar(entries))), dest, { maxBytes: null }))).toBe(
        reason,
      );
      expect(fs.readdirSync(root).sort()).toEqual(['archive-0.tar.gz', 'dest']);
    });
  }

  it('never writes through a symlink already at the target path', async () => {
    const { archive, dest, root } = workspace();
    const outside = path.join(root, 'outside.txt');
    fs.writeFileSync(outside, 'untouched');
    fs.symlinkSync(outside, path.join(dest, 'file.txt'));
    const file = archive(gzipSync(tar([{ path: 'file.txt', content: 'overwritten?' }])));

    expect(await failure(extractArchive(file, dest, { maxBytes: null }))).toBe('conflict');
    expect(fs.readFileSync(outside, 'utf8')).toBe('untouched');
  });

  it('stops at the first unsafe entry', async () => {
    const { archive, dest } = workspace();
    const file = archive(
      gzipSync(
        tar([
          { path: '../x', content: 'x' },
          { path: 'after.txt', content: 'y' },
        ]),
      ),
    );
    expect(await failure(extractArchive(file, dest, { maxBytes: null }))).toBe('unsafe-path');
    expect(fs.existsSync(path.join(dest, 'after.txt'))).toBe(false);
  });
});

/** `bytes` bytes of path in components of at most 250 bytes. */
function deepPath(bytes: number): string {
  const parts: string[] = [];
  let length = 0;
  while (length + 252 < bytes) {
    parts.push(String(parts.length).padEnd(250, 'd'));
    length += 251;
  }
  parts.push('f'.padEnd(bytes - length, 'f'));
  return parts.join('/');
}

/** Reads a file whose path is too long for one system call, one directory at a time. */
function readDeep(root: string, rel: string): string {
  const parts = rel.split('/');
  let fd = fs.openSync(root, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  for (const part of parts.slice(0, -1)) {
    const next = fs.openSync(`/proc/self/fd/${fd}/${part}`, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    fs.closeSync(fd);
    fd = next;
  }
  try {
    return fs.readFileSync(`/proc/self/fd/${fd}/${parts.at(-1)}`, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

describe('extractArchive: long paths', () => {
  /** A destination whose own path is long, so that it plus a long entry path passes 4096 bytes. */
  function deepWorkspace() {
    const ws = workspace();
    const dest = path.join(ws.root, 'x'.repeat(200), 'y'.repeat(200), 'dest');
    fs.mkdirSync(dest, { recursive: true });
    return { ...ws, dest };
  }

  it.runIf(fs.existsSync('/proc/self/fd'))(
    'extracts an entry path of 4,090 bytes, however long the destination path is',
    async () => {
      const { archive, dest } = deepWorkspace();
      const deep = deepPath(4090);
      const dir = deep.slice(0, deep.lastIndexOf('/'));
      expect(Buffer.byteLength(deep)).toBe(4090);
      expect(Buffer.byteLength(path.join(dest, deep))).toBeGreaterThan(4096);
      const before = openDescriptors();

      const report = await extractArchive(
        archive(
          gzipSync(
            tar([
              { path: `${dir}/`, mode: 0o750 },
              { path: deep, content: 'deep', mode: 0o640 },
              { path: deepPath(4015), content: 'the issue’s 4,015 bytes' },
            ]),
          ),
        ),
        dest,
        { maxBytes: null },
      );

      expect(report).toMatchObject({ files: 2, directories: 16, skipped: [] });
      expect(readDeep(dest, deep)).toBe('deep');
      expect(readDeep(dest, deepPath(4015))).toBe('the issue’s 4,015 bytes');
      const listed = execFileSync('find', [dest, '-printf', '%P %m\n'], { encoding: 'utf8' });
      expect(listed).toContain(`${dir} 750\n`);
      expect(listed).toContain(`${deep} 640\n`);
      expect(openDescriptors()).toBe(before);
    },
  );

  const hostile: { name: string; entries: Entry[]; reason: ArchiveFailure }[] = [
    {
      name: 'a path of 4,097 bytes',
      entries: [{ path: deepPath(4097), content: 'x' }],
      reason: 'name-too-long',
    },
    {
      name: 'a long path with a .. component',
      entries: [{ path: `${deepPath(4000)}/../x`, content: 'x' }],
      reason: 'unsafe-path',
    },
    {
      name: 'a long path under a file',
      entries: [
        { path: deepPath(3000), content: 'file' },
        { path: `${deepPath(3000)}/under`, content: 'x' },
      ],
      reason: 'conflict',
    },
  ];

  for (const { name, entries, reason } of hostile) {
    it(`fails with ${reason} on ${name}, saying so in under 200 characters`, async () => {
      const { archive, dest } = deepWorkspace();
      const err = await extractArchive(archive(gzipSync(tar(entries))), dest, { maxBytes: null }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ArchiveError);
      expect((err as ArchiveError).reason).toBe(reason);
      expect((err as ArchiveError).message.length).toBeLessThan(200);
    });
  }
});

describe('extractArchive: damaged archives', () => {
  const valid = tar([
    { path: 'a.txt', content: 'a'.repeat(5000) },
    { path: 'b.txt', content: 'b'.repeat(5000) },
  ]);
  const badChecksum = Buffer.from(valid);
  badChecksum[148] = 0x37; // first byte of the first header's checksum field
  const gz = gzipSync(valid);

  const cases: { name: string; data: Buffer }[] = [
    { name: 'a truncated gzip stream', data: gz.subarray(0, gz.length - 40) },
    { name: 'a tar that ends inside an entry', data: gzipSync(valid.subarray(0, 512 + 3000)) },
    { name: 'a tar that ends inside a header', data: gzipSync(valid.subarray(0, 300)) },
    { name: 'a bad header checksum', data: gzipSync(badChecksum) },
    { name: 'a file that is not gzip', data: valid },
    { name: 'gzip around something that is not tar', data: gzipSync(randomBytes(4096)) },
    { name: 'an empty file', data: Buffer.alloc(0) },
  ];

  for (const { name, data } of cases) {
    it(`fails with corrupt on ${name}, releasing every descriptor`, async () => {
      const { archive, dest } = workspace();
      const file = archive(data);
      const before = openDescriptors();
      expect(await failure(extractArchive(file, dest, { maxBytes: null }))).toBe('corrupt');
      expect(openDescriptors()).toBe(before);
    });
  }

  it('fails with not-found when the archive is missing', async () => {
    const { dest, root } = workspace();
    expect(await failure(extractArchive(path.join(root, 'missing.tar.gz'), dest, { maxBytes: null }))).toBe(
      'not-found',
    );
  });
});

describe('extractArchive: disk limit', () => {
  it('refuses content over maxBytes', async () => {
    const { archive, dest } = workspace();
    const file = archive(gzipSync(tar([{ path: 'big.bin', content: Buffer.alloc(2 * MiB) }])));
    const before = openDescriptors();
    expect(await failure(extractArchive(file, dest, { maxBytes: MiB }))).toBe('disk-limit');
    expect(openDescriptors()).toBe(before);
  });

  it('charges 4 KiB per created entry on top of the content', async () => {
    const entries: Entry[] = Array.from({ length: 10 }, (_, i) => ({ path: `f${i}`, content: 'x' }));
    const { archive, dest } = workspace();
    const file = archive(gzipSync(tar(entries)));
    expect(await failure(extractArchive(file, dest, { maxBytes: 10 * 4096 }))).toBe('disk-limit');

    const ok = workspace();
    const report = await extractArchive(ok.archive(gzipSync(tar(entries))), ok.dest, { maxBytes: 10 * 4097 });
    expect(report.files).toBe(10);
  });

  it('adds up files that each fit', async () => {
    const { archive, dest } = workspace();
    const content = Buffer.alloc(MiB, 1);
    const file = archive(gzipSync(tar(['a', 'b', 'c'].map((name) => ({ path: name, content })))));
    expect(await failure(extractArchive(file, dest, { maxBytes: 2.5 * MiB }))).toBe('disk-limit');
    expect(fs.existsSync(path.join(dest, 'c'))).toBe(false);
  });

  it('stops a gzip bomb quickly', async () => {
    const { archive, dest } = workspace();
    const bomb = archive(gzipSync(tar([{ path: 'zeros', content: Buffer.alloc(128 * MiB) }]), { level: 9 }));
    expect(fs.statSync(bomb).size).toBeLessThan(MiB);

    const started = Date.now();
    expect(await failure(extractArchive(bomb, dest, { maxBytes: 10 * MiB }))).toBe('disk-limit');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('extractArchive: progress', () => {
  it('reports at most every ~250 ms and once at the end with the totals', async () => {
    const { archive, dest } = workspace();
    const content = randomBytes(MiB);
    const entries = Array.from({ length: 40 }, (_, i) => ({ path: `f${i}`, content }));
    const file = archive(gzipSync(tar(entries), { level: 1 }));
    const calls: { at: number; progress: Progress }[] = [];

    const report = await extractArchive(file, dest, { maxBytes: null }, (progress) =>
      calls.push({ at: Date.now(), progress }),
    );

    // Bytes of content written, and bytes of the archive read (all of it).
    expect(calls.at(-1)?.progress).toEqual({
      files: 40,
      bytes: 40 * MiB,
      archiveBytes: fs.statSync(file).size,
    });
    expect(report.bytes).toBe(40 * MiB);
    for (let i = 1; i < calls.length - 1; i++) {
      expect((calls[i]?.at ?? 0) - (calls[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(240);
    }
  });
});
