/**
 * Builds dist/ from src/: the program (src/main.ts) and every module a worker thread starts,
 * bundled by esbuild into a few files, so that a command starts by reading ~40 files instead of
 * ~700 (Aerie's own modules, Kysely's and TypeBox's, one file each). `npm run build` runs it after
 * the type check.
 *
 *   node --import tsx scripts/bundle.ts                      dist/, as `npm run build` makes it
 *   node --import tsx scripts/bundle.ts --out DIR FILE...    the same into DIR, with FILE... as
 *                                                            entries too (a bench's own program,
 *                                                            which imports the sources)
 *
 * The layout it keeps, which the code relies on:
 * - every entry and every shared chunk lands flat in dist/, so a thread entry named beside its
 *   caller (`threadEntry(import.meta.url, './x.thread')`, `runInThread(import.meta.url, …)`)
 *   is found from whichever chunk the caller was bundled into;
 * - packages stay in node_modules, loaded as they are, except the pure-JavaScript ones of many
 *   small files listed in BUNDLED (a native driver, pino's transport threads and anything loaded
 *   with createRequire must stay a package);
 * - code that splits off behind `await import()` stays in a chunk of its own, loaded only by the
 *   command that needs it (the HTTP server is not loaded by `backup create`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = path.join(ROOT, 'src');
const OUT = path.join(ROOT, 'dist');

/** Packages bundled into dist/: many small ES modules each, none of them loaded by path (a CommonJS
 * package could not be: its require() calls do not work inside an ES module). */
const BUNDLED = new Set(['kysely', '@sinclair/typebox']);

/** A thread module named beside its caller: `(import.meta.url, './name')`. */
const THREAD_REFERENCE = /import\.meta\.url,\s*'(\.\/[^']+)'/g;

/**
 * src/main.ts, every module a thread is started on or imports by URL, and `extra`, each its own
 * entry (their names must differ: every entry lands flat in the output directory).
 */
export function entryPoints(extra: readonly string[] = []): string[] {
  const entries = new Set([path.join(SOURCES, 'main.ts'), ...extra.map((file) => path.resolve(file))]);
  for (const entry of fs.readdirSync(SOURCES, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    for (const [, target] of fs.readFileSync(file, 'utf8').matchAll(THREAD_REFERENCE))
      entries.add(path.resolve(path.dirname(file), `${target}.ts`));
  }
  const byName = new Map<string, string>();
  for (const entry of entries) {
    if (!fs.existsSync(entry)) throw new Error(`a thread module named in the sources is missing: ${entry}`);
    const name = path.basename(entry);
    const other = byName.get(name);
    if (other !== undefined) throw new Error(`two entries would both be dist/${name}: ${other}, ${entry}`);
    byName.set(name, entry);
  }
  return [...entries].sort();
}

/** A bare import stays a package import unless its package is in BUNDLED. */
const packagesOutside: Plugin = {
  name: 'packages-outside',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const parts = args.path.split('/');
      const name = args.path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      return BUNDLED.has(name ?? '') ? undefined : { path: args.path, external: true };
    });
  },
};

async function main(args: string[]): Promise<void> {
  let outdir = OUT;
  const at = args.indexOf('--out');
  if (at !== -1) {
    const dir = args[at + 1];
    if (dir === undefined) throw new Error('--out needs a directory');
    outdir = path.resolve(dir);
    args.splice(at, 2);
  }
  await build({
    entryPoints: entryPoints(args),
    outdir,
    entryNames: '[name]',
    chunkNames: '[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    sourcemap: true,
    plugins: [packagesOutside],
    logLevel: 'warning',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
