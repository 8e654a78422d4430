/**
 * Deleting several backups in one request (`POST …/backups/delete`): each checked as a single
 * delete is, those refused listed with that delete's error, one activity entry per backup deleted.
 */
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupRows, serverActivity, serverWithLimit } from '../support/automatic-backups.ts';
import { BACKUP_FORMATS, formatEnv, isStored } from '../support/backup-formats.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

interface BulkResult {
  object: string;
  attributes: {
    deleted: string[];
    refused: { uuid: string; status: string; code: string; detail: string }[];
  };
}

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

/** A server with `count` finished backups made by hand, the last `locked` of them locked. */
async function serverWithBackups(count: number, locked = 0, on: TestApp = app) {
  const made = await serverWithLimit(on, 20);
  const uuids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const res = await on.http.inject({
      method: 'POST',
      url: made.base,
      headers: bearer(made.token),
      payload: { name: `backup ${i}`, is_locked: i >= count - locked },
    });
    expect(res.statusCode, res.body).toBe(200);
    uuids.push(res.json<{ attributes: { uuid: string } }>().attributes.uuid);
  }
  await drainJobs(on);
  const bulk = (token: string, payload: object): Promise<LightMyRequestResponse> =>
    on.http.inject({ method: 'POST', url: `${made.base}/delete`, headers: bearer(token), payload });
  return { ...made, uuids, bulk };
}

describe.each(BACKUP_FORMATS)('bulk delete of %s backups', (format) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: formatEnv(format) });
  });
  afterAll(async () => app.close());

  it('deletes the deletable, and lists the locked, the unknown and another server’s as refused', async () => {
    const { server, token, owner, uuids, bulk } = await serverWithBackups(3, 1, app);
    const [first, second, locked] = uuids as [string, string, string];
    const other = await serverWithBackups(1, 0, app);
    for (const uuid of uuids) expect(isStored(app, server.id, uuid, format)).toBe(true);
    expect(isStored(app, other.server.id, other.uuids[0]!, format)).toBe(true);
    const unknown = randomUUID();

    const res = await bulk(token, {
      backups: [first, locked, unknown, other.uuids[0], second.toUpperCase(), first, 'not-a-uuid'],
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<BulkResult>();
    expect(body.object).toBe('backup_bulk_delete');
    expect(body.attributes.deleted).toEqual([first, second]);
    const notFound = {
      status: '404',
      code: 'NotFoundHttpException',
      detail: 'The requested resource could not be found on the server.',
    };
    expect(body.attributes.refused).toEqual([
      {
        uuid: locked,
        status: '400',
        code: 'DisplayException',
        detail: 'Cannot delete a backup that is marked as locked.',
      },
      { uuid: unknown, ...notFound },
      { uuid: other.uuids[0], ...notFound },
      { uuid: 'not-a-uuid', ...notFound },
    ]);

    expect((await backupRows(app, server.id)).map((r) => r.id)).toEqual([locked]);
    expect(isStored(app, server.id, first, format)).toBe(false);
    expect(isStored(app, server.id, second, format)).toBe(false);
    expect(isStored(app, server.id, locked, format)).toBe(true);
    // The other server's backup is untouched.
    expect(await backupRows(app, other.server.id)).toHaveLength(1);
    expect(isStored(app, other.server.id, other.uuids[0]!, format)).toBe(true);

    const deletions = (await serverActivity(app, server.id)).filter(
      (e) => e.event === 'server:backup.delete',
    );
    expect(deletions.map((e) => [e.actorId, e.properties])).toEqual([
      [owner.id, { name: 'backup 0' }],
      [owner.id, { name: 'backup 1' }],
    ]);
    expect(deletions[0]?.batch).toBe(deletions[1]?.batch);
    expect(
      (await serverActivity(app, other.server.id)).filter((e) => e.event === 'server:backup.delete'),
    ).toEqual([]);
  });
});

describe('bulk delete', () => {
  it('refuses a backup still being made with 409, as a single delete does', async () => {
    const { token, base, uuids, bulk } = await serverWithBackups(1);
    const started = await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} });
    const running = started.json<{ attributes: { uuid: string } }>().attributes.uuid;
    const res = await bulk(token, { backups: [running, uuids[0]] });
    expect(res.json<BulkResult>().attributes).toEqual({
      deleted: [uuids[0]],
      refused: [
        {
          uuid: running,
          status: '409',
          code: 'ServerStateConflictException',
          detail: 'This backup is still being made; it can be deleted once it is done.',
        },
      ],
    });
    await drainJobs(app);
  });

  it('needs backup.delete: a subuser without it gets 403 and nothing is deleted', async () => {
    const { server, uuids, bulk } = await serverWithBackups(1);
    const reader = await createUser(app);
    await addSubuser(app, server.id, reader, ['backup.read', 'backup.create', 'backup.download']);
    const { token } = await createApiKey(app, reader);
    expectError(
      await bulk(token, { backups: uuids }),
      403,
      'AccessDeniedHttpException',
      'This action is unauthorized.',
    );
    expect(await backupRows(app, server.id)).toHaveLength(1);

    const deleter = await createUser(app);
    await addSubuser(app, server.id, deleter, ['backup.delete']);
    const allowed = await createApiKey(app, deleter);
    expect((await bulk(allowed.token, { backups: uuids })).json<BulkResult>().attributes.deleted).toEqual(
      uuids,
    );

    // Someone with no access to the server does not learn it exists.
    const stranger = await createApiKey(app, await createUser(app));
    expect((await bulk(stranger.token, { backups: uuids })).statusCode).toBe(404);
  });

  it.each<[string, object, Record<string, string>]>([
    ['an empty list', { backups: [] }, { backups: 'min' }],
    ['more than 100', { backups: Array.from({ length: 101 }, () => randomUUID()) }, { backups: 'max' }],
    ['no list', {}, { backups: 'required' }],
    ['a number in the list', { backups: [1] }, { 'backups.0': 'string' }],
  ])('refuses %s in the validation envelope', async (_, payload, fields) => {
    const { server, token, bulk } = await serverWithBackups(1);
    expectValidation(await bulk(token, payload), fields);
    expect(await backupRows(app, server.id)).toHaveLength(1);
  });

  it('takes 100 at once', async () => {
    const { server, token, uuids, bulk } = await serverWithBackups(2);
    const names = [...uuids, ...Array.from({ length: 98 }, () => randomUUID())];
    const res = await bulk(token, { backups: names });
    expect(res.statusCode).toBe(200);
    expect(res.json<BulkResult>().attributes.deleted).toEqual(uuids);
    expect(res.json<BulkResult>().attributes.refused).toHaveLength(98);
    expect(await backupRows(app, server.id)).toHaveLength(0);
  });
});
