/**
 * The panel's wire types (web/src/api/openapi.gen.ts) against the server's OpenAPI document:
 * the committed file is what scripts/api-types.ts makes of the app's `GET /api/openapi.json`,
 * the same document always gives the same file, and a changed schema makes the check fail.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { OpenAPI3 } from 'openapi-typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkApiTypes,
  COMMAND,
  fetchOpenApiDocument,
  OUTPUT,
  renderApiTypes,
} from '../../scripts/api-types.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BACKUP = '/api/client/servers/{server}/backups/{backup}';

/** The object at `keys` in a JSON document (an error if there is none). */
function at(value: unknown, ...keys: string[]): Record<string, unknown> {
  let node = value;
  for (const key of keys) {
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined;
  }
  if (typeof node !== 'object' || node === null) throw new Error(`Nothing at ${keys.join(' → ')}`);
  return node as Record<string, unknown>;
}

/** The schema of a backup's attributes in `GET …/backups/{backup}`'s 200 answer. */
function backupAttributes(document: OpenAPI3): Record<string, unknown> {
  return at(
    document,
    'paths',
    BACKUP,
    'get',
    'responses',
    '200',
    'content',
    'application/json',
    'schema',
    'properties',
    'attributes',
  );
}

describe('the panel wire types', () => {
  let document: OpenAPI3;
  beforeAll(async () => {
    document = await fetchOpenApiDocument();
  });

  it('are what the app’s OpenAPI document gives', async () => {
    const check = await checkApiTypes(document);
    expect(check.actual, `${OUTPUT} is missing: run \`${COMMAND}\``).not.toBeNull();
    expect(check.actual, `${OUTPUT} is out of date: run \`${COMMAND}\``).toBe(check.expected);
    expect(check.upToDate).toBe(true);
  });

  it('come out the same from another app’s document', async () => {
    const again = await fetchOpenApiDocument();
    expect(again).toEqual(document);
    expect(await renderApiTypes(again)).toBe(await renderApiTypes(document));
  });

  it('are out of date once a route’s schema changes, and the check writes nothing', async () => {
    const before = fs.readFileSync(OUTPUT, 'utf8');
    const changed = structuredClone(document);
    const attributes = backupAttributes(changed);
    at(attributes, 'properties').retention_days = { type: 'integer' };
    (attributes.required as string[]).push('retention_days');

    const check = await checkApiTypes(changed);
    expect(check.upToDate).toBe(false);
    expect(check.expected).toContain('retention_days: number;');
    expect(check.actual).not.toContain('retention_days');
    expect(fs.readFileSync(OUTPUT, 'utf8')).toBe(before);
    // The change is the document's alone: the one it was copied from still gives the file.
    expect(backupAttributes(document).properties).not.toHaveProperty('retention_days');
  });

  it('are out of date once a route goes', async () => {
    const changed = structuredClone(document);
    delete at(changed, 'paths')['/api/client/account'];
    const check = await checkApiTypes(changed);
    expect(check.upToDate).toBe(false);
    expect(check.actual).toContain("'/api/client/account': {");
    expect(check.expected).not.toContain("'/api/client/account': {");
  });

  it('pass `--check` from the command line', async () => {
    // COMMAND is `node …`: its arguments, on this node.
    const args = [...COMMAND.split(' ').slice(1), '--check'];
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, { cwd: ROOT });
    expect(stderr).toBe('');
    expect(stdout).toBe('');
  }, 60_000);
});
