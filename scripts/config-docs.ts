/**
 * Generates the configuration's documentation from its schema (src/config/environment.ts): the
 * tables of docs/configuration.md, between its marker comments, and the whole of
 * deploy/aerie.env.example.
 *
 *   node --import tsx scripts/config-docs.ts           writes both files where they differ
 *   node --import tsx scripts/config-docs.ts --check   writes nothing; exits 1 naming each file
 *                                                      that differs from what the schema makes
 *
 * test/config-docs.test.ts runs the check too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { TObject } from '@sinclair/typebox';
import { SECTIONS } from '../src/config/environment.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DOCS_FILE = 'docs/configuration.md';
export const ENV_FILE = 'deploy/aerie.env.example';
export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';
export const COMMAND = 'node --import tsx scripts/config-docs.ts';

/** Reads a file of the repository; a missing one reads as empty. */
export type Reader = (file: string) => string;

export const readFromRoot: Reader = (file) => {
  const full = path.join(ROOT, file);
  return fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : '';
};

/** An entry of the schema: the JSON Schema keywords the generator reads. */
interface Setting {
  type?: string;
  anyOf?: { type?: string; const?: unknown }[];
  description: string;
  default?: string | number | boolean;
  defaultText?: string;
  example?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
}

/** How the docs' "values" column names each string format of the schema. */
const FORMATS: Record<string, string> = {
  text: 'text',
  secret: 'text (secret)',
  path: 'path',
  host: 'host name or address',
  uri: 'URL',
  origin: 'URL without a path',
  'database-url': 'database URL',
  'trust-proxy': '`true`, `false`, a hop count, or addresses and CIDRs',
  'host-port': '`host:port`',
  bucket: 'bucket name',
  region: 'region name',
  timezone: 'IANA time zone name',
};

/** The paragraphs of the example file above its first section. */
const ENV_HEADER = [
  "Aerie's configuration, read once from the environment at start (a bad value stops the process with a message naming the variable). Copy to /etc/aerie/aerie.env, mode 0640, owner root, group aerie: it holds the database password, the S3 secret and the key that signs download links.",
  "Every variable Aerie reads is here. A commented line shows the default (empty: none) and changes nothing; uncomment it to set another value. The uncommented lines are what a deployment of several processes sets. All API and worker processes of one deployment share DATABASE_URL, REDIS_URL, AERIE_APP_KEY and the backup storage settings; a process's own settings (such as AERIE_METRICS_ADDRESS) go in the second file its unit reads. Values are plain: no quotes, no spaces. See docs/deploy.md and docs/configuration.md.",
  `Generated from src/config/environment.ts by \`${COMMAND}\`: edit the schema, not this file.`,
];

const LINE_WIDTH = 97;

function sections(): { title: string; description?: string; settings: [string, Setting][] }[] {
  return SECTIONS.map((section: TObject) => ({
    title: section.title ?? '',
    description: section.description,
    settings: Object.entries(section.properties) as [string, Setting][],
  }));
}

/** The words an integer's range or a choice allows, or null for text. */
function allowed(name: string, schema: Setting): { range: [number, number] } | { choices: string[] } | null {
  if (schema.type === 'integer') return { range: [schema.minimum ?? -Infinity, schema.maximum ?? Infinity] };
  if (schema.type === 'boolean') return { choices: ['true', 'false'] };
  if (schema.anyOf !== undefined) {
    return {
      choices: schema.anyOf.map((literal) => {
        if (typeof literal.const !== 'string') throw new Error(`${name}: a choice is of string literals`);
        return literal.const;
      }),
    };
  }
  if (schema.type === 'string') return null;
  throw new Error(`${name}: no documentation for a setting of type ${schema.type}`);
}

const code = (text: string | number) => `\`${text}\``;

/** A markdown table cell: one line, no unescaped pipe. */
const cell = (text: string) => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|');

/**
 * Markdown as an env file comment reads it: a link to a file of docs/ becomes its text and the
 * file, a link to a section of one the file and the section's title.
 */
function plain(markdown: string): string {
  return markdown.replace(
    /\[([^\]]+)\]\(([^)#]+)(#[^)]*)?\)/g,
    (_all, text: string, file: string, anchor?: string) => {
      const target = /^[a-z]+:/.test(file) ? file : path.posix.join('docs', file);
      return anchor === undefined ? `${text} (${target})` : `${target}, "${text}"`;
    },
  );
}

function valuesCell(name: string, schema: Setting): string {
  const values = allowed(name, schema);
  if (values === null) {
    const label = FORMATS[schema.format ?? 'text'];
    if (label === undefined) throw new Error(`${name}: no label for the format "${schema.format}"`);
    return label;
  }
  if ('range' in values) return `${code(values.range[0])} to ${code(values.range[1])}`;
  return values.choices.map(code).join(', ');
}

function defaultCell(schema: Setting): string {
  if (schema.default !== undefined) return code(String(schema.default));
  return schema.defaultText ?? '—';
}

/** The part of docs/configuration.md between the markers: a table per section. */
export function renderTable(): string {
  const out = [
    `<!-- Generated from src/config/environment.ts by \`${COMMAND}\`: edit the schema, not these tables. -->`,
  ];
  for (const section of sections()) {
    out.push('', `## ${section.title}`, '');
    if (section.description !== undefined) out.push(section.description, '');
    out.push('| variable | values | default | meaning |', '| --- | --- | --- | --- |');
    for (const [name, schema] of section.settings) {
      const cells = [code(name), valuesCell(name, schema), defaultCell(schema), schema.description];
      out.push(`| ${cells.map(cell).join(' | ')} |`);
    }
  }
  return out.join('\n') + '\n\n';
}

/** Joins words that a line break should not part (undone by `comment`). */
const glue = (text: string) => text.replace(/ /g, '\u00a0');

/** `text` as `# ` comment lines of at most LINE_WIDTH characters. */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.split(/[ \t\n]+/).filter((w) => w !== '')) {
    if (line !== '#' && line.length + 1 + word.length > LINE_WIDTH) {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  if (line !== '#') lines.push(line);
  return lines.map((l) => l.replace(/\u00a0/g, ' '));
}

/** A value the file sets, or shows as a default: read alike by systemd and by a shell. */
function plainValue(name: string, value: string): string {
  if (!/^[A-Za-z0-9_.,:/@+=-]*$/.test(value))
    throw new Error(`${name}: "${value}" cannot be written plainly in ${ENV_FILE}`);
  return value;
}

function envEntry(name: string, schema: Setting): string[] {
  const values = allowed(name, schema);
  const notes = [plain(schema.description).replace(/([^.])$/, '$1.')];
  if (values !== null && 'range' in values)
    notes.push(glue(`From ${values.range[0]} to ${values.range[1]}.`));
  if (values !== null && 'choices' in values) notes.push(`One of: ${values.choices.join(', ')}.`);
  const fallback =
    schema.default !== undefined ? String(schema.default) : plain(schema.defaultText ?? 'unset');
  const [first = '', ...rest] = fallback.split(' ');
  notes.push([glue(`Default: ${first}`), ...rest].join(' ') + '.');
  const line =
    schema.example !== undefined
      ? `${name}=${plainValue(name, schema.example)}`
      : `#${name}=${plainValue(name, schema.default === undefined ? '' : String(schema.default))}`;
  return [...comment(notes.join(' ')), line];
}

/** The whole of deploy/aerie.env.example. */
export function renderEnvExample(): string {
  const out = ENV_HEADER.flatMap((paragraph, i) => [...(i === 0 ? [] : ['#']), ...comment(paragraph)]);
  for (const section of sections()) {
    out.push('', `# --- ${section.title} `.padEnd(LINE_WIDTH - 3, '-'));
    if (section.description !== undefined) out.push(...comment(plain(section.description)));
    section.settings.forEach(([name, schema], i) => {
      if (i > 0 || section.description !== undefined) out.push('');
      out.push(...envEntry(name, schema));
    });
  }
  return out.join('\n') + '\n';
}

/** `docs` with the part between the markers replaced by `table`. */
export function spliceTable(docs: string, table: string): string {
  const start = docs.indexOf(`${TABLE_START}\n`);
  const end = docs.indexOf(`${TABLE_END}\n`);
  if (
    start === -1 ||
    end < start ||
    docs.indexOf(TABLE_START, start + 1) !== -1 ||
    docs.indexOf(TABLE_END, end + 1) !== -1
  )
    throw new Error(`${DOCS_FILE} needs one ${TABLE_START} line and, below it, one ${TABLE_END} line`);
  return `${docs.slice(0, start)}${TABLE_START}\n${table}${docs.slice(end)}`;
}

/** Each generated file and the content the schema gives it. */
export function generate(read: Reader = readFromRoot): { file: string; content: string }[] {
  return [
    { file: DOCS_FILE, content: spliceTable(read(DOCS_FILE), renderTable()) },
    { file: ENV_FILE, content: renderEnvExample() },
  ];
}

/** The generated files whose content is not what the schema gives them. */
export function drifted(read: Reader = readFromRoot): string[] {
  return generate(read)
    .filter(({ file, content }) => read(file) !== content)
    .map(({ file }) => file);
}

function main(args: string[]): number {
  if (args.some((arg) => arg !== '--check')) {
    process.stderr.write(`usage: ${COMMAND} [--check]\n`);
    return 2;
  }
  if (args.includes('--check')) {
    const files = drifted();
    for (const file of files)
      process.stderr.write(`${file} is not what the schema generates: run ${COMMAND}\n`);
    return files.length === 0 ? 0 : 1;
  }
  for (const { file, content } of generate()) {
    if (readFromRoot(file) === content) continue;
    fs.writeFileSync(path.join(ROOT, file), content);
    process.stdout.write(`wrote ${file}\n`);
  }
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
