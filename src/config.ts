import path from 'node:path';

export type DatabaseKind = 'sqlite' | 'postgres' | 'mysql';

export interface Config {
  readonly database: {
    readonly kind: DatabaseKind;
    readonly url: string;
    readonly sqlitePath: string | null;
  };
  readonly dataDir: string;
  readonly volumesDir: string;
  readonly backupsDir: string;
  readonly host: string;
  readonly port: number;
  readonly redisUrl: string | null;
  /** Passed to Fastify's `trustProxy`: false, true, a hop count, or a list of addresses/CIDRs. */
  readonly trustProxy: boolean | number | string[];
  readonly logLevel: string;
  readonly bodyLimitBytes: number;
  readonly sessionTtlSeconds: number;
  /** Failed logins allowed per address in 15 minutes; 0 turns the login throttle off. */
  readonly loginAttemptsPer15Minutes: number;
  /** Failed logins allowed per account in an hour from every address together; 0 turns this off. */
  readonly loginAccountAttemptsPerHour: number;
  /** Requests a minute per user (else per address) on /api/client; 0 turns every API limit off. */
  readonly apiRateLimitPerMinute: number;
  /** Restores queued per server in 15 minutes (off when the API limit is off). */
  readonly restoreLimitPer15Minutes: number;
  /** Signs backup download links; generated into the data directory when not set. */
  readonly appKey: string | null;
  /** How often an idle worker looks for a job. */
  readonly workerPollMs: number;
  /** How long a worker's claim on a job lasts without a heartbeat. */
  readonly jobLeaseMs: number;
  /** How long one attempt at a job may run before it is stopped and counted as failed. */
  readonly jobTimeoutMs: number;
  /** How long stopping waits for requests and the job in hand before it lets them go and exits. */
  readonly shutdownTimeoutMs: number;
  /** How long a client may take to send a whole request (line, headers and body): then a 408. */
  readonly requestTimeoutMs: number;
  /**
   * Where clients reach Aerie (AERIE_PUBLIC_URL): origin and optional path prefix, no trailing
   * slash. Pagination links are built on it; without it, on the request's Host when valid.
   */
  readonly publicUrl: string | null;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function parseDatabaseUrl(raw: string, cwd: string): Config['database'] {
  if (raw.startsWith('sqlite:')) {
    const file = raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (file === '')
      throw new ConfigError('DATABASE_URL "sqlite:" needs a file path, e.g. sqlite:./data/aerie.db');
    return { kind: 'sqlite', url: raw, sqlitePath: file === ':memory:' ? file : path.resolve(cwd, file) };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) return { kind: 'postgres', url: raw, sqlitePath: null };
  if (/^(mysql|mariadb):\/\//.test(raw)) {
    return { kind: 'mysql', url: raw.replace(/^mariadb:/, 'mysql:'), sqlitePath: null };
  }
  throw new ConfigError(`DATABASE_URL must start with sqlite:, postgres:// or mysql://, got "${raw}"`);
}

function parseTrustProxy(raw: string | undefined): Config['trustProxy'] {
  if (raw === undefined || raw.trim() === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

function appKey(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (raw.length < 32) throw new ConfigError('AERIE_APP_KEY must be at least 32 characters long');
  return raw;
}

function publicUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw.trim() === '') return null;
  const value = raw.trim();
  const refuse = (why: string) =>
    new ConfigError(`AERIE_PUBLIC_URL must be ${why}, such as https://panel.example.com, got "${raw}"`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse('an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('an http:// or https:// URL');
  if (!/^https?:\/\/[^/]/i.test(value)) throw refuse('an absolute http(s) URL');
  if (url.username !== '' || url.password !== '') throw refuse('a URL without credentials');
  if (value.includes('?') || value.includes('#')) throw refuse('a URL without a query or fragment');
  return url.origin + url.pathname.replace(/\/+$/, '');
}

/** Reads the configuration once. Nothing else in Aerie reads `process.env`. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const dataDir = path.resolve(cwd, env.AERIE_DATA_DIR ?? './data');
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const config: Config = {
    database: parseDatabaseUrl(env.DATABASE_URL ?? `sqlite:${path.join(dataDir, 'aerie.db')}`, cwd),
    dataDir,
    volumesDir: path.join(dataDir, 'volumes'),
    backupsDir: path.join(dataDir, 'backups'),
    host: env.HOST ?? '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    redisUrl: env.REDIS_URL?.trim() ? env.REDIS_URL.trim() : null,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    logLevel,
    bodyLimitBytes: integer(env, 'AERIE_BODY_LIMIT_BYTES', 256 * 1024, 1024, 64 * 1024 * 1024),
    sessionTtlSeconds: integer(env, 'AERIE_SESSION_TTL_SECONDS', 12 * 3600, 60, 90 * 24 * 3600),
    loginAttemptsPer15Minutes: integer(env, 'AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES', 10, 0, 1_000_000),
    loginAccountAttemptsPerHour: integer(env, 'AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR', 300, 0, 1_000_000),
    apiRateLimitPerMinute: integer(env, 'AERIE_RATE_LIMIT_PER_MINUTE', 240, 0, 1_000_000),
    restoreLimitPer15Minutes: integer(env, 'AERIE_RESTORE_LIMIT_PER_15_MINUTES', 3, 1, 1_000_000),
    appKey: appKey(env.AERIE_APP_KEY),
    workerPollMs: integer(env, 'AERIE_WORKER_POLL_MS', 1000, 10, 60_000),
    jobLeaseMs: integer(env, 'AERIE_JOB_LEASE_SECONDS', 30, 1, 3600) * 1000,
    jobTimeoutMs: integer(env, 'AERIE_JOB_TIMEOUT_SECONDS', 6 * 3600, 1, 7 * 24 * 3600) * 1000,
    shutdownTimeoutMs: integer(env, 'AERIE_SHUTDOWN_TIMEOUT_SECONDS', 30, 0, 3600) * 1000,
    requestTimeoutMs: integer(env, 'AERIE_REQUEST_TIMEOUT_SECONDS', 30, 1, 3600) * 1000,
    publicUrl: publicUrl(env.AERIE_PUBLIC_URL),
  };
  return Object.freeze(config);
}
