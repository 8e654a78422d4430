/**
 * Event streams across processes: the API process holds the stream and runs no jobs; a separate
 * `aerie worker` process (the sources, on the same database and data directory) makes the backup
 * and runs the restore. What the worker writes reaches the stream through the API process's
 * poll. The worker is paused (SIGSTOP) in the middle of a restore, so that the backup resource
 * is read while the restore certainly runs: its `progress` then, and `null` once it is done.
 * Runs on the suite's database (SQLite, or PostgreSQL / MariaDB with AERIE_TEST_DATABASE_URL).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAerie, type AerieProcess } from '../support/aerie-process.ts';
import { bigTarGzOf, tempDir, writeIncompressibleFiles } from '../support/archives.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  type TestApp,
} from '../support/harness.ts';
import {
  openEventStream,
  progressIn,
  startListening,
  type EventStream,
  type StreamEvent,
} from './server-events-client.ts';

const MiB = 1024 * 1024;

let app: TestApp;
let port: number;
let worker: AerieProcess | undefined;
let work: string;
const streams: EventStream[] = [];

beforeAll(async () => {
  // This process answers the API and runs no worker: every job runs in the spawned one.
  ({ app, port } = await startListening({ AERIE_PROGRESS_INTERVAL_MS: '50' }));
  work = await tempDir('aerie-events-processes-');
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  if (worker !== undefined && worker.child.exitCode === null) {
    worker.child.kill('SIGCONT');
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  await app.close();
  fs.rmSync(work, { recursive: true, force: true });
});

async function open(server: string, token: string): Promise<EventStream> {
  const stream = await openEventStream(port, server, bearer(token));
  streams.push(stream);
  expect(stream.status).toBe(200);
  return stream;
}

const progressOf = (backup: string, running: boolean) => (e: StreamEvent) =>
  e.event === 'backup.progress' && e.data.backup === backup && (progressIn(e) !== null) === running;

describe('a job run by another process', () => {
  it(
    'reaches the stream: a restore, paused mid-way and read, then a backup',
    { timeout: 120_000 },
    async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const source = path.join(work, 'source');
      await writeIncompressibleFiles(path.join(source, 'world'), 48, MiB);
      const archive = await bigTarGzOf(source, path.join(work, 'world.tar.gz'));
      // A restore counts up to the backup's size: its files' for a snapshot, the archive's for a .tar.gz.
      const { uuid, bytes: size } = await importBackup(app, server.id, archive, 'world');

      worker = spawnAerie(app, ['worker', '--node', 'local'], { AERIE_PROGRESS_INTERVAL_MS: '20' });
      const stream = await open(server.id, token);
      expect((await stream.next((e) => e.event === 'snapshot')).data).toEqual({ status: null, progress: [] });

      const restore = await app.http.inject({
        method: 'POST',
        url: `/api/client/servers/${server.id}/backups/${uuid}/restore`,
        headers: bearer(token),
        payload: { truncate: true },
      });
      expect(restore.statusCode, restore.body).toBe(204);
      await stream.next((e) => e.event === 'server.status' && e.data.status === 'restoring_backup');

      // The worker's first write shows on the stream; the worker is then held where it is.
      const first = await stream.next(
        progressOf(uuid, true),
        60_000,
        `progress (worker: ${worker.output()})`,
      );
      worker.child.kill('SIGSTOP');
      expect(progressIn(first)).toMatchObject({ operation: 'restore', bytes_total: size, files_total: 48 });

      const read = await app.http.inject({
        method: 'GET',
        url: `/api/client/servers/${server.id}/backups/${uuid}`,
        headers: bearer(token),
      });
      const { progress } = read.json<{ attributes: { progress: Record<string, unknown> | null } }>()
        .attributes;
      expect(progress).toMatchObject({ operation: 'restore', bytes_total: size, files_total: 48 });
      expect(['extracting', 'swapping']).toContain(progress!.phase);
      expect(progress!.bytes_done as number).toBeLessThanOrEqual(size);
      // A stream opened now starts from the running restore.
      const late = await open(server.id, token);
      const snapshot = await late.next((e) => e.event === 'snapshot');
      expect(snapshot.data).toMatchObject({ status: 'restoring_backup', progress: [{ backup: uuid }] });
      expect((snapshot.data.progress as { progress: unknown }[])[0]?.progress).toMatchObject({
        operation: 'restore',
        bytes_total: size,
      });

      worker.child.kill('SIGCONT');
      await stream.next(
        progressOf(uuid, false),
        60_000,
        `the end of the restore (worker: ${worker.output()})`,
      );
      await stream.next((e) => e.event === 'server.status' && e.data.status === null);
      await late.next(progressOf(uuid, false));
      const steps = stream.events.filter(progressOf(uuid, true)).map((e) => progressIn(e)!);
      for (let i = 1; i < steps.length; i++)
        expect(steps[i]!.bytes_done).toBeGreaterThanOrEqual(steps[i - 1]!.bytes_done);
      const after = await app.http.inject({
        method: 'GET',
        url: `/api/client/servers/${server.id}/backups/${uuid}`,
        headers: bearer(token),
      });
      expect(after.json<{ attributes: { progress: unknown } }>().attributes.progress).toBeNull();
      expect(fs.readdirSync(path.join(server.volume, 'world'))).toHaveLength(48);

      // A backup made by the worker: announced by this process, made and finished by the other.
      const made = await app.http.inject({
        method: 'POST',
        url: `/api/client/servers/${server.id}/backups`,
        headers: bearer(token),
        payload: { name: 'from the worker' },
      });
      const backup = made.json<{ attributes: { uuid: string } }>().attributes.uuid;
      const isBackup = (e: StreamEvent) => e.event === 'backup.updated' && e.data.uuid === backup;
      // Announced in progress: the worker may already have started on it by the time it is read.
      const announced = await stream.next(isBackup);
      expect(announced.data).toMatchObject({ is_successful: false, completed_at: null });
      const running = progressIn(announced);
      if (running !== null) expect(running).toMatchObject({ operation: 'backup' });
      const archiving = progressIn(
        await stream.next(progressOf(backup, true), 60_000, 'the backup’s progress'),
      )!;
      expect(archiving).toMatchObject({ operation: 'backup', phase: 'archiving' });
      // It counts against the server's last snapshot: the one the restore took of the empty volume
      // before replacing it (0 bytes), a total raised to what is done rather than shown below it.
      const undo = await app.db.kysely
        .selectFrom('backups')
        .select('bytes')
        .where('server_id', '=', server.id)
        .where('name', 'like', 'Before restoring world%')
        .executeTakeFirstOrThrow();
      expect(Number(undo.bytes)).toBe(0);
      expect(archiving.bytes_total).toBe(archiving.bytes_done);
      await stream.next(progressOf(backup, false), 60_000, 'the end of the backup');
      const done = await stream.next(isBackup, 60_000, 'the finished backup');
      expect(done.data).toMatchObject({ is_successful: true, bytes: 48 * MiB, progress: null });
    },
  );
});
