import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectoryRoot, removeTreeByDescriptor } from '../../src/storage/directory-root.ts';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) execFileSync('rm', ['-rf', root]);
});

/** A directory whose own path is over 400 bytes long. */
function longRoot(): { root: string; dir: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-'));
  roots.push(root);
  const dir = path.join(root, 'a'.repeat(200), 'b'.repeat(200), 'dir');
  fs.mkdirSync(dir, { recursive: true });
  return { root, dir };
}

/** 16 components of 250 bytes, then one of 74: 4,090 bytes in all. */
const DEEP_DIR = Array.from({ length: 16 }, (_, i) => String(i).padEnd(250, 'd')).join('/');
const DEEP_FILE = `${DEEP_DIR}/${'f'.repeat(74)}`;

describe.runIf(fs.existsSync('/proc/self/fd'))('DirectoryRoot', () => {
  it('makes, writes and reads a 4,090-byte path under a long directory path, counting what it makes', async () => {
    const { dir } = longRoot();
    expect(Buffer.byteLength(DEEP_FILE)).toBe(4090);
    const root = await DirectoryRoot.open(dir);
    try {
      expect(await root.makeDirectories(DEEP_DIR, 0o755)).toBe(16);
      expect(await root.makeDirectories(DEEP_DIR, 0o755)).toBe(0);
      expect(await root.makeDirectories(`${DEEP_DIR.slice(0, 250)}/new/newer`, 0o755)).toBe(2);
      await root.at(DEEP_FILE, (target) => fs.promises.writeFile(target, 'deep'));
      expect(await root.at(DEEP_FILE, (target) => fs.promises.readFile(target, 'utf8'))).toBe('deep');
      expect(await root.at('', (target) => fs.promises.stat(target))).toMatchObject({
        ino: fs.statSync(dir).ino,
      });
    } finally {
      await root.close();
    }
    const found = execFileSync('find', [dir, '-type', 'f', '-printf', '%P'], { encoding: 'utf8' });
    expect(found).toBe(DEEP_FILE);
  });

  it('does not follow a symlink in the way of a directory it steps through', async () => {
    const { root: base, dir } = longRoot();
    const outside = path.join(base, 'outside');
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, path.join(dir, DEEP_DIR.slice(0, 250)));
    const root = await DirectoryRoot.open(dir);
    try {
      // 4,090 bytes of directories: too long for one call, so the first ones are stepped through.
      const deepDirs = `${DEEP_DIR}/${'g'.repeat(74)}`;
      await expect(root.makeDirectories(deepDirs, 0o755)).rejects.toMatchObject({
        code: expect.stringMatching(/^(ELOOP|ENOTDIR)$/) as unknown,
      });
    } finally {
      await root.close();
    }
    expect(fs.readdirSync(outside)).toEqual([]);
  });
});

describe.runIf(fs.existsSync('/proc/self/fd'))('removeTreeByDescriptor', () => {
  it('removes a tree deeper than one system call can name, and read-only directories', async () => {
    const { dir } = longRoot();
    const root = await DirectoryRoot.open(dir);
    try {
      await root.makeDirectories(DEEP_DIR, 0o755);
      await root.at(DEEP_FILE, (target) => fs.promises.writeFile(target, 'deep'));
      await root.at(DEEP_DIR, (target) => fs.promises.chmod(target, 0o500));
    } finally {
      await root.close();
    }
    fs.mkdirSync(path.join(dir, 'readonly'));
    fs.writeFileSync(path.join(dir, 'readonly', 'x'), 'x');
    fs.chmodSync(path.join(dir, 'readonly'), 0o500);

    await removeTreeByDescriptor(dir);

    expect(fs.existsSync(dir)).toBe(false);
  });

  it('removes symlinks without following them', async () => {
    const { root: base, dir } = longRoot();
    const outside = path.join(base, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'keep');
    fs.symlinkSync(outside, path.join(dir, 'to-outside'));
    fs.symlinkSync(path.join(outside, 'keep.txt'), path.join(dir, 'to-file'));

    await removeTreeByDescriptor(dir);

    expect(fs.existsSync(dir)).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep');
  });

  it('does nothing when the tree is already gone', async () => {
    const { root } = longRoot();
    await expect(removeTreeByDescriptor(path.join(root, 'missing'))).resolves.toBeUndefined();
  });
});
