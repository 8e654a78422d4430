import path from 'node:path';
import type { Static } from '@sinclair/typebox';
import {
  Environment,
  type TChoiceSetting,
  type TDefaultedTextSetting,
  type TFlagSetting,
  type TIntegerSetting,
  type TTextSetting,
} from './config/environment.ts';

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
  /**
   * How long a call to Redis may take (AERIE_REDIS_TIMEOUT_MS); past it, or while Redis is
   * unreachable, each process counts its limits in its own memory.
   */
  readonly redisTimeoutMs: number;
  /** Passed to Fastify's `trustProxy`: false, true, a hop count, or a list of addresses/CIDRs. */
  readonly trustProxy: boolean | number | string[];
  readonly logLevel: string;
  /** How log lines are written (AERIE_LOG_FORMAT): JSON, pretty, or pretty on a terminal only. */
  readonly logFormat: 'auto' | 'json' | 'pretty';
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
  /**
   * How long a job that cannot reach the backup store or the database keeps being tried again,
   * from its first such failure (AERIE_JOB_RETRY_MINUTES); 0 fails it at once.
   */
  readonly jobRetryWindowMs: number;
  /** How long stopping waits for requests and the job in hand before it lets them go and exits. */
  readonly shutdownTimeoutMs: number;
  /** How long a client may take to send a whole request (line, headers and body): then a 408. */
  readonly requestTimeoutMs: number;
  /**
   * Where clients reach Aerie (AERIE_PUBLIC_URL): origin and optional path prefix, no trailing
   * slash. Pagination links are built on it; without it, on the request's Host when valid.
   */
  readonly publicUrl: string | null;
  /** Activity older than this many days is pruned by the worker role; 0 keeps everything. */
  readonly activityRetentionDays: number;
  /**
   * Prometheus metrics (AERIE_METRICS, AERIE_METRICS_ADDRESS): off, on the API's own listener at
   * `/metrics` (address null), or on a listener of their own at `address`.
   */
  readonly metrics: { readonly enabled: boolean; readonly address: MetricsAddress | null };
  /** Where backup archives are kept (AERIE_BACKUP_STORAGE): `backupsDir`, or an S3-compatible bucket. */
  readonly backupStorage: BackupStorageConfig;
  /** How new backups are stored (AERIE_BACKUP_FORMAT): deduplicated snapshots, or whole archives. */
  readonly backupFormat: 'snapshot' | 'archive';
  /** Whether a restore first keeps the files it replaces as a backup (AERIE_RESTORE_UNDO_BACKUP). */
  readonly restoreUndoBackup: boolean;
  /**
   * How often a running backup or restore writes its progress to the database, and how often
   * event streams look for changes (AERIE_PROGRESS_INTERVAL_MS).
   */
  readonly progressIntervalMs: number;
  /**
   * Schedules (AERIE_TIMEZONE, AERIE_SCHEDULE_TICK_SECONDS): the IANA time zone cron expressions
   * are read in, and how often each process that runs jobs looks for due schedules.
   */
  readonly schedules: { readonly timezone: string; readonly tickMs: number };
  /** Server event streams: how many one user may hold open (per process), and the keep-alive period. */
  readonly eventStreams: { readonly perUser: number; readonly keepAliveMs: number };
  /** The built web panel (AERIE_PANEL_DIR); null: dist/web in the package, where `npm run build` puts it. */
  readonly panelDir: string | null;
}

export type BackupStorageConfig =
  | { readonly kind: 'local' }
  | {
      readonly kind: 's3';
      readonly s3: S3Settings;
      /** Bytes per uploaded part (AERIE_S3_PART_SIZE_MB): an archive may have 10,000 parts. */
      readonly partSizeBytes: number;
    };

/** An S3-compatible bucket and how to reach it (plain values: a worker thread gets a copy). */
export interface S3Settings {
  readonly bucket: string;
  /** null: AWS's own endpoint for the region. */
  readonly endpoint: string | null;
  /**
   * Where browsers reach the store (AERIE_S3_PUBLIC_ENDPOINT): download links are signed for it,
   * while Aerie itself talks to `endpoint`. null: links are signed for `endpoint`.
   */
  readonly publicEndpoint: string | null;
  readonly region: string;
  readonly forcePathStyle: boolean;
  /**
   * Whether the client sends a CRC32 of every part it uploads (AERIE_S3_CHECKSUMS): only where
   * the operation requires one (`when_required`, the default, which every S3-compatible store
   * accepts), or wherever S3 supports one (`when_supported`, the SDK's own default).
   */
  readonly checksums: 'when_required' | 'when_supported';
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface MetricsAddress {
  readonly host: string;
  readonly port: number;
}

export class ConfigError extends Error {}

type Variables = typeof Environment.properties;
/** The variables whose schema is `Kind`. */
type NamesOf<Kind> = { [K in keyof Variables]: Variables[K] extends Kind ? K : never }[keyof Variables];
/** An entry's default, with its type (TypeBox's options type every `default` as `any`). */
type Default<T> = { readonly default: T };

/** An integer variable: its default when unset or blank, its range from the schema. */
function integer(env: NodeJS.ProcessEnv, name: NamesOf<TIntegerSetting>): number {
  const { default: fallback } = Environment.properties[name] as Default<number>;
  const { minimum: min, maximum: max } = Environment.properties[name];
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** "a or b", "one of a, b, c". */
function either(values: readonly string[]): string {
  return values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(', ')}`;
}

/** One of the schema's words (any case, spaces around ignored); its default when unset or blank. */
function choice<K extends NamesOf<TChoiceSetting>>(env: NodeJS.ProcessEnv, name: K): Static<Variables[K]> {
  const schema: TChoiceSetting = Environment.properties[name];
  const { default: fallback } = schema as Default<string>;
  const values = schema.anyOf.map((literal) => literal.const);
  const raw = env[name];
  const value = raw?.trim().toLowerCase() || fallback;
  if (!values.includes(value)) throw new ConfigError(`${name} must be ${either(values)}, got "${raw}"`);
  return value as Static<Variables[K]>;
}

/** true or false (any case, spaces around ignored); its default when unset or blank. */
function flag(env: NodeJS.ProcessEnv, name: NamesOf<TFlagSetting>): boolean {
  const raw = env[name];
  const value = raw?.trim().toLowerCase() ?? '';
  const { default: fallback } = Environment.properties[name] as Default<boolean>;
  if (value === '') return fallback;
  if (value !== 'true' && value !== 'false')
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return value === 'true';
}

/** A text variable as it is set (blank included); the schema's default when unset. */
function text(env: NodeJS.ProcessEnv, name: NamesOf<TDefaultedTextSetting>): string {
  const { default: fallback } = Environment.properties[name] as Default<string>;
  return env[name] ?? fallback;
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

/** AERIE_METRICS=off|on and AERIE_METRICS_ADDRESS=host:port (which needs metrics on, and implies it). */
function metrics(env: NodeJS.ProcessEnv): Config['metrics'] {
  const enabled = choice(env, 'AERIE_METRICS') === 'on';
  const rawAddress = env.AERIE_METRICS_ADDRESS?.trim() ?? '';
  if (rawAddress === '') return { enabled, address: null };
  // Refused only when AERIE_METRICS is set to off, not when it is left at its default.
  if (!enabled && env.AERIE_METRICS?.trim())
    throw new ConfigError('AERIE_METRICS_ADDRESS is set but AERIE_METRICS is off: unset one of them');
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(rawAddress);
  const port = Number(match?.[3]);
  if (match === null || port < 1 || port > 65535)
    throw new ConfigError(
      `AERIE_METRICS_ADDRESS must be host:port (e.g. 127.0.0.1:9464 or [::1]:9464), got "${rawAddress}"`,
    );
  return { enabled: true, address: { host: match[1] ?? match[2] ?? '', port } };
}

/** AERIE_BACKUP_STORAGE=local|s3; s3 needs a bucket and credentials. */
function backupStorage(env: NodeJS.ProcessEnv): BackupStorageConfig {
  const kind = choice(env, 'AERIE_BACKUP_STORAGE');
  if (kind === 'local') return { kind };
  const value = (name: NamesOf<TTextSetting>) => env[name]?.trim() ?? '';
  const bucket = value('AERIE_S3_BUCKET');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/.test(bucket))
    throw new ConfigError(
      `AERIE_BACKUP_STORAGE=s3 needs AERIE_S3_BUCKET, a bucket name (letters, digits, '.', '-', '_'), got "${bucket}"`,
    );
  const accessKeyId = value('AWS_ACCESS_KEY_ID');
  const secretAccessKey = value('AWS_SECRET_ACCESS_KEY');
  if (accessKeyId === '' || secretAccessKey === '')
    throw new ConfigError('AERIE_BACKUP_STORAGE=s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  const { default: defaultRegion } = Environment.properties.AERIE_S3_REGION as Default<string>;
  const region = value('AERIE_S3_REGION') || defaultRegion;
  if (!/^[a-z0-9-]{1,64}$/i.test(region))
    throw new ConfigError(`AERIE_S3_REGION must be a region name such as eu-west-1, got "${region}"`);
  const checksums = choice(env, 'AERIE_S3_CHECKSUMS');
  return {
    kind,
    partSizeBytes: integer(env, 'AERIE_S3_PART_SIZE_MB') * 1024 * 1024,
    s3: {
      bucket,
      endpoint: s3Endpoint(value('AERIE_S3_ENDPOINT')),
      publicEndpoint: s3PublicEndpoint(value('AERIE_S3_PUBLIC_ENDPOINT')),
      region,
      forcePathStyle: flag(env, 'AERIE_S3_FORCE_PATH_STYLE'),
      checksums,
      accessKeyId,
      secretAccessKey,
    },
  };
}

/** `raw` as a URL; null when it is not one. */
function urlOrNull(raw: string): URL | null {
  try {
    return new URL(raw);
  } catch {
    return null;
  }
}

function s3Endpoint(raw: string): string | null {
  if (raw === '') return null;
  const url = urlOrNull(raw);
  if (url === null || !['http:', 'https:'].includes(url.protocol) || url.username !== '' || url.search !== '')
    throw new ConfigError(
      `AERIE_S3_ENDPOINT must be an http(s) URL without credentials or query, such as https://s3.example.com, got "${raw}"`,
    );
  return raw.replace(/\/+$/, '');
}

/**
 * A presigned link is signed for its host and path: the public endpoint is an origin (scheme,
 * host, port) that reaches the store as it is, with no path a proxy would have to strip.
 */
function s3PublicEndpoint(raw: string): string | null {
  if (raw === '') return null;
  const url = urlOrNull(raw);
  if (
    url === null ||
    !['http:', 'https:'].includes(url.protocol) ||
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== ''
  )
    throw new ConfigError(
      `AERIE_S3_PUBLIC_ENDPOINT must be an http(s) origin without credentials, path or query, such as https://s3.example.com, got "${raw}"`,
    );
  return url.origin;
}

/**
 * AERIE_TIMEZONE: an IANA time zone name (`UTC`, `Europe/Berlin`) that Intl knows, in the spelling
 * Intl gives it back. A fixed offset (`+01:00`) is refused: it has no summer time, and a schedule
 * that should follow the clocks on the wall would silently not.
 */
function timezone(env: NodeJS.ProcessEnv): string {
  const raw = text(env, 'AERIE_TIMEZONE').trim() || 'UTC';
  if (raw === 'UTC') return raw; // the default, without waking Intl's time zone data (~40 ms)
  const refuse = () =>
    new ConfigError(
      `AERIE_TIMEZONE must be an IANA time zone name such as UTC or Europe/Berlin, got "${raw}"`,
    );
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(raw)) throw refuse();
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: raw }).resolvedOptions().timeZone;
  } catch {
    throw refuse();
  }
}

/**
 * Reads the configuration once. Nothing else in Aerie reads `process.env`. The variables, their
 * defaults, ranges and choices are those of the schema in ./config/environment.ts.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const dataDir = path.resolve(cwd, text(env, 'AERIE_DATA_DIR'));
  const logLevel = choice(env, 'LOG_LEVEL');
  const config: Config = {
    database: parseDatabaseUrl(env.DATABASE_URL ?? `sqlite:${path.join(dataDir, 'aerie.db')}`, cwd),
    dataDir,
    volumesDir: path.join(dataDir, 'volumes'),
    backupsDir: path.join(dataDir, 'backups'),
    host: text(env, 'HOST'),
    port: integer(env, 'PORT'),
    redisUrl: env.REDIS_URL?.trim() ? env.REDIS_URL.trim() : null,
    redisTimeoutMs: integer(env, 'AERIE_REDIS_TIMEOUT_MS'),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    logLevel,
    logFormat: choice(env, 'AERIE_LOG_FORMAT'),
    bodyLimitBytes: integer(env, 'AERIE_BODY_LIMIT_BYTES'),
    sessionTtlSeconds: integer(env, 'AERIE_SESSION_TTL_SECONDS'),
    loginAttemptsPer15Minutes: integer(env, 'AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES'),
    loginAccountAttemptsPerHour: integer(env, 'AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR'),
    apiRateLimitPerMinute: integer(env, 'AERIE_RATE_LIMIT_PER_MINUTE'),
    restoreLimitPer15Minutes: integer(env, 'AERIE_RESTORE_LIMIT_PER_15_MINUTES'),
    appKey: appKey(env.AERIE_APP_KEY),
    workerPollMs: integer(env, 'AERIE_WORKER_POLL_MS'),
    jobLeaseMs: integer(env, 'AERIE_JOB_LEASE_SECONDS') * 1000,
    jobTimeoutMs: integer(env, 'AERIE_JOB_TIMEOUT_SECONDS') * 1000,
    jobRetryWindowMs: integer(env, 'AERIE_JOB_RETRY_MINUTES') * 60_000,
    shutdownTimeoutMs: integer(env, 'AERIE_SHUTDOWN_TIMEOUT_SECONDS') * 1000,
    requestTimeoutMs: integer(env, 'AERIE_REQUEST_TIMEOUT_SECONDS') * 1000,
    publicUrl: publicUrl(env.AERIE_PUBLIC_URL),
    activityRetentionDays: integer(env, 'AERIE_ACTIVITY_RETENTION_DAYS'),
    metrics: metrics(env),
    backupStorage: backupStorage(env),
    backupFormat: choice(env, 'AERIE_BACKUP_FORMAT'),
    restoreUndoBackup: flag(env, 'AERIE_RESTORE_UNDO_BACKUP'),
    progressIntervalMs: integer(env, 'AERIE_PROGRESS_INTERVAL_MS'),
    schedules: Object.freeze({
      timezone: timezone(env),
      tickMs: integer(env, 'AERIE_SCHEDULE_TICK_SECONDS') * 1000,
    }),
    eventStreams: Object.freeze({
      perUser: integer(env, 'AERIE_EVENT_STREAMS_PER_USER'),
      keepAliveMs: integer(env, 'AERIE_EVENT_STREAM_KEEPALIVE_SECONDS') * 1000,
    }),
    panelDir: env.AERIE_PANEL_DIR?.trim() ? path.resolve(cwd, env.AERIE_PANEL_DIR.trim()) : null,
  };
  return Object.freeze(config);
}
