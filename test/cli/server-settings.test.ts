/**
 * A server's settings from the command line: `server create --backup-limit N`, and
 * `server update --server ID` changing the backup limit, the name, the description and the disk
 * limit (the rest left as they were), seen by the API as `feature_limits.backups`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAerie } from '../support/aerie-process.ts';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

async function aerie(...args: string[]): Promise<{ code: number | null; output: string }> {
  const run = spawnAerie(app, args, { LOG_LEVEL: 'warn' });
  const code = await run.exited;
  return { code, output: run.output() };
}

/** The one JSON record a `--json` command printed. */
function record(run: { code: number | null; output: string }): Record<string, unknown> {
  expect(run.code, run.output).toBe(0);
  return JSON.parse(run.output.trim()) as Record<string, unknown>;
}

const serverRow = (id: string) =>
  app.db.kysely.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('server settings from the command line', () => {
  it('create --backup-limit sets the limit; update changes only what it is given', async () => {
    const owner = await createUser(app);
    const created = record(
      await aerie(
        'server',
        'create',
        '--owner',
        owner.username,
        '--name',
        'survival',
        '--backup-limit',
        '3',
        '--json',
      ),
    );
    const id = String(created.uuid);
    expect(Number((await serverRow(id)).backup_limit)).toBe(3);

    const updated = record(
      await aerie(
        'server',
        'update',
        '--server',
        String(created.identifier),
        '--backup-limit',
        '5',
        '--json',
      ),
    );
    expect(updated).toEqual({
      uuid: id,
      identifier: created.identifier,
      name: 'survival',
      description: '',
      disk_mb: 0,
      backup_limit: 5,
    });

    const renamed = await aerie(
      'server',
      'update',
      '--server',
      id,
      '--name',
      'creative',
      '--description',
      'two\nlines',
      '--disk-mb',
      '2048',
    );
    expect(renamed.code, renamed.output).toBe(0);
    expect(renamed.output).toContain('updated server creative');
    expect(renamed.output).toContain('backup limit: 5');
    const row = await serverRow(id);
    expect([row.name, row.description, Number(row.disk_mb), Number(row.backup_limit)]).toEqual([
      'creative',
      'two\nlines',
      2048,
      5,
    ]);

    // The API reads the limit as Pterodactyl's feature limit.
    const { token } = await createApiKey(app, owner);
    const res = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${id}`,
      headers: bearer(token),
    });
    expect(
      res.json<{ attributes: { feature_limits: { backups: number } } }>().attributes.feature_limits.backups,
    ).toBe(5);
  });

  it('create without --backup-limit keeps the default of 10', async () => {
    const owner = await createUser(app);
    const created = record(
      await aerie('server', 'create', '--owner', owner.username, '--name', 's', '--json'),
    );
    expect(Number((await serverRow(String(created.uuid))).backup_limit)).toBe(10);
  });

  it('refuses what it cannot do, saying why, changing nothing', async () => {
    const owner = await createUser(app);
    const { server } = await app.services.servers.create({ owner: owner.username, name: 'kept' });

    const nothing = await aerie('server', 'update', '--server', server.id);
    expect(nothing.code).toBe(1);
    expect(nothing.output).toContain(
      'aerie: Nothing to change: give a name, a description, a disk limit or a backup limit.',
    );

    const negative = await aerie('server', 'update', '--server', server.id, '--backup-limit', '-1');
    expect(negative.code).toBe(1);
    expect(negative.output).toContain('"-1" is not a whole number');

    const unknown = await aerie('server', 'update', '--server', 'ffffffff', '--backup-limit', '2');
    expect(unknown.code).toBe(1);
    expect(unknown.output).toContain('aerie: No server "ffffffff".');

    const emptyName = await aerie(
      'server',
      'update',
      '--server',
      server.id,
      '--name',
      ' ',
      '--backup-limit',
      '1',
    );
    expect(emptyName.code).toBe(1);
    expect(emptyName.output).toContain('A server name is 1 to 191 characters.');

    const row = await serverRow(server.id);
    expect([row.name, Number(row.backup_limit)]).toEqual(['kept', 10]);
  });
});
