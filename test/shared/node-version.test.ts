import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  OLDEST_SUPPORTED_NODE_MAJOR,
  sqliteDriverProblem,
  unsupportedNodeNotice,
  warnOnceIfNodeUnsupported,
} from '../../src/shared/node-version.ts';
import { aerieArgv, ROOT, TSX } from '../support/aerie-process.ts';

const run = promisify(execFile);
const SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
const THIS_NODE_UNSUPPORTED = Number.parseInt(process.versions.node, 10) < OLDEST_SUPPORTED_NODE_MAJOR;

/** This test's environment without the SDK's switch, as a user's shell would have it. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[SWITCH];
  return env;
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe('the supported Node.js lines', () => {
  it('calls 22 and 24 (and newer) supported, and anything older not', () => {
    expect(unsupportedNodeNotice('v20.20.2')).toMatch(
      /^Node\.js v20\.20\.2 is not supported .* Node\.js 24 or 22/,
    );
    expect(unsupportedNodeNotice('v18.0.0')).not.toBeNull();
    for (const version of ['v22.15.0', 'v22.23.3', 'v24.21.0', 'v26.1.0'])
      expect(unsupportedNodeNotice(version)).toBeNull();
    // zstd came to zlib in 22.15: snapshot backups need it.
    expect(unsupportedNodeNotice('v22.13.0')).toMatch(/22\.15 or newer, whose zlib has zstd/);
  });

  it('refuses SQLite below 22, whose driver would crash the process as it loads', () => {
    expect(sqliteDriverProblem('v20.20.2')).toMatch(/^SQLite needs Node\.js 22 or newer: .* v20\.20\.2\. /);
    expect(sqliteDriverProblem('v22.13.0')).toBeNull();
    expect(sqliteDriverProblem('v24.21.0')).toBeNull();
  });

  it('agrees with package.json engines', async () => {
    const { default: pkg } = await import('../../package.json', { with: { type: 'json' } });
    expect(pkg.engines.node).toBe('^22.15.0 || >=24.0.0');
  });

  it('says it once, and turns the SDK warning off for the threads that follow', () => {
    const said: string[] = [];
    const env: NodeJS.ProcessEnv = {};
    expect(warnOnceIfNodeUnsupported((line) => said.push(line), 'v20.20.2', env)).toBe(true);
    expect(warnOnceIfNodeUnsupported((line) => said.push(line), 'v20.20.2', env)).toBe(false);
    expect(said).toHaveLength(1);
    expect(env[SWITCH]).toBe('true');

    const quiet: NodeJS.ProcessEnv = {};
    expect(warnOnceIfNodeUnsupported((line) => said.push(line), 'v24.21.0', quiet)).toBe(false);
    expect(quiet[SWITCH]).toBeUndefined();
  });
});

/**
 * A process that makes an S3 client on its main thread and on two worker threads, as a worker
 * making backups does; with `warnFirst` it starts as `aerie` does. Returns what it printed.
 */
async function sdkWarnings(warnFirst: boolean): Promise<string> {
  const script = `
    import { Worker } from 'node:worker_threads';
    import { once } from 'node:events';
    import { S3Client } from '@aws-sdk/client-s3';
    import { warnOnceIfNodeUnsupported } from './src/shared/node-version.ts';
    if (${String(warnFirst)}) warnOnceIfNodeUnsupported((notice) => process.stderr.write('aerie: warning: ' + notice + '\\n'));
    new S3Client({ region: 'us-east-1' });
    for (let i = 0; i < 2; i++) {
      const worker = new Worker("import('@aws-sdk/client-s3').then(({ S3Client }) => new S3Client({ region: 'us-east-1' }));", { eval: true });
      await once(worker, 'exit');
    }
  `;
  const { stderr } = await run(process.execPath, ['--import', TSX, '--input-type=module', '-e', script], {
    cwd: ROOT,
    env: cleanEnv(),
  });
  return stderr;
}

describe('the AWS SDK version warning', () => {
  it('appears at most once per process: Aerie says it once, the SDK not at all', async () => {
    const stderr = await sdkWarnings(true);
    expect(count(stderr, 'NodeVersionSupportWarning')).toBe(0);
    expect(count(stderr, 'aerie: warning: Node.js')).toBe(THIS_NODE_UNSUPPORTED ? 1 : 0);
  });

  it('would otherwise be printed by every thread on an unsupported Node (the control)', async () => {
    const stderr = await sdkWarnings(false);
    expect(count(stderr, 'NodeVersionSupportWarning')).toBe(THIS_NODE_UNSUPPORTED ? 3 : 0);
  });

  it('is said by the aerie command itself, on stderr, once', async () => {
    const { stdout, stderr } = await run(process.execPath, aerieArgv(['--version']), {
      cwd: ROOT,
      env: cleanEnv(),
    });
    expect(stdout.trim()).not.toBe('');
    expect(count(stderr, 'aerie: warning: Node.js')).toBe(THIS_NODE_UNSUPPORTED ? 1 : 0);
  });
});

/** The machine's own Node.js when it is older than the supported lines (Debian's 20, say). */
const OLD_NODE = ((): string | null => {
  try {
    const version = execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).trim();
    return unsupportedNodeNotice(version) === null ? null : '/usr/bin/node';
  } catch {
    return null;
  }
})();
if (OLD_NODE === null)
  console.log('SKIPPED: the SQLite refusal on an old Node.js: no Node.js older than 22 here');

describe.runIf(OLD_NODE !== null)('aerie on an unsupported Node.js', () => {
  it('says why it cannot use SQLite and exits 1, instead of crashing', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-old-node-'));
    try {
      const result = await run(OLD_NODE!, aerieArgv(['migrate']), {
        cwd: ROOT,
        env: { ...cleanEnv(), AERIE_DATA_DIR: dataDir, DATABASE_URL: `sqlite://${dataDir}/aerie.db` },
      }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number | null; signal: string | null; stderr: string }) => ({
          code: error.signal ?? error.code,
          stderr: error.stderr,
        }),
      );
      expect(result.code).toBe(1);
      expect(count(result.stderr, 'aerie: warning: Node.js')).toBe(1);
      expect(result.stderr).toContain('aerie: SQLite needs Node.js 22 or newer');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
