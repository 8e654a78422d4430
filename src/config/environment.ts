/**
 * The environment Aerie reads: one entry per variable, with its type (and format), its default,
 * its range or choices and a description, grouped in sections. It is the one source of truth:
 * `loadConfig` (src/config.ts) takes defaults, integer ranges and choices from it, and the table in
 * docs/configuration.md and deploy/aerie.env.example are generated from it by
 * `node --import tsx scripts/config-docs.ts` (test/config-docs.test.ts fails when they drift).
 *
 * Every variable is optional. Besides JSON Schema's keywords an entry may carry:
 * - `defaultText`: what an unset variable means, when that is no value of its own (markdown);
 * - `example`: the value deploy/aerie.env.example sets, uncommented, for a deployment of several
 *   processes (an empty string: a line left for the operator to fill in).
 * A string's `format` names how `loadConfig` reads it (a URL, a path, `host:port`…); the functions
 * that read those are in src/config.ts.
 *
 * Descriptions are markdown (backticks, links relative to docs/), one paragraph each.
 */
import {
  Type,
  type Static,
  type TBoolean,
  type TInteger,
  type TLiteral,
  type TOptional,
  type TString,
  type TUnion,
} from '@sinclair/typebox';

interface Documentation {
  readonly description: string;
  readonly defaultText?: string;
  readonly example?: string;
}

/** An integer setting: its default and both bounds are always given. */
export type TIntegerSetting = TOptional<TInteger & { default: number; minimum: number; maximum: number }>;
/** One of a few words, matched without regard to case or surrounding spaces. */
export type TChoiceSetting<V extends string = string> = TOptional<TUnion<TLiteral<V>[]> & { default: V }>;
/** `true` or `false`. */
export type TFlagSetting = TOptional<TBoolean & { default: boolean }>;
/** Text in a given format, read by its own function in src/config.ts. */
export type TTextSetting = TOptional<TString & { format?: string; default?: string }>;
/** Text with a default of its own. */
export type TDefaultedTextSetting = TOptional<TString & { format?: string; default: string }>;

function integer(fallback: number, minimum: number, maximum: number, doc: Documentation): TIntegerSetting {
  return Type.Optional(
    Type.Integer({ default: fallback, minimum, maximum, ...doc }) as TInteger & {
      default: number;
      minimum: number;
      maximum: number;
    },
  );
}

function choice<const V extends string>(values: V[], fallback: V, doc: Documentation): TChoiceSetting<V> {
  return Type.Optional(
    Type.Union(
      values.map((value) => Type.Literal(value)),
      { default: fallback, ...doc },
    ) as TUnion<TLiteral<V>[]> & { default: V },
  );
}

function flag(fallback: boolean, doc: Documentation): TFlagSetting {
  return Type.Optional(Type.Boolean({ default: fallback, ...doc }) as TBoolean & { default: boolean });
}

function text(options: Documentation & { format?: string; default: string }): TDefaultedTextSetting;
function text(options: Documentation & { format?: string }): TTextSetting;
function text(options: Documentation & { format?: string; default?: string }): TTextSetting {
  return Type.Optional(Type.String(options));
}

const Database = Type.Object(
  {
    DATABASE_URL: text({
      format: 'database-url',
      defaultText: '`sqlite:<AERIE_DATA_DIR>/aerie.db`',
      example: 'postgres://aerie:change-me@db.internal:5432/aerie',
      description:
        'Where Aerie keeps its data: `sqlite:PATH` (one machine only), `postgres://USER:PASSWORD@HOST:5432/DB`, or `mysql://USER:PASSWORD@HOST:3306/DB` (MariaDB 10.6 or newer; `mariadb://` is read as `mysql://`).',
    }),
  },
  { title: 'Database' },
);

const Files = Type.Object(
  {
    AERIE_DATA_DIR: text({
      format: 'path',
      default: './data',
      example: '/var/lib/aerie',
      description:
        'Server volumes (`volumes/<uuid>/`), local backups (`backups/<uuid>/`), `app.key` when `AERIE_APP_KEY` is unset, and `first-administrator.txt`. A relative path is taken from the working directory; the systemd units and the image give it a fixed place.',
    }),
  },
  { title: 'Files' },
);

const Http = Type.Object(
  {
    HOST: text({
      format: 'host',
      default: '127.0.0.1',
      description: 'The address `serve` listens on (`serve --host` overrides it).',
    }),
    PORT: integer(8080, 0, 65535, {
      description: 'The port `serve` listens on (`serve --port` overrides it).',
    }),
    TRUST_PROXY: text({
      format: 'trust-proxy',
      defaultText: 'off',
      description:
        "Whose `X-Forwarded-For` to believe: nobody when unset or `false` (the TCP peer is the client); the proxies' addresses or CIDRs, comma-separated (the safe choice); a hop count (`1`: one proxy in front, and then Aerie must be unreachable but through it); or `true`, whatever the client sends. See [Client addresses and TRUST_PROXY](deploy.md#client-addresses-and-trust_proxy).",
    }),
    AERIE_PUBLIC_URL: text({
      format: 'uri',
      description:
        "Where clients reach Aerie, `http(s)://host[:port][/prefix]` (such as `https://panel.example.com`): every absolute link (pagination, backup downloads) is built on it, prefix included. Set it behind a proxy. Unset, links use the request's `Host` when it is a valid host name or address, and are relative (`/path?query`) otherwise.",
    }),
    AERIE_BODY_LIMIT_BYTES: integer(256 * 1024, 1024, 64 * 1024 * 1024, {
      description: 'The largest request body accepted, in bytes.',
    }),
    AERIE_REQUEST_TIMEOUT_SECONDS: integer(30, 1, 3600, {
      description:
        'How long a client may take to send a whole request (line, headers, body), in seconds; past it the request gets a 408 and its connection is closed.',
    }),
    AERIE_PANEL_DIR: text({
      format: 'path',
      defaultText: '`dist/web` of the installed package',
      description: 'The built [web panel](panel.md) served at `/` (what `npm run build` writes with Vite).',
    }),
  },
  { title: 'HTTP' },
);

const Logs = Type.Object(
  {
    LOG_LEVEL: choice(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info', {
      description:
        'How much is logged (`silent`: nothing). At `info`, each request is one line: method, URL (secret query values replaced by `[REDACTED]`), status and time taken.',
    }),
    AERIE_LOG_FORMAT: choice(['auto', 'json', 'pretty'], 'auto', {
      description:
        '`json`: one JSON object a line, for a log collector; `pretty`: one short readable line each; `auto`: pretty when the logs go to a terminal, JSON otherwise (a service manager, a container).',
    }),
  },
  { title: 'Logs' },
);

const Sessions = Type.Object(
  {
    AERIE_SESSION_TTL_SECONDS: integer(12 * 3600, 60, 90 * 24 * 3600, {
      description: 'How long a login session lasts, in seconds (the default is 12 hours).',
    }),
    AERIE_APP_KEY: text({
      format: 'secret',
      defaultText: 'generated into `<AERIE_DATA_DIR>/app.key`',
      example: '',
      description:
        'At least 32 characters (from `openssl rand -base64 48`, say): signs backup download links and encrypts TOTP secrets. Set the same value on every process of a deployment.',
    }),
    AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: integer(10, 0, 1_000_000, {
      description:
        'Failed logins allowed per address (IPv6: per /64) in 15 minutes, over all accounts; `0` turns the whole login throttle off.',
    }),
    AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR: integer(300, 0, 1_000_000, {
      description:
        'Failed logins allowed per account in an hour from all addresses together, past which only addresses known to the account may try; `0` turns this ceiling off.',
    }),
    AERIE_RATE_LIMIT_PER_MINUTE: integer(240, 0, 1_000_000, {
      description: 'API requests a minute per user (else per address); `0` turns every API limit off.',
    }),
    AERIE_RESTORE_LIMIT_PER_15_MINUTES: integer(3, 1, 1_000_000, {
      description:
        'Restores queued per server in 15 minutes (no limit when `AERIE_RATE_LIMIT_PER_MINUTE` is `0`).',
    }),
    REDIS_URL: text({
      format: 'uri',
      example: 'redis://redis.internal:6379',
      description:
        '`redis://…`: shares the rate-limit and login-throttle counters between the processes using it; set it whenever more than one process answers the API. Unset, each process counts alone, in memory (as it does while Redis does not answer: see [Redis outages](operations.md#redis-outages)).',
    }),
    AERIE_REDIS_TIMEOUT_MS: integer(200, 10, 10_000, {
      description:
        'How long one call to Redis may take, in milliseconds. Past it, or while Redis is unreachable, each process counts alone in memory until Redis answers again (requests never fail for it; `/health/ready` says Redis is unreachable).',
    }),
  },
  { title: 'Sessions, keys and throttles' },
);

const Jobs = Type.Object(
  {
    AERIE_WORKER_POLL_MS: integer(1000, 10, 60_000, {
      description:
        'How often an idle worker looks for a job, in milliseconds. A job queued in the same process, or on PostgreSQL in any process, is claimed at once, so this is the fallback.',
    }),
    AERIE_JOB_LEASE_SECONDS: integer(30, 1, 3600, {
      description:
        "How long a worker's claim on a job lasts without renewal, in seconds; a dead worker's job is taken over after this.",
    }),
    AERIE_JOB_TIMEOUT_SECONDS: integer(6 * 3600, 1, 7 * 24 * 3600, {
      description:
        'How long one attempt at a job (a backup, a restore) may run before it is stopped and counted as failed, in seconds (the default is 6 hours).',
    }),
    AERIE_JOB_RETRY_MINUTES: integer(15, 0, 7 * 24 * 60, {
      description:
        'How long a backup or restore that cannot reach the backup store or the database keeps being tried again (waits of 2 s doubling to 60 s, with jitter), from its first such failure, in minutes; then it fails, naming what was unreachable. A restore holds its server busy meanwhile. `0` fails at once.',
    }),
    AERIE_SHUTDOWN_TIMEOUT_SECONDS: integer(30, 0, 3600, {
      description:
        "On SIGTERM or SIGINT, how long to wait for requests in flight and the job in hand before letting them go and exiting, in seconds. The systemd units' `TimeoutStopSec` must stay above it.",
    }),
    AERIE_ACTIVITY_RETENTION_DAYS: integer(90, 0, 36_500, {
      description:
        'Activity older than this many days is deleted by the worker role (see [Retention](operations.md#retention)); `0` keeps everything.',
    }),
    AERIE_PROGRESS_INTERVAL_MS: integer(1000, 10, 60_000, {
      description:
        'How often a running backup or restore writes its progress to the database (at most), and how often server event streams look for changes, in milliseconds.',
    }),
  },
  { title: 'Jobs' },
);

const Schedules = Type.Object(
  {
    AERIE_TIMEZONE: text({
      format: 'timezone',
      default: 'UTC',
      description:
        "The time zone schedules' cron expressions are read in, and backup retention's hours, days, weeks, months and years are counted in: an IANA name such as `Europe/Berlin` or `America/New_York`. `0 3 * * *` runs at 03:00 there, summer time or not (see [Schedules](api.md#schedules) for the days the clocks change). Times in the API are UTC whatever it is.",
    }),
    AERIE_SCHEDULE_TICK_SECONDS: integer(10, 1, 60, {
      description:
        'How often each process that runs jobs looks for schedules that are due, in seconds: a schedule starts at most this long after its time. Every process looks; each run is started by one of them.',
    }),
  },
  { title: 'Schedules' },
);

const EventStreams = Type.Object(
  {
    AERIE_EVENT_STREAMS_PER_USER: integer(10, 1, 1000, {
      description: 'How many server event streams one user may hold open at once, per process.',
    }),
    AERIE_EVENT_STREAM_KEEPALIVE_SECONDS: integer(15, 1, 3600, {
      description:
        'How often an open event stream sends `: keep-alive` and checks its credential and access again, in seconds.',
    }),
  },
  { title: 'Server event streams' },
);

const BackupStorage = Type.Object(
  {
    AERIE_BACKUP_FORMAT: choice(['snapshot', 'archive'], 'snapshot', {
      description:
        'How new backups are stored: `snapshot`, deduplicated (each backup stores only the chunks that changed since the last; see [Snapshot backups](snapshots.md)), or `archive`, a whole `.tar.gz` per backup. Backups of either kind stay usable whatever this says.',
    }),
    AERIE_RESTORE_UNDO_BACKUP: flag(true, {
      description:
        "Before a restore replaces any file, take a snapshot of the server's files as they are and keep it as an automatic backup named for the restore, so that the restore can be undone (nearly free: only what changed since the last snapshot is stored). A restore request's `undo_backup` overrides it.",
    }),
    AERIE_BACKUP_STORAGE: choice(['local', 's3'], 'local', {
      description:
        'Where backup archives are kept: `local` (`<AERIE_DATA_DIR>/backups/`) or `s3`, a bucket of an S3-compatible store (see [Backups in an S3-compatible store](backups.md#backups-in-an-s3-compatible-store)).',
    }),
    AERIE_S3_BUCKET: text({
      format: 'bucket',
      description: "With `s3`, required: the bucket's name (it must exist).",
    }),
    AERIE_S3_ENDPOINT: text({
      format: 'uri',
      defaultText: "the provider's own endpoint for the region",
      description:
        "With `s3`: the store's URL as Aerie reaches it, such as `https://s3.example.com` or `http://minio.internal:9000` (and as clients do too, unless `AERIE_S3_PUBLIC_ENDPOINT` is set).",
    }),
    AERIE_S3_PUBLIC_ENDPOINT: text({
      format: 'origin',
      defaultText: '`AERIE_S3_ENDPOINT`',
      description:
        'With `s3`: where clients reach the store, when that is not `AERIE_S3_ENDPOINT` (an internal name, say): `http(s)://host[:port]`, no path. Download links are signed for this host, so a proxy in front must pass the `Host` header through unchanged.',
    }),
    AERIE_S3_REGION: text({
      format: 'region',
      default: 'us-east-1',
      description: 'With `s3`: the region requests are signed for.',
    }),
    AERIE_S3_FORCE_PATH_STYLE: flag(false, {
      description:
        'With `s3`: `true` addresses the bucket as a path (`https://host/bucket/key`), as most self-hosted stores need.',
    }),
    AERIE_S3_CHECKSUMS: choice(['when_required', 'when_supported'], 'when_required', {
      description:
        "With `s3`: `when_supported` sends a CRC32 of every uploaded part, as the AWS SDK does by default (several S3-compatible stores refuse it); `when_required` sends one only where an operation requires it. Restores check the archive's SHA-256 either way.",
    }),
    AERIE_S3_PART_SIZE_MB: integer(8, 5, 5120, {
      description:
        'With `s3`: the size of each uploaded part, in MiB. An archive may have 10,000 parts (so 8 allows 80 GiB), and an upload holds about 3.7 times the part size in memory.',
    }),
    AWS_ACCESS_KEY_ID: text({
      description: "With `s3`, required: the ID of the key the store's bucket is reached with.",
    }),
    AWS_SECRET_ACCESS_KEY: text({
      format: 'secret',
      description: "With `s3`, required: that key's secret.",
    }),
  },
  {
    title: 'Backup storage',
    description: 'The `AERIE_S3_*` and `AWS_*` variables are read only with `AERIE_BACKUP_STORAGE=s3`.',
  },
);

const Metrics = Type.Object(
  {
    AERIE_METRICS: choice(['on', 'off'], 'off', {
      description:
        "`on` serves Prometheus metrics at `/metrics` on the API's own listener (see [Metrics](operations.md#metrics)).",
    }),
    AERIE_METRICS_ADDRESS: text({
      format: 'host-port',
      description:
        '`host:port` (`127.0.0.1:9464`, say, or `[::1]:9464` for IPv6) of a listener of their own: `/metrics` is served there instead, and only there. Setting it turns metrics on (with `AERIE_METRICS=off` it is an error). Give each process on a machine its own port, in its own file (`/etc/aerie/aerie-api.env`, `/etc/aerie/aerie-worker-NAME.env`).',
    }),
  },
  { title: 'Metrics' },
);

/** The sections, in the order the documentation and the example file list them. */
export const SECTIONS = [
  Database,
  Files,
  Http,
  Logs,
  Sessions,
  Jobs,
  Schedules,
  EventStreams,
  BackupStorage,
  Metrics,
];

/** Every variable Aerie reads, and nothing else. */
export const Environment = Type.Object({
  ...Database.properties,
  ...Files.properties,
  ...Http.properties,
  ...Logs.properties,
  ...Sessions.properties,
  ...Jobs.properties,
  ...Schedules.properties,
  ...EventStreams.properties,
  ...BackupStorage.properties,
  ...Metrics.properties,
});

export type Environment = Static<typeof Environment>;
export type VariableName = keyof typeof Environment.properties;
