/**
 * The configuration schema (src/config/environment.ts) as the one source of truth: the files
 * generated from it are current, it names every variable Aerie reads and nothing else, and the
 * loader takes its defaults, ranges and choices from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { KindGuard } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import {
  COMMAND,
  DOCS_FILE,
  drifted,
  ENV_FILE,
  generate,
  readFromRoot,
  ROOT,
  TABLE_END,
} from '../scripts/config-docs.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { Environment, SECTIONS } from '../src/config/environment.ts';

const NAMES = Object.keys(Environment.properties);
const schemaOf = (name: string) => Environment.properties[name as keyof typeof Environment.properties];

/** A bucket and its key; with backup storage switched to S3, the S3 variables are read too. */
const S3_BUCKET = {
  AERIE_S3_BUCKET: 'aerie-backups',
  AWS_ACCESS_KEY_ID: 'key',
  AWS_SECRET_ACCESS_KEY: 'secret',
};
const S3_BASE = { ...S3_BUCKET, AERIE_BACKUP_STORAGE: 's3' };
/** The environment a variable is tried on: S3 storage, so that every variable is read. */
const baseFor = (name: string): Record<string, string> =>
  name === 'AERIE_BACKUP_STORAGE' ? S3_BUCKET : S3_BASE;

/** The variables `loadConfig` reads from each of `envs`, found by watching it read them. */
function variablesRead(envs: Record<string, string>[]): string[] {
  const seen = new Set<string>();
  for (const env of envs) {
    const watched = new Proxy<NodeJS.ProcessEnv>(env, {
      get(target, key) {
        if (typeof key === 'string') seen.add(key);
        return Reflect.get(target, key) as unknown;
      },
    });
    loadConfig(watched, '/srv/aerie');
  }
  return [...seen].sort();
}

/**
 * The environment variables a source text names: any `AERIE_…` (a wildcard such as `AERIE_S3_*`
 * excepted), and any name read as `env.NAME` or `env['NAME']` (`process.env` included).
 */
function variablesNamedIn(source: string): string[] {
  const names = new Set<string>();
  for (const match of source.matchAll(/\bAERIE_[A-Z0-9_]+\b(?!\*)/g)) names.add(match[0]);
  for (const match of source.matchAll(/\benv(?:\.|\[\s*['"`])([A-Z][A-Z0-9_]*)\b/g)) names.add(match[1]!);
  return [...names].sort();
}

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(dir, file));
}

describe('the files generated from the schema', () => {
  it(`are current (if not, run ${COMMAND})`, () => {
    expect(drifted()).toEqual([]);
  });

  it('are reported when their generated part is edited, and not for the prose around it', () => {
    const generated = new Map(generate().map(({ file, content }) => [file, content]));
    const editing = (file: string, edit: (text: string) => string) => (name: string) =>
      name === file ? edit(generated.get(name)!) : generated.get(name)!;
    expect(drifted(editing(ENV_FILE, (text) => text))).toEqual([]);
    const port = (text: string) => text.replace('#PORT=8080', '#PORT=8081');
    expect(drifted(editing(ENV_FILE, port))).toEqual([ENV_FILE]);
    const row = (text: string) => text.replace('| `PORT` |', '| `PORT ` |');
    expect(drifted(editing(DOCS_FILE, row))).toEqual([DOCS_FILE]);
    const prose = (text: string) => text.replace('# Configuration\n', '# Configuration\n\nMore prose.\n');
    expect(drifted(editing(DOCS_FILE, prose))).toEqual([]);
  });

  it('refuse a docs file without its end marker, naming it', () => {
    const unmarked = (name: string) =>
      name === DOCS_FILE ? readFromRoot(name).replace(TABLE_END, '') : readFromRoot(name);
    expect(() => drifted(unmarked)).toThrow(DOCS_FILE);
  });
});

describe('the schema', () => {
  it('is its sections, in order, each variable in one of them', () => {
    const fromSections = SECTIONS.flatMap((section) => Object.keys(section.properties));
    expect(fromSections).toEqual(NAMES);
    expect(new Set(fromSections).size).toBe(fromSections.length);
    for (const section of SECTIONS) expect(section.title).toMatch(/\S/);
  });

  it('names every variable loadConfig reads (with local and with S3 storage), and only those', () => {
    const read = variablesRead([{}, { ...S3_BASE, AERIE_METRICS_ADDRESS: '127.0.0.1:9464' }]);
    expect(read).toEqual([...NAMES].sort());
  });

  it('names every variable that src/ mentions or reads', () => {
    const named = new Map<string, string>();
    for (const file of sourceFiles(path.join(ROOT, 'src'))) {
      for (const name of variablesNamedIn(fs.readFileSync(file, 'utf8')))
        named.set(name, path.relative(ROOT, file));
    }
    // The scan finds what the loader reads through `env.NAME`, and the names other modules mention.
    expect([...named.keys()]).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'TRUST_PROXY', 'AERIE_PUBLIC_URL', 'AERIE_METRICS_ADDRESS']),
    );
    const unknown = [...named]
      .filter(([name]) => !NAMES.includes(name))
      .map(([name, file]) => `${name} (${file})`);
    expect(unknown).toEqual([]);
  });

  it('would report a variable it does not name (the scan above can fail)', () => {
    const source = [
      "const a = env.AERIE_NOT_A_SETTING ?? process.env['NODE_ENV'];",
      '// the AERIE_S3_* variables, and LOG_LEVEL in prose',
    ].join('\n');
    expect(variablesNamedIn(source)).toEqual(['AERIE_NOT_A_SETTING', 'NODE_ENV']);
    expect(variablesNamedIn(source).filter((name) => !NAMES.includes(name))).toHaveLength(2);
  });

  it('gives every variable a description, and every default within its range or choices', () => {
    for (const name of NAMES) {
      const schema = schemaOf(name);
      expect(schema.description, name).toMatch(/\S/);
      if (KindGuard.IsInteger(schema)) {
        expect(schema.default, name).toBeGreaterThanOrEqual(schema.minimum);
        expect(schema.default, name).toBeLessThanOrEqual(schema.maximum);
      }
      if (KindGuard.IsUnion(schema))
        expect(schema.anyOf.map((literal) => literal.const as unknown)).toContain(schema.default);
    }
  });
});

describe('loadConfig reads the schema', () => {
  it("with each variable set to the schema's default, as with it unset", () => {
    for (const name of NAMES) {
      const fallback = (schemaOf(name) as { default?: string | number | boolean }).default;
      if (fallback === undefined) continue;
      const base = baseFor(name);
      expect(loadConfig({ ...base, [name]: String(fallback) }, '/srv/aerie'), name).toEqual(
        loadConfig(base, '/srv/aerie'),
      );
    }
  });

  it("takes each integer's range from the schema", () => {
    for (const name of NAMES) {
      const schema = schemaOf(name);
      if (!KindGuard.IsInteger(schema)) continue;
      const [min, max] = [schema.minimum, schema.maximum];
      const load = (value: number) => () => loadConfig({ ...baseFor(name), [name]: String(value) });
      expect(load(min), name).not.toThrow();
      expect(load(max), name).not.toThrow();
      for (const outside of [min - 1, max + 1]) {
        expect(load(outside), name).toThrow(ConfigError);
        expect(load(outside), name).toThrow(
          `${name} must be an integer from ${min} to ${max}, got "${outside}"`,
        );
      }
    }
  });

  it("takes each choice's words from the schema, in any case", () => {
    for (const name of NAMES) {
      const schema = schemaOf(name);
      const words = KindGuard.IsUnion(schema)
        ? schema.anyOf.map((literal) => String(literal.const))
        : KindGuard.IsBoolean(schema)
          ? ['true', 'false']
          : null;
      if (words === null) continue;
      const load = (value: string) => () => loadConfig({ ...baseFor(name), [name]: value });
      for (const word of words) {
        expect(load(word), `${name}=${word}`).not.toThrow();
        expect(load(` ${word.toUpperCase()} `), `${name}=${word}`).not.toThrow();
      }
      expect(load('neither'), name).toThrow(ConfigError);
      expect(load('neither'), name).toThrow(new RegExp(`^${name} must be .*${words.at(-1)}, got "neither"$`));
    }
  });
});
