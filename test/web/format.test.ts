/**
 * The panel's wording of counts and progress (web/src/format.ts, which runs in Node as well): a
 * count in the number its noun takes, and no time left promised before a rate is measured.
 */
import { describe, expect, it } from 'vitest';
import type { Progress } from '../../web/src/api/types.ts';
import { formatBackupSize, plural, progressFigures, RATE_SECONDS } from '../../web/src/format.ts';

const START = Date.UTC(2026, 0, 1);

/** A progress report `seconds` after its start. */
function progress(seconds: number, fields: Partial<Progress>): Progress {
  return {
    operation: 'restore',
    phase: 'extracting',
    bytes_done: 0,
    bytes_total: null,
    files_done: 0,
    files_total: null,
    started_at: new Date(START).toISOString(),
    updated_at: new Date(START + seconds * 1000).toISOString(),
    ...fields,
  };
}

describe('plural', () => {
  it('says one of a thing, and any other number of things', () => {
    expect(plural(1, 'file')).toBe('1 file');
    expect(plural(2, 'file')).toBe('2 files');
    expect(plural(0, 'file')).toBe('0 files');
    expect(plural(1, 'entry', 'entries')).toBe('1 entry');
    expect(plural(61, 'entry', 'entries')).toBe('61 entries');
  });

  it('groups the digits of a large count', () => {
    expect(plural(12_345, 'file')).toBe('12,345 files');
    expect(plural(1_000_000, 'entry', 'entries')).toBe('1,000,000 entries');
    expect(plural(999, 'file')).toBe('999 files');
  });
});

describe('formatBackupSize', () => {
  it('gives the size, then the files in the number their noun takes', () => {
    expect(formatBackupSize(378_000, 1)).toBe('378 KB, 1 file');
    expect(formatBackupSize(2_100_000_000, 12_345)).toBe('2.1 GB, 12,345 files');
    expect(formatBackupSize(0, 0)).toBe('0 B, 0 files');
  });

  it('says nothing of files when their count is not known', () => {
    expect(formatBackupSize(5_000, null)).toBe('5.0 KB');
  });
});

describe('progressFigures', () => {
  it('tells no time left while nothing has moved', () => {
    const figures = progressFigures(progress(30, { bytes_total: 1_000_000 }));
    expect(figures).toEqual({ percent: 0, secondsLeft: null, estimated: false });
  });

  it('tells no time left from the first second of a short job, however little it moved', () => {
    // The case seen: a backup of 3 s, 0.1% done after its first second, would promise 16 min.
    const early = progressFigures(progress(1, { operation: 'backup', bytes_done: 1_000 }), 1_000_000);
    expect(early.percent).toBe(0);
    expect(early.secondsLeft).toBeNull();
    const justShort = progressFigures(progress(RATE_SECONDS - 0.1, { bytes_done: 500, bytes_total: 1_000 }));
    expect(justShort.percent).toBe(50);
    expect(justShort.secondsLeft).toBeNull();
  });

  it('tells the time left at the rate so far once it has been measured', () => {
    const figures = progressFigures(progress(RATE_SECONDS, { bytes_done: 250, bytes_total: 1_000 }));
    expect(figures.percent).toBe(25);
    expect(figures.secondsLeft).toBeCloseTo(3 * RATE_SECONDS);
    // By files when the bytes' total is not known.
    const byFiles = progressFigures(progress(10, { files_done: 1, files_total: 2 }));
    expect(byFiles).toEqual({ percent: 50, secondsLeft: 10, estimated: false });
  });

  it("takes a backup's totals (the last snapshot's) as an estimate, never past 99%, and a restore's as known", () => {
    const backup = progressFigures(
      progress(10, { operation: 'backup', bytes_done: 1_000, bytes_total: 1_000 }),
    );
    expect(backup).toMatchObject({ percent: 99, estimated: true });
    const byFiles = progressFigures(progress(10, { operation: 'backup', files_done: 1, files_total: 4 }));
    expect(byFiles).toMatchObject({ percent: 25, estimated: true });
    const restore = progressFigures(
      progress(10, { operation: 'restore', bytes_done: 1_000, bytes_total: 1_000 }),
    );
    expect(restore).toMatchObject({ percent: 100, estimated: false });
  });

  it('is almost done when everything has moved, however soon', () => {
    expect(progressFigures(progress(0.5, { bytes_done: 10, bytes_total: 10 })).secondsLeft).toBe(0);
  });
});
