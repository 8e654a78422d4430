/**
 * ReadWarmer: reads the files a walk will read next, in its order, no further ahead than its
 * budget, never past a subdirectory the walk has not entered, never a file it skips, never through
 * a symlink; what it read is released as the walk passes it or leaves the directory.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReadWarmer, type WalkStep } from '../../src/storage/read-warmer.ts';
import { VolumeDir } from '../../src/storage/volume-dir.ts';

const MiB = 1024 * 1024;

let root: string;
const open: VolumeDir[] = [];

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-warmer-'));
});

afterEach(async () => {
  for (const dir of open.splice(0)) await dir.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function file(relative: string, bytes: number): void {
  const target = path.join(root, relative);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, randomBytes(bytes));
}

async function dir(relative = ''): Promise<VolumeDir> {
  const opened = await VolumeDir.open(path.join(root, relative));
  open.push(opened);
  return opened;
}

/** A plan of [name, step] pairs, in the walk's order. */
function plan(entries: [string, WalkStep][]) {
  return { length: entries.length, name: (i: number) => entries[i]![0], step: (i: number) => entries[i]![1] };
}

describe('ReadWarmer', () => {
  it('reads the files to be read, stopping at a subdirectory the walk has not entered', async () => {
    file('a.bin', 100_000);
    file('b.bin', 200_000);
    file('c.bin', 300_000);
    file('sub/d.bin', 50_000);
    file('e.bin', 400_000);
    const warmer = new ReadWarmer({ aheadBytes: 64 * MiB, reading: 2 });
    const frame = warmer.enter(
      await dir(),
      plan([
        ['a.bin', 'read'],
        ['b.bin', 'skip'], // the parent holds it unchanged: the walk will not read it
        ['c.bin', 'read'],
        ['sub', 'directory'],
        ['e.bin', 'read'],
      ]),
    );
    await warmer.whenIdle();
    expect(new Map(frame.warmed)).toEqual(
      new Map([
        [0, 100_000],
        [2, 300_000],
      ]),
    );
    expect(warmer.bytesAhead).toBe(400_000);

    // The walk reaches the subdirectory: what came before it is used, and the warmer goes into it.
    frame.reached(3);
    expect(warmer.bytesAhead).toBe(0);
    const inner = warmer.enter(await dir('sub'), plan([['d.bin', 'read']]));
    await warmer.whenIdle();
    expect(new Map(inner.warmed)).toEqual(new Map([[0, 50_000]]));
    // Nothing is left in the subdirectory: the warmer goes on after it, in the directory around it.
    expect(new Map(frame.warmed)).toEqual(new Map([[4, 400_000]]));
    expect(warmer.bytesAhead).toBe(450_000);

    inner.reached(0);
    inner.close();
    expect(warmer.bytesAhead).toBe(400_000);
    frame.reached(4);
    frame.close();
    expect(warmer.bytesAhead).toBe(0);
  });

  it('stays within its budget, and goes on as the walk uses what it read', async () => {
    for (let i = 0; i < 8; i++) file(`f${i}.bin`, 3 * MiB);
    const warmer = new ReadWarmer({ aheadBytes: 4 * MiB, reading: 2 });
    const frame = warmer.enter(await dir(), plan(Array.from({ length: 8 }, (_, i) => [`f${i}.bin`, 'read'])));
    await warmer.whenIdle();
    // A read starts only while less than the budget is ahead: it ends at most a read's size (1 MiB) past it, for each file read at once.
    expect(warmer.bytesAhead).toBeGreaterThanOrEqual(4 * MiB);
    expect(warmer.bytesAhead).toBeLessThanOrEqual(6 * MiB);
    const warmedFirst = [...frame.warmed.keys()];
    expect(Math.max(...warmedFirst)).toBeLessThan(3);

    frame.reached(4); // the walk is at f4: f0 to f3 are used, so the warmer reads f5 on
    await warmer.whenIdle();
    expect(Math.min(...frame.warmed.keys())).toBeGreaterThanOrEqual(5);
    expect(frame.warmed.get(5)).toBeGreaterThan(0);
    frame.close();
    await warmer.whenIdle();
    expect(warmer.bytesAhead).toBe(0);
  });

  it('reads nothing through a symlink, nor what is not a regular file, nor what is gone', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-warmer-outside-'));
    try {
      fs.writeFileSync(path.join(outside, 'secret.bin'), randomBytes(500_000));
      fs.symlinkSync(path.join(outside, 'secret.bin'), path.join(root, 'link.bin'));
      fs.mkdirSync(path.join(root, 'a-directory'));
      file('real.bin', 10_000);
      const warmer = new ReadWarmer({ aheadBytes: 64 * MiB, reading: 2 });
      const frame = warmer.enter(
        await dir(),
        plan([
          ['link.bin', 'read'],
          ['a-directory', 'read'], // listed as a file, replaced since
          ['gone.bin', 'read'],
          ['real.bin', 'read'],
        ]),
      );
      await warmer.whenIdle();
      expect(new Map(frame.warmed)).toEqual(new Map([[3, 10_000]]));
      frame.close();
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('does not read a file the walk has reached, nor anything of a directory it left', async () => {
    for (let i = 0; i < 4; i++) file(`f${i}.bin`, 2 * MiB);
    const warmer = new ReadWarmer({ aheadBytes: 64 * MiB, reading: 1 });
    const frame = warmer.enter(await dir(), plan(Array.from({ length: 4 }, (_, i) => [`f${i}.bin`, 'read'])));
    frame.reached(2); // before any read ran: f0 and f1 are the walk's already
    frame.close();
    await warmer.whenIdle();
    expect(frame.warmed.size).toBe(0);
    expect(warmer.bytesAhead).toBe(0);
  });
});
