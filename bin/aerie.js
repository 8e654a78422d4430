#!/usr/bin/env node
// Runs the compiled build (dist/, made by `npm run build`, which `npm install` runs).
// In development, `npm run aerie -- <command>` runs the TypeScript sources through tsx instead.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'aerie: the compiled build is missing (dist/main.js). Run `npm run build` in the ' +
      `Aerie directory (${fileURLToPath(new URL('..', import.meta.url))}) first.\n`,
  );
  process.exit(1);
}
await import(entry.href);
