import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ArchiveError } from '../../../src/storage/archive/archive.types.ts';
import { createArchive } from '../../../src/storage/archive/archive-writer.ts';
import { restorePaths, stageRestore, type RestorePaths } from '../../../src/storage/volumes/restore-files.ts';
import { stageRestoreInThread } from '../../../src/storage/volumes/stage-restore.ts';

const UUID = '0b7e2d4c-5a61-4f0e-8c3b-9d2a1e6f7c80';
const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function workspace(): { root: string; paths: RestorePaths; source: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-stage-'));
  roots.push(root);
  const paths = restorePaths(path.join(root, 'volumes'), UUID, 3);
  fs.mkdirSync(paths.volume, { recursive: true });
  fs.writeFileSync(path.join(paths.volume, 'live-only.txt'), 'kept without truncate');
  const source = path.join(root, 'source');
  fs.mkdirSync(path.join(source, 'world'), { recursive: true });
  return { root, paths, source };
}

/** Path → content digest of every file under `dir` (directories as 'dir'). */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, full)] = entry.isDirectory() ? 'dir' : fs.readFileSync(full).toString('base64');
  }
  return out;
}

describe('stageRestoreInThread', () => {
  it('stages in a worker thread exactly what stageRestore stages in-process', async () => {
    const { root, paths, source } = workspace();
    fs.writeFileSync(path.join(source, 'world/level.dat'), randomBytes(50_000));
    fs.writeFileSync(path.join(source, 'server.properties'), 'motd=hi\n');
    const archive = path.join(root, 'backup.tar.gz');
    const summary = await createArchive(source, archive);

    const report = await stageRestoreInThread(paths, archive, { truncate: false, maxBytes: null });
    const inThread = tree(paths.staging);
    fs.rmSync(paths.staging, { recursive: true });
    const inProcess = await stageRestore(paths, archive, { truncate: false, maxBytes: null });

    expect(report).toEqual(inProcess);
    expect(report).toMatchObject({ files: 2, archiveSha256: summary.sha256 });
    expect(inThread).toEqual(tree(paths.staging));
    expect(inThread['live-only.txt']).toBe(Buffer.from('kept without truncate').toString('base64'));
    expect(fs.existsSync(paths.report)).toBe(true);
  });

  it('rethrows an ArchiveError with its reason, message and entry, and leaves no staging', async () => {
    const { root, paths } = workspace();
    const archive = path.join(root, 'not-a-tar.tar.gz');
    fs.writeFileSync(archive, gzipSync(gzipSync(Buffer.alloc(4096))));

    const error = await stageRestoreInThread(paths, archive, { truncate: true, maxBytes: null }).catch(
      (err: unknown) => err,
    );

    expect(error).toBeInstanceOf(ArchiveError);
    expect((error as ArchiveError).reason).toBe('corrupt');
    expect((error as ArchiveError).message).toMatch(/gzip inside gzip/);
    expect(fs.existsSync(paths.staging)).toBe(false);
    expect(fs.existsSync(paths.report)).toBe(false);
  });

  it('ends the thread when aborted mid-way and removes the staging tree', async () => {
    const { root, paths, source } = workspace();
    for (let n = 0; n < 64; n++)
      fs.writeFileSync(path.join(source, `world/r.${n}.mca`), randomBytes(1 << 20));
    const archive = path.join(root, 'backup.tar.gz');
    await createArchive(source, archive);
    const controller = new AbortController();

    const staged = stageRestoreInThread(paths, archive, {
      truncate: true,
      maxBytes: null,
      signal: controller.signal,
    });
    staged.catch(() => {});
    await expect
      .poll(() => fs.existsSync(path.join(paths.staging, 'world')), { timeout: 20_000, interval: 5 })
      .toBe(true);
    controller.abort(new Error('the job lease was lost'));

    await expect(staged).rejects.toThrow('the job lease was lost');
    expect(fs.existsSync(paths.staging)).toBe(false);
    expect(fs.existsSync(paths.report)).toBe(false);
    expect(fs.readdirSync(path.dirname(paths.volume))).toEqual([UUID]);
  });
});
