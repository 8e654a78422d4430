/**
 * The Node.js lines Aerie supports: the LTS lines, 24 (active) and 22 (maintenance). The
 * `engines` field of package.json says the same, and CI runs on both (.ci/run).
 */
export const OLDEST_SUPPORTED_NODE_MAJOR = 22;
/** 22.15 is the first 22 whose zlib has zstd, which snapshot backups compress with. */
const OLDEST_SUPPORTED_22_MINOR = 15;

/**
 * The AWS SDK's switch for its own Node version warning. Left alone, the SDK prints that warning
 * once per thread that makes an S3 client: each backup thread of a worker would print it again.
 */
const SDK_VERSION_WARNING_SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

function majorOf(version: string): number {
  return Number.parseInt(version.replace(/^v/, ''), 10);
}

function minorOf(version: string): number {
  return Number.parseInt(version.replace(/^v/, '').split('.')[1] ?? '0', 10);
}

/** What to say about a Node.js version Aerie does not support, or null for a supported one. */
export function unsupportedNodeNotice(version: string): string | null {
  const major = majorOf(version);
  if (major === OLDEST_SUPPORTED_NODE_MAJOR && minorOf(version) < OLDEST_SUPPORTED_22_MINOR) {
    return (
      `Node.js ${version} is not supported: on the 22 line Aerie needs 22.${OLDEST_SUPPORTED_22_MINOR} or newer, ` +
      'whose zlib has zstd (snapshot backups are compressed with it).'
    );
  }
  if (major >= OLDEST_SUPPORTED_NODE_MAJOR) return null;
  return (
    `Node.js ${version} is not supported (it has reached its end of life): Aerie runs on Node.js 24 ` +
    `or 22, and its dependencies' next releases (the AWS SDK's from January 2027) will need 22 or newer.`
  );
}

/**
 * Says once, for the whole process, that its Node.js version is unsupported, and turns the AWS
 * SDK's own warning off, since this one says more; threads started afterwards inherit the
 * environment, so none of them repeats it. Returns whether it said anything.
 */
export function warnOnceIfNodeUnsupported(
  write: (line: string) => void,
  version = process.version,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const notice = unsupportedNodeNotice(version);
  if (notice === null || env[SDK_VERSION_WARNING_SWITCH] === 'true') return false;
  write(notice);
  env[SDK_VERSION_WARNING_SWITCH] = 'true';
  return true;
}

/**
 * Why the SQLite driver cannot be loaded on this Node.js version, or null when it can. Its
 * native module (better-sqlite3 13, built on Node-API for Node.js 22 and newer) crashes the
 * process on Node.js 20 as it loads, so a process on 20 says so instead; PostgreSQL and MariaDB
 * still work there.
 */
export function sqliteDriverProblem(version: string): string | null {
  if (majorOf(version) >= OLDEST_SUPPORTED_NODE_MAJOR) return null;
  return (
    `SQLite needs Node.js 22 or newer: its driver crashes on Node.js ${version}. ` +
    `Run Aerie on Node.js 24 or 22, or point DATABASE_URL at PostgreSQL or MariaDB.`
  );
}
