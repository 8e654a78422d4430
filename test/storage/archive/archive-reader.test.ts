import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { readArchive } from '../../../src/storage/archive/archive-reader.ts';

const MiB = 1024 * 1024;
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A .tar.gz file of the given files, each in one tar entry. */
function archiveOf(files: Record<string, Buffer>): string {
  const blocks: Buffer[] = [];
  for (const [name, body] of Object.entries(files)) {
    const header = new Header({
      path: name,
      type: 'File',
      mode: 0o644,
      size: body.length,
      mtime: new Date(0),
    });
    header.encode();
    blocks.push(header.block ?? Buffer.alloc(0), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-reader-'));
  dirs.push(dir);
  const file = path.join(dir, 'archive.tar.gz');
  fs.writeFileSync(file, gzipSync(Buffer.concat(blocks), { level: 1 }));
  return file;
}

describe('readArchive: entry bodies', () => {
  it('hands every chunk in order to handlers that return nothing and to handlers that return a promise', async () => {
    const files = { a: randomBytes(3 * MiB), b: randomBytes(100), c: randomBytes(2 * MiB) };
    const file = archiveOf(files);
    const seen: Record<string, Buffer[]> = {};
    let turn = 0;
    await readArchive(file, async ({ rel, readBody }) => {
      const chunks: Buffer[] = (seen[rel] = []);
      await readBody((chunk) => {
        chunks.push(Buffer.from(chunk));
        // Alternate: handled at once, or once a promise settles.
        if (turn++ % 2 === 0) return;
        return new Promise<void>((resolve) => setImmediate(resolve));
      });
    });
    for (const [name, body] of Object.entries(files))
      expect(Buffer.concat(seen[name] ?? []).equals(body)).toBe(true);
  });

  it('hands on no chunk after a handler that returns nothing throws, and rejects with its error', async () => {
    const file = archiveOf({ big: randomBytes(4 * MiB), after: randomBytes(10) });
    let chunks = 0;
    const entries: string[] = [];
    const read = readArchive(file, async ({ rel, readBody }) => {
      entries.push(rel);
      await readBody(() => {
        chunks += 1;
        throw new Error('stop here');
      });
    });
    await expect(read).rejects.toThrow('stop here');
    expect(chunks).toBe(1);
    expect(entries).toEqual(['big']);
  });
});
