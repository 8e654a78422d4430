/**
 * Changes to one backup sent at the same moment to two API processes (`serve --role api`, each a
 * process of its own, on one database: the suite's engine, a SQLite file both open, or a scratch
 * database on PostgreSQL or MariaDB). The database decides: of a delete and a restore, one
 * succeeds and the other is refused (409 or 404); of two deletes, one is a 204 and the other a
 * 404, with one `server:backup.delete` entry and one recorded deletion; of a lock and a delete,
 * never both.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAerie, type AerieProcess } from '../support/aerie-process.ts';
import { tarGzOf, tempDir, writeTree } from '../support/archives.ts';
import { storedPath } from '../support/backup-formats.ts';
import { serverStatus } from '../support/restores.ts';
import {
  createApiKey,
  createServer,
  createUser,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { freePort, until } from '../support/wait.ts';

const TRIES = 8;

let app: TestApp;
let work: string;
let archive: string;
let token: string;
let owner: Awaited<ReturnType<typeof createUser>>;
const processes: AerieProcess[] = [];
const apis: string[] = [];
const logs = () => processes.map((p, i) => `--- api-${i + 1}\n${p.output().slice(-3000)}`).join('\n');

async function startApi(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const proc = spawnAerie(
    app,
    ['serve', '--role', 'api', '--host', '127.0.0.1', '--port', String(port)],
    env,
  );
  processes.push(proc);
  const base = `http://127.0.0.1:${port}`;
  await until(() => fetch(`${base}/health/live`).then((r) => r.ok), {
    timeoutMs: 60_000,
    what: 'an API process to listen',
    context: logs,
  });
  return base;
}

/** Sends a request to API process `which` (0 or 1). */
function api(which: number, method: string, url: string, body?: unknown): Promise<Response> {
  return fetch(`${apis[which % 2]!}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

function backupRow(id: string) {
  return app.db.kysely.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirst();
}

/** How many entries of `event` name the backup among their subjects. */
async function entriesOf(backupId: string, event: string): Promise<number> {
  const rows = await app.db.kysely
    .selectFrom('activity_logs as l')
    .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
    .select('l.id')
    .where('s.subject_type', '=', 'backup')
    .where('s.subject_id', '=', backupId)
    .where('l.event', '=', event)
    .execute();
  return rows.length;
}

/** Whether the backup's deletion is recorded (what tells `backup reconcile` its archive is garbage). */
async function deletionRecorded(backupId: string): Promise<boolean> {
  const row = await app.db.kysely
    .selectFrom('backup_deletions')
    .select('backup_id')
    .where('backup_id', '=', backupId)
    .executeTakeFirst();
  return row !== undefined;
}

async function restoreJobsOf(backupId: string): Promise<number> {
  const rows = await app.db.kysely
    .selectFrom('jobs')
    .select('payload')
    .where('kind', '=', 'backup.restore')
    .execute();
  return rows.filter((row) => (JSON.parse(row.payload) as { backupId: string }).backupId === backupId).length;
}

const exists = (file: string) =>
  fs.stat(file).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  app = await startTestApp();
  work = await tempDir('aerie-races-');
  await writeTree(path.join(work, 'tree'), { 'server.properties': 'motd=race\n', 'world/level.dat': 'x' });
  archive = await tarGzOf(path.join(work, 'tree'), path.join(work, 'backup.tar.gz'));
  owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  // No worker: a restore that wins stays queued, its server restoring, for the test to see.
  const env = {
    AERIE_APP_KEY: randomBytes(32).toString('hex'),
    AERIE_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  };
  apis.push(...(await Promise.all([startApi(env), startApi(env)])));
  // Each process has authenticated and read once, so the requests below race from a warm start.
  for (const which of [0, 1]) expect((await api(which, 'GET', '/api/client')).status).toBe(200);
}, 120_000);

afterAll(async () => {
  for (const proc of processes) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
  await app?.close();
  if (work) await fs.rm(work, { recursive: true, force: true });
});

describe('changes to one backup sent at once to two API processes', () => {
  it(`never let a delete and a restore both succeed (${TRIES} tries)`, async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < TRIES; i++) {
      // A server each: a restore that wins leaves its server restoring.
      const server = await createServer(app, owner);
      const { uuid } = await importBackup(app, server.id, archive);
      const base = `/api/client/servers/${server.identifier}/backups/${uuid}`;
      const [deleted, restored] = await Promise.all([
        api(i, 'DELETE', base),
        api(i + 1, 'POST', `${base}/restore`, { truncate: false }),
      ]);
      const statuses = `delete ${deleted.status}, restore ${restored.status}`;
      outcomes.push(statuses);
      if (deleted.status === 204) {
        expect([404, 409], statuses).toContain(restored.status);
        expect(await backupRow(uuid)).toBeUndefined();
        expect(await exists(storedPath(app, server.id, uuid, 'snapshot'))).toBe(false);
        expect(await restoreJobsOf(uuid)).toBe(0);
        expect(await serverStatus(app, server.id)).toBeNull();
        expect(await entriesOf(uuid, 'server:backup.delete')).toBe(1);
        expect(await deletionRecorded(uuid)).toBe(true);
        expect(await entriesOf(uuid, 'server:backup.restore')).toBe(0);
      } else {
        expect(restored.status, statuses).toBe(204);
        expect(deleted.status, statuses).toBe(409);
        expect(await deleted.json()).toMatchObject({
          errors: [{ code: 'ServerStateConflictException', status: '409' }],
        });
        expect(await backupRow(uuid)).toBeDefined();
        expect(await exists(storedPath(app, server.id, uuid, 'snapshot'))).toBe(true);
        expect(await restoreJobsOf(uuid)).toBe(1);
        expect(await serverStatus(app, server.id)).toBe('restoring_backup');
        expect(await entriesOf(uuid, 'server:backup.delete')).toBe(0);
        expect(await deletionRecorded(uuid)).toBe(false);
        expect(await entriesOf(uuid, 'server:backup.restore')).toBe(1);
      }
    }
    // (Which one wins is the race's to decide; that one always does is the point.)
    expect(outcomes).toHaveLength(TRIES);
  }, 180_000);

  it(`let one of two deletes through, with one activity entry (${TRIES} tries)`, async () => {
    const server = await createServer(app, owner);
    for (let i = 0; i < TRIES; i++) {
      const { uuid } = await importBackup(app, server.id, archive);
      const base = `/api/client/servers/${server.identifier}/backups/${uuid}`;
      const responses = await Promise.all([api(i, 'DELETE', base), api(i + 1, 'DELETE', base)]);
      const statuses = responses.map((r) => r.status).sort();
      expect(statuses).toEqual([204, 404]);
      const refused = responses.find((r) => r.status === 404)!;
      expect(await refused.json()).toMatchObject({
        errors: [{ code: 'NotFoundHttpException', status: '404' }],
      });
      expect(await backupRow(uuid)).toBeUndefined();
      expect(await exists(storedPath(app, server.id, uuid, 'snapshot'))).toBe(false);
      expect(await entriesOf(uuid, 'server:backup.delete')).toBe(1);
      expect(await deletionRecorded(uuid)).toBe(true);
    }
  }, 180_000);

  it(`never delete a backup that a lock sent at the same time reports locked (${TRIES} tries)`, async () => {
    const server = await createServer(app, owner);
    for (let i = 0; i < TRIES; i++) {
      const { uuid } = await importBackup(app, server.id, archive);
      const base = `/api/client/servers/${server.identifier}/backups/${uuid}`;
      const [locked, deleted] = await Promise.all([
        api(i, 'POST', `${base}/lock`),
        api(i + 1, 'DELETE', base),
      ]);
      const statuses = `lock ${locked.status}, delete ${deleted.status}`;
      if (locked.status === 200) {
        // Locked first: the delete is refused and the backup stays, locked.
        expect(deleted.status, statuses).toBe(400);
        expect(Number((await backupRow(uuid))?.is_locked)).toBe(1);
        expect(await entriesOf(uuid, 'server:backup.delete')).toBe(0);
        expect(await deletionRecorded(uuid)).toBe(false);
      } else {
        expect([locked.status, deleted.status], statuses).toEqual([404, 204]);
        expect(await backupRow(uuid)).toBeUndefined();
        expect(await deletionRecorded(uuid)).toBe(true);
        expect(await entriesOf(uuid, 'server:backup.lock')).toBe(0);
      }
    }
  }, 180_000);
});
