import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { zstdFrame } from './hostile-archives.ts';
import { rawTar, rawTarGz, writeTarGz } from '../../support/raw-tar.ts';
import { extractArchive } from '../../../src/storage/archive/extract.ts';
import { verifyArchive } from '../../../src/storage/archive/verify-archive.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-verify-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const entries = [
  { path: 'a.txt', content: 'hello' },
  { path: 'b.txt', content: 'world' },
];

describe('verifyArchive', () => {
  it('reads a whole archive to its end and counts it', async () => {
    const file = path.join(dir, 'whole.tar.gz');
    await writeTarGz(file, entries);
    expect(await verifyArchive(file)).toEqual({ files: 2, bytes: 10 });
  });

  it('judges a tar without end blocks as a restore does: whole, when its gzip stream is', async () => {
    const file = path.join(dir, 'no-end.tar.gz');
    await writeTarGz(file, entries, { endBlocks: 0 });
    expect(await verifyArchive(file)).toEqual({ files: 2, bytes: 10 });
    const destination = fs.mkdtempSync(path.join(dir, 'out-'));
    await expect(extractArchive(file, destination, { maxBytes: null })).resolves.toMatchObject({ files: 2 });
  });

  it('refuses a tar cut inside an entry', async () => {
    const file = path.join(dir, 'cut.tar.gz');
    await writeTarGz(file, entries, { truncateTarAt: 512 + 3 });
    await expect(verifyArchive(file)).rejects.toMatchObject({ reason: 'corrupt' });
  });

  it('takes an empty archive as whole', async () => {
    const file = path.join(dir, 'empty.tar.gz');
    await writeTarGz(file, []);
    expect(await verifyArchive(file)).toEqual({ files: 0, bytes: 0 });
    // Even a gzip stream of nothing: a tar of no bytes holds no entries, as a restore reads it.
    fs.writeFileSync(file, gzipSync(Buffer.alloc(0)));
    expect(await verifyArchive(file)).toEqual({ files: 0, bytes: 0 });
  });

  it('counts the files a restore would write, and their bytes', async () => {
    const file = path.join(dir, 'mixed.tar.gz');
    await writeTarGz(file, [
      { path: './' },
      { path: 'world/' },
      { path: 'world/level.dat', content: 'level' },
      { path: 'link', type: '2', linkname: 'world' },
      { path: 'pipe', type: '6' },
    ]);
    const seen: unknown[] = [];
    expect(await verifyArchive(file, (p) => seen.push({ ...p }))).toEqual({ files: 1, bytes: 5 });
    expect(seen).toEqual([{ files: 1, bytes: 5 }]);
  });

  it('refuses what a restore refuses, with the same reason', async () => {
    const file = path.join(dir, 'escape.tar.gz');
    await writeTarGz(file, [...entries, { path: '../escape.txt', content: 'x' }]);
    await expect(verifyArchive(file)).rejects.toMatchObject({
      reason: 'unsafe-path',
      message: 'entry path ../escape.txt leaves the volume',
    });
  });

  const notGzippedTars: [string, Buffer, RegExp][] = [
    ['an uncompressed tar', rawTar(entries), /a tar without gzip compression/],
    ['a zstd-compressed tar', zstdFrame(rawTar(entries)), /compressed with zstd, not gzip/],
    ['a tar compressed twice', gzipSync(rawTarGz(entries)), /compressed twice/],
    ['zstd inside gzip', gzipSync(zstdFrame(rawTar(entries))), /holds zstd-compressed data/],
    ['brotli (no signature to tell)', brotliCompressSync(rawTar(entries)), /gzip data is damaged/],
    ['an empty file', Buffer.alloc(0), /the archive file is empty/],
  ];
  for (const [name, data, message] of notGzippedTars) {
    it(`refuses ${name}, saying what it is`, async () => {
      const file = path.join(dir, 'not-gzipped.tar.gz');
      fs.writeFileSync(file, data);
      await expect(verifyArchive(file)).rejects.toMatchObject({ reason: 'corrupt', message });
    });
  }
});
