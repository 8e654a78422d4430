/**
 * archiveVolume runs createArchive in a worker thread: stopping it mid-way (the job's signal)
 * ends the thread, whose compression is in flight, and leaves no file behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { archiveVolume } from '../../src/backups/backup-archive.ts';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

describe('archiveVolume', () => {
  it('leaves neither the archive nor a partial file when aborted mid-way', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-archive-'));
    roots.push(root);
    const volume = path.join(root, 'volume');
    fs.mkdirSync(volume);
    // Incompressible, so that compressing it takes a while (tens of milliseconds per MiB).
    for (let n = 0; n < 48; n++) fs.writeFileSync(path.join(volume, `region-${n}.mca`), randomBytes(1 << 20));
    const output = path.join(root, 'backup.tar.gz');
    const partial = `${output}.partial`;
    const controller = new AbortController();

    const archived = archiveVolume(volume, output, { signal: controller.signal });
    archived.catch(() => {});
    // Abort once compressed members have reached the partial file.
    await expect
      .poll(() => (fs.existsSync(partial) ? fs.statSync(partial).size : 0), { timeout: 20_000, interval: 5 })
      .toBeGreaterThan(0);
    controller.abort(new Error('the job lease was lost'));

    await expect(archived).rejects.toThrow('the job lease was lost');
    expect(fs.readdirSync(root)).toEqual(['volume']);
  });

  it('writes an archive whose recorded size and checksum are those of the file', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-archive-'));
    roots.push(root);
    const volume = path.join(root, 'volume');
    fs.mkdirSync(volume);
    fs.writeFileSync(path.join(volume, 'data.bin'), randomBytes(3 << 20)); // several gzip members
    const output = path.join(root, 'backup.tar.gz');

    const summary = await archiveVolume(volume, output);

    const bytes = fs.readFileSync(output);
    expect(summary.archiveBytes).toBe(bytes.length);
    expect(summary.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(fs.readdirSync(root).sort()).toEqual(['backup.tar.gz', 'volume']);
  });
});
