/**
 * How tests run Aerie as a process of its own. They run the TypeScript sources through tsx, so
 * that they test the code as it is now, never a build in `dist/` that may be out of date; only
 * `test/cli/compiled-build.test.ts` runs the compiled `bin/aerie.js`.
 */
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository's root directory. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const ENTRY = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/**
 * The arguments to give `process.execPath` to run `aerie <args>` from the sources; they work from
 * any working directory.
 */
export function aerieArgv(args: readonly string[]): string[] {
  return ['--import', TSX, ENTRY, ...args];
}
