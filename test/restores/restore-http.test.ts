/**
 * POST /api/client/servers/{server}/backups/{backup}/restore — the answer, in the order the checks
 * are promised (404 visibility, 404 backup, 409 state, 403 permission, 422 body, 400 backup), and
 * what a queued restore leaves behind: the server's state, one job, one audit entry.
 */
import type { ServerStatus } from '../../src/servers/server.table.ts';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../src/users/user.ts';
import { expectError } from '../support/expect-error.ts';
import { aerieArgv } from '../support/aerie-process.ts';
import { backupOf } from '../support/archives.ts';
import {
  activityOfServer,
  postRestore,
  restoreJobsOf,
  serverStatus,
  setServerStatus,
} from '../support/restores.ts';
import { freePort, untilListening } from '../support/wait.ts';
import {
  addSubuser,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

const NOT_RESTORABLE = 'This backup cannot be restored at this time: not completed or failed.';
const BUSY: Partial<Record<ServerStatus, string>> = {
  installing: 'This server has not yet completed its installation process, please try again later.',
  suspended: 'This server is currently suspended and the functionality requested is unavailable.',
  restoring_backup: 'This server is currently restoring from a backup, please try again later.',
  transferring: 'This server is currently being transferred to a new machine, please try again later.',
};

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type Role = 'owner' | 'admin' | 'stranger' | 'reader' | 'restorer';

let app: TestApp;
let archive: string;
/** reader: a subuser with backup.read only; restorer: a subuser with backup.restore. */
const users = {} as Record<Role, { user: User; token: string }>;

beforeAll(async () => {
  // Archive backups, and no undo backup by default (this file is about the request and its job;
  // the undo backup is tested in test/backups/snapshot-backups.test.ts).
  app = await startTestApp({ env: { AERIE_BACKUP_FORMAT: 'archive', AERIE_RESTORE_UNDO_BACKUP: 'false' } });
  for (const [role, admin] of [
    ['owner', false],
    ['admin', true],
    ['stranger', false],
    ['reader', false],
    ['restorer', false],
  ] as const) {
    const user = await createUser(app, { admin });
    users[role] = { user, token: (await createApiKey(app, user)).token };
  }
  ({ archive } = await backupOf({ 'server.properties': 'motd=hello\n', 'world/level.dat': 'level' }));
});

afterAll(async () => {
  await app.close();
});

/** A server of the owner, with both subusers and one good backup named nightly. */
async function fixture() {
  const server = await createServer(app, users.owner.user);
  await addSubuser(app, server.id, users.reader.user, ['backup.read', 'backup.download']);
  await addSubuser(app, server.id, users.restorer.user, ['backup.restore']);
  const backup = await importBackup(app, server.id, archive, 'nightly');
  return { server, backup: backup.uuid };
}

const as = (role: Role, server: string, backup: string, body?: unknown) =>
  postRestore(app, users[role].token, server, backup, body);
const is404 = (res: LightMyRequestResponse) =>
  expectError(res, 404, 'NotFoundHttpException', 'The requested resource could not be found on the server.');
const is403 = (res: LightMyRequestResponse) =>
  expectError(res, 403, 'AccessDeniedHttpException', 'This action is unauthorized.');
const is409 = (res: LightMyRequestResponse, status: ServerStatus) =>
  expectError(res, 409, 'ServerStateConflictException', BUSY[status] ?? '');

/** A refused request queues nothing, records nothing and leaves the server as it was. */
async function expectNothingQueued(serverId: string, status: string | null = null): Promise<void> {
  expect(await restoreJobsOf(app, serverId)).toEqual([]);
  expect(await activityOfServer(app, serverId)).toEqual([]);
  expect(await serverStatus(app, serverId)).toBe(status);
}

function expectTruncateInvalid(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(422);
  const { errors } = res.json<{
    errors: { code: string; status: string; meta?: { source_field: string } }[];
  }>();
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({
    code: 'ValidationException',
    status: '422',
    meta: { source_field: 'truncate' },
  });
}

describe('who may restore', () => {
  it('answers 401 without a token or with a wrong one', async () => {
    const { server, backup } = await fixture();
    expectError(
      await postRestore(app, null, server.id, backup, {}),
      401,
      'NotAuthenticatedException',
      expect.any(String) as never,
    );
    const wrong = await postRestore(app, `ptlc_AAAAAAAAAAA${'b'.repeat(32)}`, server.id, backup, {});
    expect(wrong.statusCode).toBe(401);
    await expectNothingQueued(server.id);
  });

  it('hides a server from a stranger, even with a bad body or a busy server (404)', async () => {
    const { server, backup } = await fixture();
    is404(await as('stranger', server.id, backup, {}));
    is404(await as('stranger', server.identifier, backup, { truncate: 'yes' }));
    await setServerStatus(app, server.id, 'suspended');
    is404(await as('stranger', server.id, backup, {}));
    await expectNothingQueued(server.id, 'suspended');
  });

  it.each([
    ['an unknown UUID', () => randomUUID()],
    ['an unknown identifier', () => 'abcdef12'],
    ['something that is no identifier', () => 'not-a-server'],
    ['a reference too long to be one', () => 'a'.repeat(100)],
  ])('answers 404 for %s', async (_name, reference) => {
    const { backup } = await fixture();
    is404(await as('admin', reference(), backup, {}));
  });

  it('finds the server by UUID (any case) and by its 8-character identifier', async () => {
    const a = await fixture();
    expect((await as('owner', a.server.id.toUpperCase(), a.backup)).statusCode).toBe(204);
    const b = await fixture();
    const res = await as('owner', b.server.identifier, b.backup);
    expect(res.statusCode, res.body).toBe(204);
    expect(await restoreJobsOf(app, b.server.id)).toHaveLength(1);
  });

  it.each(['owner', 'admin', 'restorer'] as const)('lets the %s restore (204)', async (role) => {
    const { server, backup } = await fixture();
    const res = await as(role, server.id, backup, {});
    expect(res.statusCode, res.body).toBe(204);
    const [entry] = await activityOfServer(app, server.id);
    expect(entry?.actor_id).toBe(users[role].user.id);
  });

  it('refuses a subuser without backup.restore (403), before looking at the body or the backup', async () => {
    const { server, backup } = await fixture();
    is403(await as('reader', server.id, backup, { truncate: true }));
    is403(await as('reader', server.id, backup, { truncate: 'yes' }));
    await app.db.kysely.updateTable('backups').set({ is_successful: 0 }).where('id', '=', backup).execute();
    is403(await as('reader', server.id, backup, {}));
    await expectNothingQueued(server.id);
  });
});

describe('which backup', () => {
  it('answers 404 for a backup of another server, even to the owner of both and while busy', async () => {
    const { server } = await fixture();
    const other = await fixture(); // same owner: the backup exists and is visible, but not of this server
    is404(await as('owner', server.id, other.backup, {}));
    is404(await as('reader', server.id, other.backup, {}));
    await setServerStatus(app, server.id, 'installing');
    is404(await as('owner', server.id, other.backup, {}));
    await expectNothingQueued(server.id, 'installing');
    await expectNothingQueued(other.server.id);
  });

  it.each([
    ['an unknown UUID', randomUUID()],
    ['no UUID at all', 'nightly'],
  ])('answers 404 for %s', async (_n, ref) => {
    const { server } = await fixture();
    is404(await as('owner', server.id, ref, {}));
    await expectNothingQueued(server.id);
  });

  it.each([
    ['is_successful = 0', { is_successful: 0 }],
    ['completed_at = null', { completed_at: null }],
  ])('answers 400 for a backup that did not succeed (%s)', async (_n, change) => {
    const { server, backup } = await fixture();
    await app.db.kysely.updateTable('backups').set(change).where('id', '=', backup).execute();
    expectError(
      await as('owner', server.id, backup, { truncate: true }),
      400,
      'BadRequestHttpException',
      NOT_RESTORABLE,
    );
    // The body is checked first.
    expectTruncateInvalid(await as('owner', server.id, backup, { truncate: 'yes' }));
    await expectNothingQueued(server.id);
  });
});

describe('a busy server', () => {
  it.each(Object.keys(BUSY) as ServerStatus[])(
    'answers 409 while %s, before permission, body and backup checks',
    async (status) => {
      const { server, backup } = await fixture();
      await setServerStatus(app, server.id, status);
      is409(await as('owner', server.id, backup, {}), status);
      is409(await as('reader', server.id, backup, {}), status);
      is409(await as('owner', server.identifier, backup, { truncate: 'yes' }), status);
      await app.db.kysely.updateTable('backups').set({ is_successful: 0 }).where('id', '=', backup).execute();
      is409(await as('admin', server.id, backup, {}), status);
      await expectNothingQueued(server.id, status);
    },
  );
});

describe('the body', () => {
  it.each([
    ['{"truncate":"yes"}', '{"truncate":"yes"}'],
    ['{"truncate":1}', '{"truncate":1}'],
    ['{"truncate":"true"}', '{"truncate":"true"}'],
    ['{"truncate":0}', '{"truncate":0}'],
    ['{"truncate":null}', '{"truncate":null}'],
  ])('answers 422 for %s (no coercion)', async (_n, body) => {
    const { server, backup } = await fixture();
    expectTruncateInvalid(await as('restorer', server.id, backup, body));
    await expectNothingQueued(server.id);
  });

  it.each(['[]', '"yes"', 'true', '5'])(
    'answers 422 for a body that is no object (%s), after the other checks',
    async (body) => {
      const { server, backup } = await fixture();
      is404(await as('stranger', server.id, backup, body));
      const res = await as('owner', server.id, backup, body);
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json()).toMatchObject({ errors: [{ code: 'ValidationException', status: '422' }] });
      await expectNothingQueued(server.id);
    },
  );

  it.each([
    ['no body and no Content-Type', undefined],
    ['an empty JSON body', ''],
    ['{}', '{}'],
    ['null', 'null'],
  ])('takes %s as truncate false', async (_n, body) => {
    const { server, backup } = await fixture();
    const res = await as('owner', server.id, backup, body);
    expect(res.statusCode, res.body).toBe(204);
    const [job] = await restoreJobsOf(app, server.id);
    expect(job?.payload.truncate).toBe(false);
    const [entry] = await activityOfServer(app, server.id);
    expect(entry?.properties).toEqual({ name: 'nightly', truncate: false, undo_backup: false });
  });

  it('passes truncate true through to the job and the audit entry', async () => {
    const { server, backup } = await fixture();
    expect((await as('owner', server.id, backup, { truncate: true })).statusCode).toBe(204);
    expect((await restoreJobsOf(app, server.id))[0]?.payload.truncate).toBe(true);
    expect((await activityOfServer(app, server.id))[0]?.properties).toEqual({
      name: 'nightly',
      truncate: true,
      undo_backup: false,
    });
  });
});

describe('a queued restore', () => {
  it('answers 204 with an empty body, marks the server, queues one job and records the request', async () => {
    const { server, backup } = await fixture();
    const res = await as('restorer', server.id, backup, { truncate: false });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers['content-length'] ?? '0').toBe('0');
    expect(await serverStatus(app, server.id)).toBe('restoring_backup');

    const jobs = await restoreJobsOf(app, server.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ state: 'queued', attempts: 0, batch: res.headers['x-request-id'] });
    expect(jobs[0]?.payload).toMatchObject({
      serverId: server.id,
      backupId: backup,
      truncate: false,
      undoBackup: false,
      actorId: users.restorer.user.id,
    });

    const entries = await activityOfServer(app, server.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      event: 'server:backup.restore',
      batch: res.headers['x-request-id'],
      actor_id: users.restorer.user.id,
      properties: { name: 'nightly', truncate: false, undo_backup: false },
      subjects: [`backup:${backup}`, `server:${server.id}`],
    });
    expect(Object.keys(entries[0]?.properties ?? {}).sort()).toEqual(['name', 'truncate', 'undo_backup']);

    // The server is now busy with this very restore.
    is409(await as('owner', server.id, backup, {}), 'restoring_backup');
  });

  it('lets exactly one of two simultaneous requests win', async () => {
    for (let round = 0; round < 5; round++) {
      const { server, backup } = await fixture();
      const answers = await Promise.all([
        as('owner', server.id, backup, { truncate: true }),
        as('restorer', server.identifier, backup, {}),
      ]);
      expect(answers.map((r) => r.statusCode).sort()).toEqual([204, 409]);
      const lost = answers.find((r) => r.statusCode === 409);
      expect(lost?.json()).toEqual({
        errors: [{ code: 'ServerStateConflictException', status: '409', detail: BUSY.restoring_backup }],
      });
      expect(await restoreJobsOf(app, server.id)).toHaveLength(1);
      expect(await activityOfServer(app, server.id)).toHaveLength(1);
    }
  });

  it('runs in the background: the server is idle again and the completion shares the request batch', async () => {
    const { server, backup } = await fixture();
    const res = await as('owner', server.id, backup, { truncate: true });
    expect(res.statusCode).toBe(204);
    expect(await drainJobs(app)).toBeGreaterThanOrEqual(1);

    expect(await serverStatus(app, server.id)).toBeNull();
    const [job] = await restoreJobsOf(app, server.id);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 1, error: null });
    const entries = await activityOfServer(app, server.id);
    expect(entries.map((e) => e.event)).toEqual(['server:backup.restore', 'server:backup.restore-complete']);
    const [request, complete] = entries;
    expect(complete?.batch).toBe(request?.batch);
    expect(complete?.batch).toBe(res.headers['x-request-id']);
    expect(complete).toMatchObject({ actor_id: users.owner.user.id, properties: { name: 'nightly' } });
    expect(complete?.subjects).toEqual([`backup:${backup}`, `server:${server.id}`]);

    // Idle again: another restore may be asked for.
    expect((await as('owner', server.id, backup)).statusCode).toBe(204);
  });
});

describe('two API processes sharing the database', () => {
  // In one process the two requests never interleave between the state check and the claim; two
  // `aerie serve --role api` processes do, and only the conditional claim keeps one of them out.
  it('let exactly one of two simultaneous requests win', { timeout: 90_000 }, async () => {
    const ports = await Promise.all([freePort(), freePort()]);
    const processes = ports.map((port) =>
      spawn(process.execPath, aerieArgv(['serve', '--role', 'api', '--port', String(port)]), {
        cwd: ROOT,
        env: {
          ...process.env,
          AERIE_DATA_DIR: app.dataDir,
          DATABASE_URL: app.config.database.url,
          LOG_LEVEL: 'silent',
        },
        stdio: 'ignore',
      }),
    );
    try {
      await Promise.all(ports.map((port) => untilListening(port)));
      for (let round = 0; round < 8; round++) {
        const { server, backup } = await fixture();
        const statuses = await Promise.all(
          ports.map((port, i) =>
            fetch(`http://127.0.0.1:${port}/api/client/servers/${server.id}/backups/${backup}/restore`, {
              method: 'POST',
              headers: {
                authorization: `Bearer ${(i === 0 ? users.owner : users.restorer).token}`,
                'content-type': 'application/json',
              },
              body: '{"truncate":true}',
            }).then((res) => res.status),
          ),
        );
        expect(statuses.sort()).toEqual([204, 409]);
        expect(await restoreJobsOf(app, server.id)).toHaveLength(1);
        expect(await activityOfServer(app, server.id)).toHaveLength(1);
      }
    } finally {
      for (const child of processes) child.kill('SIGKILL');
    }
  });
});
