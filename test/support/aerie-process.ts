/**
 * How tests run Aerie as a process of its own. They run the TypeScript sources through tsx, so
 * that they test the code as it is now, never a build in `dist/` that may be out of date; only
 * `test/cli/compiled-build.test.ts` runs the compiled `bin/aerie.js`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { TestApp } from './harness.ts';

/** The repository's root directory. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** tsx's loader, for `node --import` (how every child process of the tests runs the sources). */
export const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const ENTRY = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/**
 * The arguments to give `process.execPath` to run `aerie <args>` from the sources; they work from
 * any working directory.
 */
export function aerieArgv(args: readonly string[]): string[] {
  return ['--import', TSX, ENTRY, ...args];
}

export interface AerieProcess {
  child: ChildProcess;
  /** Everything it has printed so far, stdout and stderr together. */
  output(): string;
  /** Its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
}

/**
 * Runs `aerie <args>` from the sources as a process of its own, on the test app's database and
 * data directory.
 */
export function spawnAerie(app: TestApp, args: string[], env: Record<string, string> = {}): AerieProcess {
  const child = spawn(process.execPath, aerieArgv(args), {
    cwd: ROOT,
    env: {
      ...process.env,
      AERIE_DATA_DIR: app.dataDir,
      DATABASE_URL: app.config.database.url,
      AERIE_WORKER_POLL_MS: '50',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}
