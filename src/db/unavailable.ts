/**
 * Whether an error means the database could not be reached or dropped the connection (a
 * restart, a failover, an administrator ending sessions, a network fault) rather than that the
 * statement itself was wrong. Such a failure is transient: the request in flight answers 503,
 * a job retries later, and the pool opens a fresh connection for the next query.
 *
 * Decided by the drivers' error codes, never by message text. A failure the driver reports
 * without a code (pg's "Connection terminated unexpectedly", its pool's connect timeout) or with
 * only the socket's code (ECONNRESET: the backup store's client raises the same ones) is marked
 * where it leaves the driver, by the pool wrappers in `connection-loss.ts`, which know that the
 * error came from the database.
 */

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception) but 08P01 (a protocol violation, such as
 * a statement given the wrong number of parameters: a bug, not an outage), 57P01-57P03 (the
 * server shutting down or starting), 53300 (too many connections).
 */
function isPostgresUnavailable(code: string): boolean {
  if (code === '08P01') return false;
  return (
    code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300'
  );
}

/** mysql2's codes for a lost, killed or refused connection. */
const MYSQL_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);

/**
 * The same by the server's error number, for those mysql2 has no name for: MariaDB's 1927
 * (connection killed) arrives with `errno` set and `code` undefined. 1040: too many connections,
 * 1053: server shutdown, 4031: closed for inactivity.
 */
const MYSQL_ERRNOS = new Set([1040, 1053, 1927, 4031]);

const UNAVAILABLE = Symbol.for('aerie.database-unavailable');

/** Marks an error the database's driver raised as a lost or refused connection (see above). */
export function markDatabaseUnavailable<E extends Error>(error: E): E {
  (error as E & { [UNAVAILABLE]?: true })[UNAVAILABLE] = true;
  return error;
}

export function isDatabaseUnavailable(error: unknown): boolean {
  return unavailable(error, 0);
}

function unavailable(error: unknown, depth: number): boolean {
  if (!(error instanceof Error) || depth > 3) return false;
  if ((error as Error & { [UNAVAILABLE]?: true })[UNAVAILABLE] === true) return true;
  const { code, errno, fatal, cause } = error as {
    code?: unknown;
    errno?: unknown;
    fatal?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string') {
    if (MYSQL_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && isPostgresUnavailable(code)) return true;
  }
  if (typeof errno === 'number' && MYSQL_ERRNOS.has(errno)) return true;
  // mysql2 marks an error that ended its connection (the socket's own among them) as fatal.
  if (fatal === true) return true;
  return cause !== undefined && cause !== error && unavailable(cause, depth + 1);
}
