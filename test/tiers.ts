/**
 * The tiers of the test suite, chosen with the environment variable AERIE_TEST_TIER (read by
 * vitest.config.ts):
 *
 * - unset or empty: every test file;
 * - `quick`: the unit tests and the in-process HTTP tests, for day-to-day work on SQLite: no test
 *   that runs Node processes of its own (Aerie from `aerie-process.ts` or by name, a script
 *   through `process.execPath`), drives a browser, or needs a server (the PostgreSQL, MariaDB and
 *   Redis of `dialects.ts`, a private one, an S3-compatible store); nor any of NOT_QUICK;
 * - `database`: the tests that open an app or a database through `test/support/databases.ts`,
 *   which follows AERIE_TEST_DATABASE_URL, save the browser tests and those that reach it only
 *   through `dialects.ts` (they run on every engine in every run): what is worth running again on
 *   PostgreSQL and on MariaDB.
 *
 * Membership follows from each test file's imports: its relative imports within test/, followed
 * through the files they import (`import type` left out, as it loads nothing), and the code of
 * them all. A new test file so lands in its tiers without a list being edited; NOT_QUICK names
 * the few files that neither tells about.
 */
import fs from 'node:fs';
import path from 'node:path';

export type Tier = 'quick' | 'database';

/** Where the test files are, as globs relative to the repository's root. */
export const TEST_FILES = ['src/**/*.test.ts', 'test/**/*.test.ts'];

/** The module that opens the suite's databases: whoever reaches it depends on their engine. */
const DATABASES = 'test/support/databases.ts';

/** Modules that bring processes, servers or browsers: whoever reaches them is not quick. */
const HEAVY_MODULES = [
  // Aerie as a process of its own.
  'test/support/aerie-process.ts',
  // The PostgreSQL, MariaDB and Redis servers, whatever the suite's database.
  'test/support/dialects.ts',
  // Servers of a test's own: PostgreSQL, Redis, an S3-compatible store.
  'test/support/private-postgres.ts',
  'test/support/private-redis.ts',
  'test/support/s3.ts',
  // Chromium.
  'test/web/browser.ts',
];

/**
 * The module of the tests written for several engines at once (ALL_DIALECT_CASES and the like):
 * it reaches databases.ts for scratch databases on each server, not for the suite's database, so
 * the files that only reach databases.ts through it run every engine in every run already.
 */
const ENGINE_CASES = 'test/support/dialects.ts';

/** The browser tests' module: whoever reaches it is left out of the database tier. */
const BROWSER = 'test/web/browser.ts';

/**
 * Code that runs Node processes of its own: Aerie's built entry point or its sources' one, or
 * `process.execPath` with a script.
 */
const SPAWNS_NODE = /\bbin\/aerie\.js\b|\bsrc\/main\.ts\b|\bprocess\.execPath\b/;

/**
 * Tests kept out of the quick tier that their imports do not show to be heavy: load-sized ones,
 * and the slowest in-process ones, which would take the quick tier past 2 minutes on a 2-core
 * machine (where vitest runs one file at a time).
 */
const NOT_QUICK: Record<string, string> = {
  'test/http/refused-flood.test.ts': '200,000 refused logins, then a bound on the heap',
  'test/storage/archive/extract-attacks.test.ts': 'a gzip bomb of 1 GiB, archives of thousands of entries',
  'test/restores/mount-point-restore.test.ts': 'mounts file systems (as root)',
  'test/auth/two-factor.test.ts': 'about 15 s: a password hash for most requests',
  'test/server-events/server-events.test.ts': 'about 9 s: streams held through keep-alive periods',
  'test/servers/subusers.test.ts': 'about 8 s: several users made for each test',
  'test/restores/restore-effects.test.ts': 'about 8 s: restores run by the worker onto real volumes',
  'test/backups/server-backups.test.ts': 'about 6 s: backups made by the worker',
};

/** The test files of `tier`, as paths relative to `root`; every test file when `tier` is undefined. */
export function testFilesOf(root: string, tier: Tier | undefined): string[] {
  const files = listTestFiles(root);
  if (tier === undefined) return files;
  const graph = new ImportGraph(root);
  if (tier === 'quick') {
    return files.filter(
      (file) =>
        !(file in NOT_QUICK) &&
        !graph.reached(file).some((module) => HEAVY_MODULES.includes(module) || graph.spawnsNode(module)),
    );
  }
  return files.filter((file) => {
    const reached = graph.reached(file, ENGINE_CASES);
    return reached.includes(DATABASES) && !reached.includes(BROWSER);
  });
}

/** The tier AERIE_TEST_TIER names; undefined when it is unset or empty. */
export function tierOf(value: string | undefined): Tier | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'quick' || value === 'database') return value;
  throw new Error(`AERIE_TEST_TIER must be quick or database, got "${value}"`);
}

function listTestFiles(root: string): string[] {
  const files: string[] = [];
  for (const dir of ['src', 'test']) {
    const entries = fs.readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' });
    for (const entry of entries) {
      if (entry.endsWith('.test.ts') && !entry.split(path.sep).includes('node_modules'))
        files.push(toPosix(path.join(dir, entry)));
    }
  }
  return files.sort();
}

const toPosix = (file: string) => file.split(path.sep).join('/');

/**
 * `code` without its comments, which may name a module or a command without using it. Strings are
 * kept as they are (a quoted string ends at its line's end at the latest, so that a quote in a
 * regular expression cannot hide the rest of the file).
 */
function withoutComments(code: string): string {
  let out = '';
  let i = 0;
  while (i < code.length) {
    const ch = code[i]!;
    if (ch === '/' && code[i + 1] === '/') {
      const end = code.indexOf('\n', i);
      i = end < 0 ? code.length : end;
    } else if (ch === '/' && code[i + 1] === '*') {
      const end = code.indexOf('*/', i + 2);
      i = end < 0 ? code.length : end + 2;
      out += ' ';
    } else if (ch === "'" || ch === '"' || ch === '`') {
      let j = i + 1;
      while (j < code.length && code[j] !== ch && (ch === '`' || code[j] !== '\n'))
        j += code[j] === '\\' ? 2 : 1;
      out += code.slice(i, j + 1);
      i = j + 1;
    } else {
      out += ch;
      i += 1;
    }
  }
  return out;
}

/**
 * Import and re-export statements, with the imported names; `import type` and `export type` are
 * matched apart (group 1) as they load nothing.
 */
const STATIC_IMPORTS =
  /\b(?:import|export)\s+(type\s+)?(?:([\w$*{},\s]+?)\s+from\s+)?['"]([^'"\n]+)['"]|\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g;

/** The relative imports of the files under test/, read once each. */
class ImportGraph {
  private readonly imports = new Map<string, string[]>();
  private readonly code = new Map<string, string>();
  private readonly reach = new Map<string, string[]>();

  constructor(private readonly root: string) {}

  /**
   * `file` and every module under test/ that it reaches through its imports; with `through`, the
   * imports of that module are not followed (it is listed itself when reached).
   */
  reached(file: string, through?: string): string[] {
    const key = `${file}\0${through ?? ''}`;
    const known = this.reach.get(key);
    if (known !== undefined) return known;
    const seen = new Set<string>([file]);
    const pending = [file];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (next === through) continue;
      for (const imported of this.importsOf(next)) {
        if (!seen.has(imported)) {
          seen.add(imported);
          pending.push(imported);
        }
      }
    }
    const reached = [...seen];
    this.reach.set(key, reached);
    return reached;
  }

  /** Whether `file`'s code (comments and imports aside) runs Node processes of its own. */
  spawnsNode(file: string): boolean {
    return SPAWNS_NODE.test(this.codeOf(file).replace(STATIC_IMPORTS, ''));
  }

  private codeOf(file: string): string {
    let code = this.code.get(file);
    if (code === undefined) {
      code = withoutComments(fs.readFileSync(path.join(this.root, file), 'utf8'));
      this.code.set(file, code);
    }
    return code;
  }

  private importsOf(file: string): string[] {
    let imports = this.imports.get(file);
    if (imports !== undefined) return imports;
    imports = [];
    for (const match of this.codeOf(file).matchAll(STATIC_IMPORTS)) {
      const [, typeOnly, names, specifier, dynamic] = match;
      const target = specifier ?? dynamic;
      if (target === undefined || !target.startsWith('.')) continue;
      if (typeOnly !== undefined || (names !== undefined && onlyTypes(names))) continue;
      const resolved = toPosix(path.normalize(path.join(path.dirname(file), target)));
      if (resolved.startsWith('test/') && fs.existsSync(path.join(this.root, resolved)))
        imports.push(resolved);
    }
    this.imports.set(file, imports);
    return imports;
  }
}

/** Whether an import's names (`{ type A, type B }`) are all types. */
function onlyTypes(names: string): boolean {
  const inBraces = /^\{([^}]*)\}$/.exec(names.trim());
  if (inBraces === null) return false;
  const list = inBraces[1]!
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return list.length > 0 && list.every((name) => name.startsWith('type '));
}
