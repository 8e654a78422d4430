import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Aerie's version, read from its package.json at run time. The file is found by walking up from
 * this module, so it is the same from the sources (`src/cli/`) and from a compiled build (`dist/`).
 */
export function packageVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = readManifest(path.join(dir, 'package.json'));
    if (manifest?.name === 'aerie' && typeof manifest.version === 'string') return manifest.version;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("cannot find Aerie's package.json");
    dir = parent;
  }
}

function readManifest(file: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
