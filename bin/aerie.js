#!/usr/bin/env node
// Runs the compiled build (dist/, made by `npm run build`, which `npm install` runs).
// In development, `npm run aerie -- <command>` runs the TypeScript sources through tsx instead.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'aerie: the compiled build is missing (dist/main.js). Run `npm run build` in the ' +
      `Aerie directory (${fileURLToPath(new URL('..', import.meta.url))}) first.\n`,
  );
  process.exit(1);
}
// V8 keeps the compiled code of dist/ in Node's compile cache (in the temporary directory, or
// NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off), so a command starts in about
// half the time after its first run.
module.enableCompileCache?.();
await import(entry.href);
