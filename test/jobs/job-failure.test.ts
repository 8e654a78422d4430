import { describe, expect, it } from 'vitest';
import { markDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { NotFoundError } from '../../src/shared/errors.ts';
import { ArchiveError } from '../../src/storage/archive/archive.types.ts';
import { fromStore, markFromStore } from '../../src/storage/stores/store-unreachable.ts';
import { classifyFailure } from '../../src/backups/job-errors.ts';
import { unreachableReason } from '../../src/jobs/job-failure.ts';

const systemError = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:9000`), { code });
/** An error as the AWS SDK raises it: with `$metadata`, and a status when the store answered. */
const sdkError = (name: string, fields: Record<string, unknown> = {}, status?: number) =>
  Object.assign(new Error(name), {
    name,
    $metadata: { attempts: 3, ...(status === undefined ? {} : { httpStatusCode: status }) },
    ...fields,
  });

describe('classifyFailure', () => {
  it('fails archive errors, refused requests and moves across mount points at once', () => {
    expect(classifyFailure(new ArchiveError('corrupt', 'the archive is damaged'))).toEqual({
      kind: 'permanent',
      reason: 'the archive is damaged',
    });
    expect(classifyFailure(new NotFoundError())).toMatchObject({ kind: 'permanent' });
    for (const code of ['EXDEV', 'EBUSY'])
      expect(classifyFailure(systemError(code))).toMatchObject({
        kind: 'permanent',
        reason: expect.stringContaining(`(${code}): a mount point`) as string,
      });
  });

  it('takes the SDK errors of a store that is away, overloaded or failing as the store being unreachable', () => {
    const cases: [Error, string][] = [
      [sdkError('Error', { code: 'ECONNREFUSED' }), 'ECONNREFUSED'],
      [sdkError('TimeoutError'), 'TimeoutError'],
      [sdkError('SlowDown', {}, 503), 'SlowDown, HTTP 503'],
      [sdkError('InternalError', {}, 500), 'InternalError, HTTP 500'],
      [sdkError('TooManyRequests', {}, 429), 'TooManyRequests, HTTP 429'],
      [sdkError('Throttled', { $retryable: { throttling: true } }, 400), 'Throttled'],
    ];
    for (const [error, cause] of cases)
      expect(classifyFailure(error)).toEqual({ kind: 'unreachable', what: 'store', cause });
  });

  it("leaves the store's refusals (access denied, a 4xx) to the few ordinary tries", () => {
    expect(classifyFailure(sdkError('AccessDenied', {}, 403))).toMatchObject({ kind: 'other' });
  });

  it('takes a bare network error as the store only where the store was called', async () => {
    // Unmarked, whose socket it was is unknown: the few ordinary tries.
    expect(classifyFailure(systemError('ECONNRESET'))).toMatchObject({ kind: 'other' });
    const fromTheStore = await fromStore(() => Promise.reject(systemError('ECONNRESET'))).catch(
      (e: unknown) => e,
    );
    expect(classifyFailure(fromTheStore)).toEqual({
      kind: 'unreachable',
      what: 'store',
      cause: 'ECONNRESET',
    });
    // The mark is a plain field: it survives the copy of an error from a worker thread.
    const copied = Object.assign(new Error('copied'), { ...(markFromStore(systemError('EPIPE')) as object) });
    expect(classifyFailure(copied)).toMatchObject({ what: 'store', cause: 'EPIPE' });
    // Other failures met at the store are not marked.
    const missing = await fromStore(() => Promise.reject(systemError('EACCES'))).catch((e: unknown) => e);
    expect(classifyFailure(missing)).toMatchObject({ kind: 'other' });
  });

  it('takes a lost or refused database connection as the database being unreachable', () => {
    expect(classifyFailure(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toEqual({
      kind: 'unreachable',
      what: 'database',
      cause: '57P01',
    });
    expect(classifyFailure(markDatabaseUnavailable(new Error('Connection terminated')))).toEqual({
      kind: 'unreachable',
      what: 'database',
      cause: 'connection lost',
    });
    // The database's socket errors are marked as such where they leave its driver.
    expect(classifyFailure(markDatabaseUnavailable(systemError('ECONNREFUSED')))).toEqual({
      kind: 'unreachable',
      what: 'database',
      cause: 'ECONNREFUSED',
    });
  });

  it('keeps anything else in the log', () => {
    expect(classifyFailure(new TypeError('x is undefined'))).toEqual({
      kind: 'other',
      reason: 'an internal error occurred; the server log has the details',
    });
  });
});

describe('unreachableReason', () => {
  it('names what was unreachable, for how long, and why', () => {
    expect(unreachableReason('store', 'ECONNREFUSED', 15 * 60_000)).toBe(
      'the backup store was unreachable for 15 minutes (ECONNREFUSED)',
    );
    expect(unreachableReason('database', '57P01', 45_000)).toBe(
      'the database was unreachable for 45 seconds (57P01)',
    );
    expect(unreachableReason('store', 'TimeoutError', 0)).toBe(
      'the backup store could not be reached (TimeoutError)',
    );
  });
});
