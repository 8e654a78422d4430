/**
 * A restore is recorded when it is asked for and runs in the background, so its entries must not
 * say it is done before it is: the request "started" it, and its end "finished" it (with what it
 * wrote) or "failed". The panel shows these sentences as they are, so they are the only ones.
 */
import { describe, expect, it } from 'vitest';
import { describeEvent, hasAdditionalMetadata } from '../../src/activity/activity.events.ts';

describe('the sentences of a restore', () => {
  it('says the request started it, and never that it restored anything', () => {
    const plain = describeEvent('server:backup.restore', { name: 'nightly', truncate: false });
    const truncating = describeEvent('server:backup.restore', { name: 'nightly', truncate: true });
    expect(plain).toBe('Started restoring backup nightly');
    expect(truncating).toBe('Started restoring backup nightly (files deleted first)');
    for (const sentence of [plain, truncating]) expect(sentence).not.toMatch(/^Restored\b/);
  });

  it('says the end finished it, counting the files it wrote in the number they take', () => {
    const finished = (properties: Record<string, unknown>) =>
      describeEvent('server:backup.restore-complete', { name: 'nightly', ...properties });
    expect(finished({ files: 1 })).toBe('Finished restoring backup nightly (1 file)');
    expect(finished({ files: 49 })).toBe('Finished restoring backup nightly (49 files)');
    expect(finished({ files: 0 })).toBe('Finished restoring backup nightly (0 files)');
    expect(finished({ files: 1, skipped_count: 1 })).toBe(
      'Finished restoring backup nightly (1 file, 1 link or special file skipped)',
    );
    expect(finished({ files: 2, skipped_count: 1005 })).toBe(
      'Finished restoring backup nightly (2 files, 1005 links or special files skipped)',
    );
    // Completed by crash recovery without its report: how many is not known, so not said.
    expect(finished({})).toBe('Finished restoring backup nightly');
    expect(finished({ files: 'many' })).toBe('Finished restoring backup nightly');
  });

  it('says the end failed, and why', () => {
    expect(
      describeEvent('server:backup.restore-failed', { name: 'nightly', reason: 'the archive is corrupt' }),
    ).toBe('Failed to restore backup nightly: the archive is corrupt');
  });

  it('counts only what the sentence does not say as additional metadata', () => {
    expect(hasAdditionalMetadata('server:backup.restore', { name: 'n', truncate: true })).toBe(false);
    expect(hasAdditionalMetadata('server:backup.restore-complete', { name: 'n', files: 3 })).toBe(false);
    // The skipped entries' names are in the properties only.
    expect(
      hasAdditionalMetadata('server:backup.restore-complete', {
        name: 'n',
        files: 3,
        skipped_count: 1,
        skipped: [{ path: 'link', kind: 'symlink' }],
      }),
    ).toBe(true);
  });
});
