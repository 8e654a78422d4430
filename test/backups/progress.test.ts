/**
 * The progress a backup or restore job writes onto its backup's row, as every write is made
 * (spied on the repository, so nothing is missed between two reads): phases in order, counts
 * that only grow and end at the totals, writes no closer together than the interval, the
 * backup resource's `progress` null once done, a failed job leaving none, a failing progress
 * write never failing the job, a late write never bringing back progress that was cleared, and a
 * partial restore leaving its totals unknown.
 * Real files and real .tar.gz archives, on the suite's database.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BackupProgress } from '../../src/backups/backup-progress.ts';
import { BackupRepository } from '../../src/backups/backup.repository.ts';
import { bigTarGzOf, tempDir, writeIncompressibleFiles } from '../support/archives.ts';
import { BACKUP_FORMATS, formatEnv } from '../support/backup-formats.ts';
import { postRestore, serverStatus } from '../support/restores.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const MiB = 1024 * 1024;
const INTERVAL_MS = 20;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { AERIE_PROGRESS_INTERVAL_MS: String(INTERVAL_MS) } });
});
afterAll(async () => app.close());
afterEach(() => vi.restoreAllMocks());

interface Write {
  at: number;
  progress: BackupProgress;
  startedAt: string | null;
}

/** Records every progress write (and lets it through), with when it was made. */
function recordWrites(): Write[] {
  // A spy on a spy calls itself without end (and the job writing fails): one recorder at a time.
  vi.restoreAllMocks();
  const writes: Write[] = [];
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with its own `this`
  const original = BackupRepository.prototype.writeProgress;
  vi.spyOn(BackupRepository.prototype, 'writeProgress').mockImplementation(function (
    this: BackupRepository,
    ...args: Parameters<BackupRepository['writeProgress']>
  ) {
    writes.push({ at: performance.now(), progress: { ...args[1] }, startedAt: args[2] });
    return original.apply(this, args);
  });
  return writes;
}

async function serverWithFiles(app: TestApp, files: number) {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token } = await createApiKey(app, owner);
  if (files > 0) await writeIncompressibleFiles(server.volume, files, MiB);
  return { server, token };
}

async function backupRow(app: TestApp, id: string) {
  return app.db.kysely.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function resourceProgress(app: TestApp, token: string, serverId: string, backup: string) {
  const res = await app.http.inject({
    method: 'GET',
    url: `/api/client/servers/${serverId}/backups/${backup}`,
    headers: bearer(token),
  });
  expect(res.statusCode).toBe(200);
  return res.json<{ attributes: { progress: unknown } }>().attributes.progress;
}

/** The phases written, each once, in the order they came. */
function phases(writes: Write[]): string[] {
  return writes.map((w) => w.progress.phase).filter((phase, i, all) => i === 0 || all[i - 1] !== phase);
}

/** Counts never go back; one operation (one start) throughout; the first write starts it. */
function expectSteady(writes: Write[]): void {
  expect(writes[0]!.startedAt).toBeNull();
  for (let i = 1; i < writes.length; i++) {
    const [before, after] = [writes[i - 1]!, writes[i]!];
    expect(after.progress.bytesDone).toBeGreaterThanOrEqual(before.progress.bytesDone);
    expect(after.progress.filesDone).toBeGreaterThanOrEqual(before.progress.filesDone);
    expect(after.progress.startedAt).toBe(before.progress.startedAt);
    expect(after.startedAt).toBe(before.progress.startedAt); // only while the row shows this operation
    // Counts alone are written at most once an interval; a new phase goes at once.
    if (after.progress.phase === before.progress.phase)
      expect(after.at - before.at).toBeGreaterThanOrEqual(INTERVAL_MS - 5);
  }
}

async function archiveOf(files: number): Promise<{ file: string; dir: string }> {
  const dir = await tempDir('aerie-progress-');
  await writeIncompressibleFiles(path.join(dir, 'src', 'world'), files, MiB);
  return { file: await bigTarGzOf(path.join(dir, 'src'), path.join(dir, 'backup.tar.gz')), dir };
}

describe('a restore of an archive backup', () => {
  // Archives imported as they are (AERIE_BACKUP_FORMAT=archive): the counts are the archive's.
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: { ...formatEnv('archive'), AERIE_PROGRESS_INTERVAL_MS: String(INTERVAL_MS) },
    });
  });
  afterAll(async () => app.close());

  it.each([true, false])(
    'writes extracting → %s merging → swapping, the counts ending at the archive size and its files',
    async (truncate) => {
      const { server, token } = await serverWithFiles(app, 0);
      fs.writeFileSync(path.join(server.volume, 'kept.txt'), 'live');
      const { file, dir } = await archiveOf(32);
      const { uuid } = await importBackup(app, server.id, file);
      const writes = recordWrites();
      expect((await postRestore(app, token, server.id, uuid, { truncate })).statusCode).toBe(204);
      expect(await drainJobs(app)).toBe(1);

      expect(phases(writes)).toEqual(
        truncate ? ['extracting', 'swapping'] : ['extracting', 'merging', 'swapping'],
      );
      expectSteady(writes);
      const size = fs.statSync(file).size;
      for (const { progress } of writes) {
        expect(progress).toMatchObject({ operation: 'restore', bytesTotal: size, filesTotal: 32 });
      }
      expect(writes.filter((w) => w.progress.phase === 'extracting').length).toBeGreaterThanOrEqual(2);
      // By the time the tree is swapped in, the whole archive has been read and every file written.
      expect(writes.at(-1)!.progress).toMatchObject({ phase: 'swapping', bytesDone: size, filesDone: 32 });

      expect(await serverStatus(app, server.id)).toBeNull();
      expect((await backupRow(app, uuid)).progress_operation).toBeNull();
      expect(await resourceProgress(app, token, server.id, uuid)).toBeNull();
      expect(fs.existsSync(path.join(server.volume, 'kept.txt'))).toBe(!truncate);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  );

  it('leaves no progress when it fails (an archive that does not match its checksum)', async () => {
    const { server, token } = await serverWithFiles(app, 0);
    const { file, dir } = await archiveOf(4);
    const { uuid } = await importBackup(app, server.id, file);
    // The stored archive is replaced by another of the same size: extraction runs, then fails.
    const stored = path.join(app.config.backupsDir, server.id, `${uuid}.tar.gz`);
    const other = await archiveOf(4);
    fs.copyFileSync(other.file, stored);
    const writes = recordWrites();
    expect((await postRestore(app, token, server.id, uuid, { truncate: true })).statusCode).toBe(204);
    await drainJobs(app);

    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect((await backupRow(app, uuid)).progress_operation).toBeNull();
    expect(await resourceProgress(app, token, server.id, uuid)).toBeNull();
    expect(await serverStatus(app, server.id)).toBeNull();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(other.dir, { recursive: true, force: true });
  });
});

describe.each(BACKUP_FORMATS)('a %s backup', (format) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: { ...formatEnv(format), AERIE_PROGRESS_INTERVAL_MS: String(INTERVAL_MS) },
    });
  });
  afterAll(async () => app.close());

  it('writes archiving with growing counts, then its outcome with no progress; a restore of it knows its files', async () => {
    const { server, token } = await serverWithFiles(app, 16);
    const writes = recordWrites();
    const res = await app.http.inject({
      method: 'POST',
      url: `/api/client/servers/${server.id}/backups`,
      headers: bearer(token),
      payload: { name: 'counted' },
    });
    const uuid = res.json<{ attributes: { uuid: string } }>().attributes.uuid;
    expect(await drainJobs(app)).toBe(1);

    expect(phases(writes)).toEqual(['archiving']); // a local backup has no upload to finish
    expectSteady(writes);
    expect(writes.length).toBeGreaterThanOrEqual(2);
    for (const { progress } of writes) {
      expect(progress).toMatchObject({ operation: 'backup', bytesTotal: null, filesTotal: null });
    }
    const row = await backupRow(app, uuid);
    expect(writes.at(-1)!.progress.bytesDone).toBeLessThanOrEqual(Number(row.bytes));
    expect(row).toMatchObject({ is_successful: 1, progress_operation: null, progress_started_at: null });
    expect(Number(row.files)).toBe(16);
    expect(await resourceProgress(app, token, server.id, uuid)).toBeNull();

    const restoreWrites = recordWrites();
    expect((await postRestore(app, token, server.id, uuid, { truncate: true })).statusCode).toBe(204);
    await drainJobs(app);
    expect(restoreWrites[0]!.progress).toMatchObject({ filesTotal: 16, bytesTotal: Number(row.bytes) });

    // A restore of one file writes some of the backup: its totals are unknown, not the backup's.
    expect(await serverStatus(app, server.id)).toBeNull(); // the restore finished
    const partialWrites = recordWrites();
    const partial = await postRestore(app, token, server.id, uuid, { files: ['/chunk-0003.bin'] });
    expect(partial.statusCode, partial.body).toBe(204);
    await drainJobs(app);
    expect(partialWrites.length).toBeGreaterThan(0);
    expect(partialWrites[0]!.progress).toMatchObject({
      operation: 'restore',
      filesTotal: null,
      bytesTotal: null,
    });
  });

  it('goes on when progress cannot be written, and fails cleanly when the volume is gone', async () => {
    const { server, token } = await serverWithFiles(app, 4);
    vi.spyOn(BackupRepository.prototype, 'writeProgress').mockRejectedValue(
      new Error('the database is away'),
    );
    const made = await app.http.inject({
      method: 'POST',
      url: `/api/client/servers/${server.id}/backups`,
      headers: bearer(token),
      payload: { name: 'unwatched' },
    });
    const uuid = made.json<{ attributes: { uuid: string } }>().attributes.uuid;
    await drainJobs(app);
    expect(await backupRow(app, uuid)).toMatchObject({ is_successful: 1, progress_operation: null });
    vi.restoreAllMocks();

    fs.rmSync(server.volume, { recursive: true, force: true });
    const failing = await app.http.inject({
      method: 'POST',
      url: `/api/client/servers/${server.id}/backups`,
      headers: bearer(token),
      payload: { name: 'no volume' },
    });
    const failed = failing.json<{ attributes: { uuid: string } }>().attributes.uuid;
    for (let i = 0; i < 3; i++) await drainRetrying(app);
    const row = await backupRow(app, failed);
    expect(row.completed_at).not.toBeNull();
    expect(row).toMatchObject({ is_successful: 0, progress_operation: null });
  });
});

describe('a late write', () => {
  it('never brings back progress once the operation was cleared or started over', async () => {
    const { server } = await serverWithFiles(app, 0);
    const { file, dir } = await archiveOf(1);
    const { uuid } = await importBackup(app, server.id, file);
    const backups = new BackupRepository(app.db.kysely);
    const ref = { id: uuid, serverId: server.id };
    const progress: BackupProgress = {
      operation: 'restore',
      phase: 'extracting',
      bytesDone: 1,
      bytesTotal: 10,
      filesDone: 0,
      filesTotal: 1,
      startedAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:01.000Z',
    };
    expect(await backups.writeProgress(ref, progress, null)).toBe(true);
    expect(await backups.writeProgress(ref, { ...progress, bytesDone: 5 }, progress.startedAt)).toBe(true);
    await backups.clearProgress(ref, progress.startedAt);
    expect(await backups.writeProgress(ref, { ...progress, bytesDone: 9 }, progress.startedAt)).toBe(false);
    expect((await backupRow(app, uuid)).progress_operation).toBeNull();

    // Another attempt started over: the first one's writes and clears leave it alone.
    const again = {
      ...progress,
      startedAt: '2026-01-01T00:01:00.000Z',
      updatedAt: '2026-01-01T00:01:00.000Z',
    };
    expect(await backups.writeProgress(ref, again, null)).toBe(true);
    expect(await backups.writeProgress(ref, { ...progress, bytesDone: 9 }, progress.startedAt)).toBe(false);
    await backups.clearProgress(ref, progress.startedAt);
    const row = await backupRow(app, uuid);
    expect(row).toMatchObject({ progress_operation: 'restore', progress_phase: 'extracting' });
    expect(Number(row.progress_bytes_done)).toBe(1);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('an archive backup to S3', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => s3.close());

  it('writes uploading once every byte is written and the upload is finishing', async () => {
    const onS3 = await startTestApp({
      env: {
        ...s3.archiveEnv(),
        AERIE_S3_PART_SIZE_MB: '5',
        AERIE_PROGRESS_INTERVAL_MS: String(INTERVAL_MS),
      },
    });
    try {
      const { server, token } = await serverWithFiles(onS3, 12);
      const writes = recordWrites();
      const res = await onS3.http.inject({
        method: 'POST',
        url: `/api/client/servers/${server.id}/backups`,
        headers: bearer(token),
        payload: { name: 'to the store' },
      });
      const uuid = res.json<{ attributes: { uuid: string } }>().attributes.uuid;
      expect(await drainJobs(onS3)).toBe(1);
      expect(phases(writes)).toEqual(['archiving', 'uploading']);
      expectSteady(writes);
      const row = await backupRow(onS3, uuid);
      expect(row).toMatchObject({ is_successful: 1, disk: 's3', progress_operation: null });
      // When the upload starts finishing, every byte of the archive has been written to it.
      const uploading = writes.find((w) => w.progress.phase === 'uploading')!;
      expect(uploading.progress.bytesDone).toBe(Number(row.bytes));
      expect(uploading.progress.filesDone).toBe(12);
    } finally {
      await onS3.close();
    }
  });
});

/** Runs whatever job is due, moving past the retry delay of a failed attempt. */
async function drainRetrying(target: TestApp): Promise<void> {
  await target.db.kysely
    .updateTable('jobs')
    .set({ run_at: '2000-01-01T00:00:00.000Z' })
    .where('state', '=', 'queued')
    .execute();
  await drainJobs(target);
}
