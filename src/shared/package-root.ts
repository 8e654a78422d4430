import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface Manifest {
  name?: unknown;
  version?: unknown;
}

let found: { dir: string; manifest: Manifest } | undefined;

/**
 * Aerie's package directory and its package.json, found by walking up from this module: the
 * same from the sources (`src/shared/`) and from the build (`dist/`, where modules are bundled
 * and no longer sit at their source's depth).
 */
function aeriePackage(): { dir: string; manifest: Manifest } {
  if (found !== undefined) return found;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = readManifest(path.join(dir, 'package.json'));
    if (manifest?.name === 'aerie') return (found = { dir, manifest });
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("cannot find Aerie's package.json");
    dir = parent;
  }
}

/** The directory Aerie is installed in (where its package.json, bin/ and dist/ are). */
export function packageRoot(): string {
  return aeriePackage().dir;
}

/** Aerie's version, from its package.json. */
export function packageVersion(): string {
  const { version } = aeriePackage().manifest;
  if (typeof version !== 'string') throw new Error("Aerie's package.json has no version");
  return version;
}

function readManifest(file: string): Manifest | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
