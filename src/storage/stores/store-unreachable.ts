/**
 * Whether a failure of the backup store is one that passes: the store could not be reached, or
 * answered that it is overloaded or failing for now. A job that meets one tries again later
 * (see src/backups/job-errors.ts) instead of failing for good.
 *
 * A socket error says nothing of whom the socket was talking to (the database's drivers raise
 * the same codes), so bare network errors count as the store's only where the store was being
 * called: `fromStore` marks them there, with a plain string field that survives the copy across a
 * worker thread's boundary. The AWS SDK's own errors carry `$metadata` and are recognised anywhere.
 */
import { translatingErrors } from '../../shared/errors.ts';

/** Socket and DNS failures, as Node and the SDK's HTTP handler raise them. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** The SDK's names for timeouts, throttling and a store failing for now, whatever the status. */
const PASSING_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'ServiceUnavailable',
  'InternalError',
]);

/** The field `fromStore` sets: what made the store unreachable. */
const MARK = 'storeUnreachable';

interface SdkShape {
  code?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: unknown;
  cause?: unknown;
  [MARK]?: unknown;
}

/**
 * What made the store unreachable (`ECONNREFUSED`, `SlowDown, HTTP 503`), if `error` is a passing
 * failure of the store: one marked by `fromStore`, or an AWS SDK error (it carries `$metadata`)
 * for a network failure, a 5xx or 429 answer, throttling or a timeout. Null otherwise.
 */
export function storeUnreachable(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const shape = error as Error & SdkShape;
  if (typeof shape[MARK] === 'string') return shape[MARK];
  if (typeof shape.$metadata === 'object' && shape.$metadata !== null) return passingCause(error);
  return null;
}

/** Why a failure met while talking to the store passes, or null if it does not. */
function passingCause(error: Error, depth = 0): string | null {
  const shape = error as Error & SdkShape;
  if (typeof shape.code === 'string' && NETWORK_CODES.has(shape.code)) return shape.code;
  const status = shape.$metadata?.httpStatusCode;
  if (typeof status === 'number' && (status >= 500 || status === 429)) return `${error.name}, HTTP ${status}`;
  if (shape.$retryable !== undefined || PASSING_NAMES.has(error.name)) return error.name;
  // The SDK and Node wrap the socket's error at times (`cause`).
  if (shape.cause instanceof Error && depth < 3) return passingCause(shape.cause, depth + 1);
  return null;
}

/**
 * `error`, marked as the store's when it is a passing failure: for errors raised while the store
 * was being called (a request to it, or the stream of an archive read from or written to it).
 */
export function markFromStore(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const cause = (error as Error & SdkShape)[MARK] ?? passingCause(error);
  if (typeof cause === 'string') Object.assign(error, { [MARK]: cause });
  return error;
}

/** Runs a call to the store, marking its passing failures as the store's (see `markFromStore`). */
export function fromStore<T>(call: () => Promise<T>): Promise<T> {
  return translatingErrors(call, markFromStore);
}
