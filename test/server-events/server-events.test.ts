/**
 * `GET /api/client/servers/{server}/events` over a real socket, with real backups and restores
 * (real files, real .tar.gz) run by a worker in the same process: the snapshot, progress as it
 * goes, state changes and outcomes; who may open a stream and what they see; the limit per user;
 * keep-alives; a revoked key or ended session ending the stream; a closed stream freeing what it
 * held; and shutdown not waiting for open streams. Runs on the suite's database (SQLite, or
 * PostgreSQL / MariaDB with AERIE_TEST_DATABASE_URL).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Worker } from '../../src/jobs/worker.ts';
import { ServerEventsRepository } from '../../src/server-events/server-events.repository.ts';
import type { User } from '../../src/users/user.ts';
import { sessionCookieOf } from '../support/session-cookie.ts';
import { bigTarGzOf, tempDir, writeIncompressibleFiles } from '../support/archives.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  type TestApp,
} from '../support/harness.ts';
import {
  openEventStream,
  startListening,
  progressIn,
  type EventStream,
  type ProgressData,
  type StreamEvent,
} from './server-events-client.ts';

const MiB = 1024 * 1024;
const WIRE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

let app: TestApp;
let port: number;
let worker: Worker | undefined;
const opened: EventStream[] = [];

beforeAll(async () => {
  ({ app, port } = await startListening({
    // Progress written (and streams polled) every 20 ms, so that small archives show several steps.
    AERIE_PROGRESS_INTERVAL_MS: '20',
    AERIE_EVENT_STREAMS_PER_USER: '3',
    AERIE_EVENT_STREAM_KEEPALIVE_SECONDS: '1',
  }));
});

afterEach(async () => {
  for (const stream of opened.splice(0)) stream.close();
  await worker?.stop();
  worker = undefined;
  vi.restoreAllMocks();
});

afterAll(async () => app.close());

async function open(server: string, headers: Record<string, string>): Promise<EventStream> {
  const stream = await openEventStream(port, server, headers);
  opened.push(stream);
  return stream;
}

function startWorker(): void {
  worker = app.services.createWorker('events');
  worker.start();
}

/** Asks `probe` until it holds, for at most `timeoutMs`. */
async function eventually(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function owned(options: { files?: number } = {}) {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token, identifier } = await createApiKey(app, owner);
  if (options.files) await writeIncompressibleFiles(server.volume, options.files, MiB);
  return { owner, server, token, identifier, headers: bearer(token) };
}

function api(method: 'GET' | 'POST' | 'DELETE', url: string, token: string, payload?: object) {
  return app.http.inject({
    method,
    url: `/api/client${url}`,
    headers: bearer(token),
    ...(payload ? { payload } : {}),
  });
}

const progressOf = (backup: string) => (e: StreamEvent) =>
  e.event === 'backup.progress' && e.data.backup === backup;
const updateOf = (backup: string) => (e: StreamEvent) =>
  e.event === 'backup.updated' && e.data.uuid === backup;
const statusIs = (status: string | null) => (e: StreamEvent) =>
  e.event === 'server.status' && e.data.status === status;

/** The progress events of one operation on a backup, up to the one that says it has ended. */
async function progressUntilEnd(stream: EventStream, backup: string): Promise<ProgressData[]> {
  const seen: ProgressData[] = [];
  for (;;) {
    const progress = progressIn(await stream.next(progressOf(backup), 30_000, `progress of ${backup}`));
    if (progress === null) return seen;
    seen.push(progress);
  }
}

/** Each step's counts never go back, stay within the totals, and its phases come in `order`. */
function expectSteady(steps: ProgressData[], order: string[]): void {
  for (let i = 1; i < steps.length; i++) {
    const [before, after] = [steps[i - 1]!, steps[i]!];
    expect(after.bytes_done).toBeGreaterThanOrEqual(before.bytes_done);
    expect(after.files_done).toBeGreaterThanOrEqual(before.files_done);
    expect(order.indexOf(after.phase)).toBeGreaterThanOrEqual(order.indexOf(before.phase));
    expect(after.started_at).toBe(before.started_at);
  }
  for (const step of steps) {
    expect(order).toContain(step.phase);
    expect(step.started_at).toMatch(WIRE_TIME);
    expect(step.updated_at).toMatch(WIRE_TIME);
    if (step.bytes_total !== null) expect(step.bytes_done).toBeLessThanOrEqual(step.bytes_total);
    if (step.files_total !== null) expect(step.files_done).toBeLessThanOrEqual(step.files_total);
  }
}

describe('a stream', () => {
  it('is text/event-stream, not stored, and starts with a snapshot', async () => {
    const { server, headers } = await owned();
    const stream = await open(server.identifier, headers);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-store');
    const first = await stream.next();
    expect(first).toMatchObject({ event: 'snapshot', data: { status: null, progress: [] } });
  });

  it('shows a backup made through the API as it is made, then its outcome; the next counts against it', async () => {
    const { server, token, headers } = await owned({ files: 24 });
    const stream = await open(server.id, headers);
    await stream.next((e) => e.event === 'snapshot');

    const made = async (name: string, totals: { bytes: number | null; files: number | null }) => {
      const created = await api('POST', `/servers/${server.id}/backups`, token, { name });
      expect(created.statusCode, created.body).toBe(200);
      const uuid = created.json<{ attributes: { uuid: string } }>().attributes.uuid;
      const announced = await stream.next(updateOf(uuid), 10_000, 'the new backup');
      expect(announced.data).toMatchObject({
        name,
        is_successful: false,
        completed_at: null,
        progress: null,
      });

      startWorker();
      const steps = await progressUntilEnd(stream, uuid);
      await worker?.stop();
      expect(steps.length).toBeGreaterThanOrEqual(2);
      expectSteady(steps, ['archiving', 'uploading']);
      for (const step of steps) {
        expect(step).toMatchObject({
          operation: 'backup',
          phase: 'archiving',
          bytes_total: totals.bytes,
          files_total: totals.files,
        });
      }
      // A snapshot counts the bytes of the files it covers, up to the backup's size.
      expect(steps.at(-1)!.bytes_done).toBeGreaterThan(steps[0]!.bytes_done);
      expect(steps.at(-1)!.bytes_done).toBeLessThanOrEqual(24 * MiB);
      expect(steps.at(-1)!.files_done).toBeLessThanOrEqual(24);

      // The end of the progress comes before the outcome (the same write makes both).
      const done = await stream.next(updateOf(uuid), 10_000, 'the finished backup');
      expect(done.data).toMatchObject({
        is_successful: true,
        format: 'snapshot',
        bytes: 24 * MiB,
        progress: null,
      });
      expect(done.data.completed_at).toMatch(WIRE_TIME);
      const resource = await api('GET', `/servers/${server.id}/backups/${uuid}`, token);
      expect(resource.json<{ attributes: { progress: unknown } }>().attributes.progress).toBeNull();
    };
    // The first snapshot of a server has nothing to count against; the next has the first's totals.
    await made('live', { bytes: null, files: null });
    await made('next', { bytes: 24 * MiB, files: 24 });
  });

  it("shows a restore: the server restoring, progress up to the backup's size, then idle again", async () => {
    const { server, token, headers } = await owned();
    const source = await tempDir('aerie-events-');
    await writeIncompressibleFiles(path.join(source, 'world'), 24, MiB);
    const file = await bigTarGzOf(source, path.join(source, '..', `${path.basename(source)}.tar.gz`));
    const { uuid, bytes } = await importBackup(app, server.id, file, 'world');
    expect(bytes).toBe(24 * MiB); // imported as a snapshot: the size of its files
    const stream = await open(server.id, headers);
    await stream.next((e) => e.event === 'snapshot');

    startWorker();
    const res = await api('POST', `/servers/${server.id}/backups/${uuid}/restore`, token, { truncate: true });
    expect(res.statusCode, res.body).toBe(204);
    await stream.next(statusIs('restoring_backup'), 10_000, 'the server restoring');
    const steps = await progressUntilEnd(stream, uuid);
    expect(steps.length).toBeGreaterThanOrEqual(2);
    expectSteady(steps, ['extracting', 'merging', 'swapping']);
    for (const step of steps) {
      expect(step).toMatchObject({ operation: 'restore', bytes_total: bytes, files_total: 24 });
    }
    expect(steps[0]!.phase).toBe('extracting');
    expect(steps.at(-1)!.bytes_done).toBeGreaterThan(steps[0]!.bytes_done);
    await stream.next(statusIs(null), 10_000, 'the server idle again');
    expect(fs.readdirSync(path.join(server.volume, 'world'))).toHaveLength(24);
    rmQuietly(source, file);
  });

  it('tells of a backup locked, unlocked and deleted', async () => {
    const { server, token, headers } = await owned();
    const archive = await smallArchive();
    const { uuid } = await importBackup(app, server.id, archive);
    const stream = await open(server.id, headers);
    await stream.next((e) => e.event === 'snapshot');

    expect((await api('POST', `/servers/${server.id}/backups/${uuid}/lock`, token)).statusCode).toBe(200);
    expect((await stream.next(updateOf(uuid))).data).toMatchObject({ is_locked: true, progress: null });
    expect((await api('POST', `/servers/${server.id}/backups/${uuid}/lock`, token)).statusCode).toBe(200);
    expect((await stream.next(updateOf(uuid))).data).toMatchObject({ is_locked: false });
    expect((await api('DELETE', `/servers/${server.id}/backups/${uuid}`, token)).statusCode).toBe(204);
    const deleted = await stream.next((e) => e.event === 'backup.deleted');
    expect(deleted.data).toEqual({ backup: uuid });
  });

  it('learns of changes made behind its back (the poll), not only of those this process announces', async () => {
    const { server, token, headers } = await owned();
    const { uuid } = await importBackup(app, server.id, await smallArchive());
    const stream = await open(server.id, headers);
    await stream.next((e) => e.event === 'snapshot');
    // Straight into the database, as another process would: nothing here announces it.
    await app.db.kysely
      .updateTable('backups')
      .set((eb) => ({ is_locked: 1, revision: eb('revision', '+', 1) }))
      .where('id', '=', uuid)
      .execute();
    await app.db.kysely
      .updateTable('servers')
      .set({ status: 'suspended' })
      .where('id', '=', server.id)
      .execute();
    expect((await stream.next(updateOf(uuid))).data).toMatchObject({ is_locked: true });
    await stream.next(statusIs('suspended'));
    expect((await api('GET', `/servers/${server.id}`, token)).statusCode).toBe(200);
  });
});

describe('who may open a stream', () => {
  it('needs credentials (401) and the server (404 for anyone else)', async () => {
    const { server } = await owned();
    const anonymous = await open(server.id, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(await anonymous.body())).toEqual({
      errors: [
        {
          code: 'NotAuthenticatedException',
          status: '401',
          detail: 'You are not authenticated to access this route.',
        },
      ],
    });
    const wrong = await open(server.id, bearer(`ptlc_${'x'.repeat(43)}`));
    expect(wrong.status).toBe(401);

    const stranger = await createUser(app);
    const strangerStream = await open(server.id, bearer((await createApiKey(app, stranger)).token));
    expect(strangerStream.status).toBe(404);
    expect(JSON.parse(await strangerStream.body())).toMatchObject({
      errors: [{ code: 'NotFoundHttpException', status: '404' }],
    });
    const nowhere = await open(
      '00000000-0000-4000-8000-000000000000',
      bearer((await createApiKey(app, stranger)).token),
    );
    expect(nowhere.status).toBe(404);
  });

  it('gives a subuser without backup.read the server status only; with it, the backups too', async () => {
    const { server, token, headers } = await owned();
    const { uuid } = await importBackup(app, server.id, await smallArchive());
    const [blind, reader] = await Promise.all([createUser(app), createUser(app)]);
    await addSubuser(app, server.id, blind, ['activity.read']);
    await addSubuser(app, server.id, reader, ['backup.read']);
    const ownerStream = await open(server.id, headers);
    const blindStream = await open(server.id, bearer((await createApiKey(app, blind)).token));
    const readerStream = await open(server.id, bearer((await createApiKey(app, reader)).token));
    expect(blindStream.status).toBe(200);
    await Promise.all(
      [ownerStream, blindStream, readerStream].map((s) => s.next((e) => e.event === 'snapshot')),
    );

    await api('POST', `/servers/${server.id}/backups/${uuid}/lock`, token);
    await ownerStream.next(updateOf(uuid));
    await readerStream.next(updateOf(uuid));
    // A status change after it: once the blind stream has it, it has had everything before it.
    await app.db.kysely
      .updateTable('servers')
      .set({ status: 'suspended' })
      .where('id', '=', server.id)
      .execute();
    await blindStream.next(statusIs('suspended'));
    await readerStream.next(statusIs('suspended'));
    expect(blindStream.events.map((e) => e.event)).toEqual(['snapshot', 'server.status']);
    expect(blindStream.events[0]!.data).toEqual({ status: null, progress: [] });
  });

  it('ends the stream when its key is deleted or its session ends', async () => {
    const { owner, server, token, identifier } = await owned();
    const other = await createApiKey(app, owner);
    const keyStream = await open(server.id, bearer(token));
    const login = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: owner.username, password: owner.password },
    });
    expect(login.statusCode, login.body).toBe(200);
    const cookie = sessionCookieOf(login);
    const sessionStream = await open(server.id, { cookie });
    await Promise.all([keyStream, sessionStream].map((s) => s.next((e) => e.event === 'snapshot')));

    const deleted = await api('DELETE', `/account/api-keys/${identifier}`, other.token);
    expect(deleted.statusCode).toBe(204);
    await expectEndsWithin(keyStream, 5000);

    const logout = await app.http.inject({ method: 'POST', url: '/auth/logout', headers: { cookie } });
    expect(logout.statusCode).toBe(204);
    await expectEndsWithin(sessionStream, 5000);
  });

  it('ends the stream when the subuser is removed from the server', async () => {
    const { server } = await owned();
    const guest: User = await createUser(app);
    await addSubuser(app, server.id, guest, ['backup.read']);
    const stream = await open(server.id, bearer((await createApiKey(app, guest)).token));
    await stream.next((e) => e.event === 'snapshot');
    await app.db.kysely.deleteFrom('subusers').where('server_id', '=', server.id).execute();
    await expectEndsWithin(stream, 5000);
  });
});

describe('what streams cost', () => {
  it('sends a keep-alive comment every period', async () => {
    const { server, headers } = await owned();
    const stream = await open(server.id, headers);
    await stream.next((e) => e.event === 'snapshot');
    await eventually(() => stream.comments.filter((c) => c === 'keep-alive').length >= 2, 'two keep-alives');
  });

  it('allows a user 3 open streams (then 429), and frees a place when one is closed', async () => {
    const { owner, server, headers } = await owned();
    const streams = await Promise.all([1, 2, 3].map(() => open(server.id, headers)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200]);
    const refused = await open(server.id, headers);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(JSON.parse(await refused.body())).toMatchObject({
      errors: [{ code: 'TooManyRequestsHttpException', status: '429' }],
    });
    // Another key of the same user counts too; another user does not.
    const sameUser = await open(server.id, bearer((await createApiKey(app, owner)).token));
    expect(sameUser.status).toBe(429);
    const admin = await createUser(app, { admin: true });
    expect((await open(server.id, bearer((await createApiKey(app, admin)).token))).status).toBe(200);

    streams[0]!.close();
    let again: EventStream | undefined;
    await eventually(async () => {
      const attempt = await open(server.id, headers);
      if (attempt.status === 200) again = attempt;
      else attempt.close();
      return again !== undefined;
    }, 'a place freed by the closed stream');
  });

  it('reads each watched server once a poll, however many streams watch it, and stops when they close', async () => {
    const events = app.services.serverEvents;
    await eventually(() => events.watchedServers() === 0, 'no server watched');
    const a = await owned();
    const b = await owned();
    const streams = [
      ...(await Promise.all([1, 2, 3].map(() => open(a.server.id, a.headers)))),
      ...(await Promise.all([1, 2, 3].map(() => open(b.server.id, b.headers)))),
    ];
    await Promise.all(streams.map((s) => s.next((e) => e.event === 'snapshot')));
    expect(events.watchedServers()).toBe(2);

    const reads = vi.spyOn(ServerEventsRepository.prototype, 'revisions');
    await eventually(() => reads.mock.calls.length >= 5, 'five polls');
    // Every poll reads both servers in one statement, each once, whatever the number of streams.
    for (const [ids] of reads.mock.calls) expect([...ids].sort()).toEqual([a.server.id, b.server.id].sort());

    for (const stream of streams) stream.close();
    // Once the last stream of a server closes, the server is no longer read.
    await eventually(() => events.watchedServers() === 0, 'every watch ended');
  });

  it('does not hold up closing the app: open streams are ended', async () => {
    const { app: other, port: otherPort } = await startListening({ AERIE_PROGRESS_INTERVAL_MS: '20' });
    try {
      const owner = await createUser(other);
      const server = await createServer(other, owner);
      const { token } = await createApiKey(other, owner);
      const streams = await Promise.all(
        [1, 2].map(() => openEventStream(otherPort, server.id, bearer(token))),
      );
      await Promise.all(streams.map((s) => s.next((e) => e.event === 'snapshot')));
      const started = performance.now();
      await other.http.close();
      expect(performance.now() - started).toBeLessThan(3000);
      await Promise.all(streams.map((s) => s.ended));
      expect(other.services.serverEvents.watchedServers()).toBe(0);
    } finally {
      await other.close();
    }
  });
});

async function expectEndsWithin(stream: EventStream, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const outcome = await Promise.race([stream.ended.then(() => 'ended' as const), late]);
  clearTimeout(timer);
  expect(outcome).toBe('ended');
}

async function smallArchive(): Promise<string> {
  const dir = await tempDir('aerie-events-small-');
  fs.mkdirSync(path.join(dir, 'src'));
  fs.writeFileSync(path.join(dir, 'src', 'server.properties'), 'motd=events\n');
  return bigTarGzOf(path.join(dir, 'src'), path.join(dir, 'small.tar.gz'));
}

function rmQuietly(...paths: string[]): void {
  for (const p of paths) fs.rmSync(p, { recursive: true, force: true });
}
