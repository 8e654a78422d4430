import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeTarGz } from '../../test/support/raw-tar.ts';
import { extractArchive } from './extract.ts';
import { verifyArchive } from './verify-archive.ts';

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
  });
});
