/**
 * `aerie backup reconcile`, and the retention job that runs it: what the backup stores hold that
 * is provably garbage is removed (archives of deleted backups, whose deletion is recorded, and of
 * failed ones; scratch files and multipart uploads no running backup owns; the readiness probe's),
 * backups nothing makes any more are marked failed, and successful backups whose archive is
 * missing are named. An archive with no row and no recorded deletion is only reported (it may be
 * a backup of a database restored from an older dump), unless `--remove-unknown` is given.
 * Nothing of a backup in progress is touched, however old, nor anything written within the grace
 * period, nor anything under a server the database does not know; a dry run changes nothing.
 * These are archive backups (AERIE_BACKUP_FORMAT=archive): each one a `.tar.gz` in the store.
 */
import {
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ReconcileReport } from '../../src/backups/backup-reconcile.service.ts';
import { BackupRepository } from '../../src/backups/backup.repository.ts';
import { toBackupRow, type Backup } from '../../src/backups/backup.ts';
import { LeaseRepository } from '../../src/ops/lease.repository.ts';
import { RetentionRepository } from '../../src/ops/retention.repository.ts';
import { RetentionService } from '../../src/ops/retention.service.ts';
import { openRuntime } from '../../src/runtime.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { LocalBackupStorage } from '../../src/storage/stores/backup-storage.ts';
import { S3BackupStorage } from '../../src/storage/stores/s3-backup-storage.ts';
import type { User } from '../../src/users/user.ts';
import { spawnAerie } from '../support/aerie-process.ts';
import { tarGzOf, tempDir, writeTree } from '../support/archives.ts';
import { formatEnv } from '../support/backup-formats.ts';
import { activityOfServer } from '../support/restores.ts';
import {
  contextFor,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const HOUR = 3600_000;

let s3: TestS3;
let work: string;
let archive: string;
beforeAll(async () => {
  s3 = await startS3();
  work = await tempDir('aerie-reconcile-');
  await writeTree(path.join(work, 'tree'), { 'server.properties': 'motd=kept\n' });
  archive = await tarGzOf(path.join(work, 'tree'), path.join(work, 'backup.tar.gz'));
});
afterAll(async () => {
  await s3.close();
  await fs.rm(work, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A clock the tests move forward (what reconcile takes for "now"). */
function movableClock() {
  let offsetMs = 0;
  return { clock: () => new Date(Date.now() + offsetMs), move: (ms: number) => (offsetMs += ms) };
}

/** An app making archive backups (in the local store unless `env` says otherwise). */
async function setUp(env: Record<string, string> = {}) {
  const time = movableClock();
  const app = await startTestApp({ env: { ...formatEnv('archive'), ...env }, clock: time.clock });
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  return { app, time, owner, server };
}

/** A backup the API is making: its row in progress, its job queued (no worker runs it here). */
async function backupInProgress(app: TestApp, owner: User, serverId: string): Promise<Backup> {
  const access = await app.services.access.resolve(
    { user: owner, apiKeyId: null, sessionId: null },
    serverId,
  );
  return app.services.backupManagement.create(contextFor(owner), access, { is_locked: false });
}

/** A backup row written as it is, with no job: one a process that died left behind, say. */
async function insertBackup(
  app: TestApp,
  serverId: string,
  state: { createdAt: Date; completedAt: Date | null; isSuccessful: boolean },
): Promise<Backup> {
  const backup: Backup = {
    id: randomUUID(),
    serverId,
    name: `row ${serverId.slice(0, 4)}`,
    ignoredFiles: [],
    disk: 'local',
    sha256: null,
    bytes: 0,
    isSuccessful: state.isSuccessful,
    isLocked: false,
    isAutomatic: false,
    scheduleId: null,
    createdAt: toStoredTime(state.createdAt),
    completedAt: state.completedAt === null ? null : toStoredTime(state.completedAt),
    files: null,
    format: 'archive',
    addedBytes: null,
    progress: null,
  };
  await app.db.kysely.insertInto('backups').values(toBackupRow(backup)).execute();
  return backup;
}

function backupRow(app: TestApp, id: string) {
  return app.db.kysely.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirst();
}

const exists = (file: string) =>
  fs.stat(file).then(
    () => true,
    () => false,
  );

/** Writes a file under the local store, last modified `ageMs` ago. */
async function stored(app: TestApp, relative: string, ageMs: number): Promise<string> {
  const file = path.join(app.config.backupsDir, relative);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, 'leftover bytes');
  const when = new Date(Date.now() - ageMs);
  await fs.utimes(file, when, when);
  return file;
}

const locations = (report: ReconcileReport) => report.removed.map((item) => item.location).sort();

/** The recorded deletions of backups, by backup id. */
async function deletionsRecorded(app: TestApp): Promise<string[]> {
  const rows = await app.db.kysely.selectFrom('backup_deletions').select('backup_id').execute();
  return rows.map((row) => row.backup_id).sort();
}

/** Deletes a backup through the API's service while its store cannot remove the archive. */
async function deleteWhileStoreFails(
  app: TestApp,
  owner: User,
  serverId: string,
  backupId: string,
  store: { delete: LocalBackupStorage['delete'] } = LocalBackupStorage.prototype,
) {
  const access = await app.services.access.resolve(
    { user: owner, apiKeyId: null, sessionId: null },
    serverId,
  );
  const backup = await app.services.backupManagement.find(serverId, backupId);
  const refused = vi.spyOn(store, 'delete').mockRejectedValueOnce(new Error('the store cannot be reached'));
  await app.services.backupManagement.delete(contextFor(owner), access, backup!);
  expect(refused).toHaveBeenCalledOnce();
}

/** A retention run as the worker's, whose warnings the test reads. */
function retentionWithLog(app: TestApp, clock: () => Date) {
  type Warning = { msg: string; count?: number; archives?: string[] };
  const warnings: Warning[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        warnings.push(JSON.parse(line) as Warning);
      done();
    },
  });
  const service = new RetentionService({
    activity: { deleteOlderThan: () => Promise.resolve(0) },
    retention: new RetentionRepository(app.db.kysely),
    leases: new LeaseRepository(app.db.kysely),
    clock,
    logger: pino({ level: 'warn' }, stream),
    activityRetentionDays: 0,
    reconcileStorage: () => app.services.backupReconcile.run(),
  });
  return { service, warnings };
}

describe('reconciling the local store of archive backups', () => {
  it('removes what is garbage, marks stalled backups failed, names missing and unknown archives; a dry run changes nothing', async () => {
    const { app, owner, server } = await setUp();
    try {
      const id = server.id;
      const kept = await importBackup(app, id, archive, 'kept');
      const keptArchive = path.join(app.config.backupsDir, id, `${kept.uuid}.tar.gz`);
      await fs.utimes(keptArchive, new Date(Date.now() - 5 * HOUR), new Date(Date.now() - 5 * HOUR));
      const lost = await importBackup(app, id, archive, 'lost');
      await fs.rm(path.join(app.config.backupsDir, id, `${lost.uuid}.tar.gz`));
      const making = await backupInProgress(app, owner, id);
      const failed = await insertBackup(app, id, {
        createdAt: new Date(Date.now() - 4 * HOUR),
        completedAt: new Date(Date.now() - 4 * HOUR),
        isSuccessful: false,
      });
      const stalled = await insertBackup(app, id, {
        createdAt: new Date(Date.now() - 3 * HOUR),
        completedAt: null,
        isSuccessful: false,
      });
      const orphan = randomUUID();
      const probe = randomUUID();
      const leftovers = [
        `${id}/${orphan}.tar.gz.incoming`, // a scratch file no backup owns
        `${id}/${failed.id}.tar.gz`, // its backup failed
        `${id}/${kept.uuid}.tar.gz.incoming`, // its backup is finished
        `${id}/${stalled.id}.tar.gz.incoming.partial`, // its backup stopped, and is marked failed
        `.ready/${probe}.tar.gz`, // a readiness probe's, cut short
      ];
      for (const relative of leftovers) await stored(app, relative, 2 * HOUR);
      const unknown = `${id}/${randomUUID()}.tar.gz`; // no backup owns it, no deletion is recorded
      const untouched = [
        await stored(app, unknown, 2 * HOUR),
        await stored(app, `${id}/${making.id}.tar.gz.incoming.partial`, 5 * HOUR), // in progress
        await stored(app, `${id}/${randomUUID()}.tar.gz`, 10 * 60_000), // within the grace period
        await stored(app, `${randomUUID()}/${randomUUID()}.tar.gz`, 5 * HOUR), // an unknown server's
        await stored(app, `${id}/notes.txt`, 5 * HOUR), // not a name Aerie writes
        keptArchive,
      ];

      const dry = await app.services.backupReconcile.run({ dryRun: true });
      expect(dry.dryRun).toBe(true);
      expect(locations(dry)).toEqual([...leftovers].sort());
      expect(dry.stalled.map((b) => b.uuid)).toEqual([stalled.id]);
      expect(dry.missing.map((b) => b.uuid)).toEqual([lost.uuid]);
      expect(dry.unknown.map((item) => [item.location, item.reason])).toEqual([[unknown, 'unknown']]);
      expect(dry).toMatchObject({ recent: 1, foreign: 1, errors: [] });
      for (const relative of leftovers)
        expect(await exists(path.join(app.config.backupsDir, relative))).toBe(true);
      expect((await backupRow(app, stalled.id))?.completed_at).toBeNull();
      expect(await activityOfServer(app, id, 'server:backup.fail')).toEqual([]);

      const report = await app.services.backupReconcile.run();
      expect(report.dryRun).toBe(false);
      expect(locations(report)).toEqual(locations(dry));
      const reasons = Object.fromEntries(report.removed.map((item) => [item.backup, item.reason]));
      expect(reasons).toEqual({
        [orphan]: 'no-backup',
        [failed.id]: 'backup-failed',
        [kept.uuid]: 'backup-finished',
        [stalled.id]: 'backup-failed',
        [probe]: 'probe',
      });
      expect(report.unknown.map((item) => item.location)).toEqual([unknown]);
      for (const relative of leftovers)
        expect(await exists(path.join(app.config.backupsDir, relative))).toBe(false);
      for (const file of untouched) expect(await exists(file)).toBe(true);
      // The stalled backup is failed now, and says so in the server's activity; it can be deleted.
      expect(await backupRow(app, stalled.id)).toMatchObject({ completed_at: expect.any(String) as string });
      expect(Number((await backupRow(app, stalled.id))?.is_successful)).toBe(0);
      const failures = await activityOfServer(app, id, 'server:backup.fail');
      expect(failures.map((f) => [f.actor_id, f.properties.name])).toEqual([[null, stalled.name]]);
      // A missing archive is named, never acted on.
      expect(report.missing).toEqual([{ uuid: lost.uuid, server: id, name: 'lost', disk: 'local' }]);
      expect(Number((await backupRow(app, lost.uuid))?.is_successful)).toBe(1);
      // The backup in progress is as it was.
      expect((await backupRow(app, making.id))?.completed_at).toBeNull();

      const again = await app.services.backupReconcile.run();
      expect(again).toMatchObject({ removed: [], stalled: [], recent: 1, foreign: 1 });
      expect(again.missing.map((b) => b.uuid)).toEqual([lost.uuid]);
      expect(again.unknown.map((item) => item.location)).toEqual([unknown]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('runs in the retention job', async () => {
    const { app, time, server } = await setUp();
    try {
      const scratch = await stored(app, `${server.id}/${randomUUID()}.tar.gz.incoming`, 10 * 60_000);
      const runtime = await openRuntime(app.config, { clock: time.clock });
      try {
        // Written ten minutes ago: within the grace period, left for a later run.
        expect((await runtime.ops.retention.runOnce())?.storage).toEqual({
          removed: 0,
          stalled: 0,
          missing: 0,
          unknown: 0,
          errors: 0,
        });
        expect(await exists(scratch)).toBe(true);
        time.move(HOUR);
        expect((await runtime.ops.retention.runOnce())?.storage).toMatchObject({ removed: 1 });
        expect(await exists(scratch)).toBe(false);
      } finally {
        await runtime.close();
      }
    } finally {
      await app.close();
    }
  }, 60_000);

  it('leaves an archive no backup owns and no deletion names to the operator: the retention job only reports it', async () => {
    const { app, time, server } = await setUp();
    try {
      const unknown = await stored(app, `${server.id}/${randomUUID()}.tar.gz`, 2 * HOUR);
      const runtime = await openRuntime(app.config, { clock: time.clock });
      try {
        const report = await runtime.ops.retention.runOnce();
        expect(await exists(unknown)).toBe(true);
        expect(report?.storage).toMatchObject({ removed: 0, unknown: 1 });
        time.move(30 * 24 * HOUR);
        await runtime.ops.retention.runOnce();
        expect(await exists(unknown)).toBe(true);
      } finally {
        await runtime.close();
      }
      const { service, warnings } = retentionWithLog(app, time.clock);
      await service.runOnce();
      expect(await exists(unknown)).toBe(true);
      expect(warnings).toContainEqual(
        expect.objectContaining({
          count: 1,
          archives: [`local:${path.relative(app.config.backupsDir, unknown)}`],
          msg: expect.stringContaining('--remove-unknown') as string,
        }),
      );
    } finally {
      await app.close();
    }
  }, 60_000);

  it('records a deletion whose archive could not be removed; the retention job removes the archive, then the record', async () => {
    const { app, time, owner, server } = await setUp();
    try {
      const { uuid } = await importBackup(app, server.id, archive, 'deleted');
      const file = path.join(app.config.backupsDir, server.id, `${uuid}.tar.gz`);
      await deleteWhileStoreFails(app, owner, server.id, uuid);
      expect(await backupRow(app, uuid)).toBeUndefined();
      expect(await exists(file)).toBe(true);
      expect(await deletionsRecorded(app)).toEqual([uuid]);

      time.move(2 * HOUR);
      const dry = await app.services.backupReconcile.run({ dryRun: true });
      expect(dry.removed.map((item) => [item.backup, item.kind, item.reason])).toEqual([
        [uuid, 'archive', 'backup-deleted'],
      ]);
      expect(dry).toMatchObject({ unknown: [], deletionsForgotten: 1 });
      expect(await deletionsRecorded(app)).toEqual([uuid]);

      const runtime = await openRuntime(app.config, { clock: time.clock });
      try {
        expect((await runtime.ops.retention.runOnce())?.storage).toMatchObject({
          removed: 1,
          unknown: 0,
          errors: 0,
        });
      } finally {
        await runtime.close();
      }
      expect(await exists(file)).toBe(false);
      expect(await deletionsRecorded(app)).toEqual([]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('drops the record of a deletion once nothing of its backup is stored, after the grace period; any record after 30 days', async () => {
    const { app, time, owner, server } = await setUp();
    try {
      const { uuid } = await importBackup(app, server.id, archive, 'deleted');
      const access = await app.services.access.resolve(
        { user: owner, apiKeyId: null, sessionId: null },
        server.id,
      );
      const backup = await app.services.backupManagement.find(server.id, uuid);
      await app.services.backupManagement.delete(contextFor(owner), access, backup!);
      expect(await exists(path.join(app.config.backupsDir, server.id, `${uuid}.tar.gz`))).toBe(false);
      // Of a store this process does not list: nothing says whether its archive is gone.
      const elsewhere = randomUUID();
      await app.db.kysely
        .insertInto('backup_deletions')
        .values({
          backup_id: elsewhere,
          server_id: server.id,
          disk: 's3',
          deleted_at: toStoredTime(new Date()),
        })
        .execute();

      // Deleted within the grace period: what it stored might not have been listed yet.
      expect((await app.services.backupReconcile.run()).deletionsForgotten).toBe(0);
      expect(await deletionsRecorded(app)).toEqual([uuid, elsewhere].sort());
      time.move(2 * HOUR);
      expect((await app.services.backupReconcile.run()).deletionsForgotten).toBe(1);
      expect(await deletionsRecorded(app)).toEqual([elsewhere]);
      time.move(31 * 24 * HOUR);
      expect((await app.services.backupReconcile.run({ dryRun: true })).deletionsForgotten).toBe(1);
      expect(await deletionsRecorded(app)).toEqual([elsewhere]);
      expect((await app.services.backupReconcile.run()).deletionsForgotten).toBe(1);
      expect(await deletionsRecorded(app)).toEqual([]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('keeps every archive of a database restored from an older dump across retention runs', async () => {
    const { app, time, owner, server } = await setUp();
    try {
      const id = server.id;
      const archiveOf = (backupId: string) => path.join(app.config.backupsDir, id, `${backupId}.tar.gz`);
      // Before the dump: one backup kept, one deleted while its store failed (its deletion is in the dump).
      const before = await importBackup(app, id, archive, 'before the dump');
      const deleted = await importBackup(app, id, archive, 'deleted before the dump');
      await deleteWhileStoreFails(app, owner, id, deleted.uuid);
      // Made after the dump: the restored database has no row for them, and no deletion.
      const since = [
        await importBackup(app, id, archive, 'since the dump'),
        await importBackup(app, id, archive, 'since the dump, too'),
      ].map((b) => b.uuid);
      await app.db.kysely.deleteFrom('backups').where('id', 'in', since).execute();

      time.move(2 * HOUR);
      const runtime = await openRuntime(app.config, { clock: time.clock });
      try {
        for (let run = 0; run < 2; run++) {
          const report = await runtime.ops.retention.runOnce();
          for (const backupId of since) expect(await exists(archiveOf(backupId))).toBe(true);
          expect(report?.storage).toMatchObject({ unknown: 2, missing: 0, errors: 0 });
        }
      } finally {
        await runtime.close();
      }
      expect(await exists(archiveOf(before.uuid))).toBe(true);
      expect(await exists(archiveOf(deleted.uuid))).toBe(false);
      const report = await app.services.backupReconcile.run({ dryRun: true });
      expect(report.unknown.map((item) => item.backup).sort()).toEqual([...since].sort());
    } finally {
      await app.close();
    }
  }, 60_000);

  it('records the deletion of a backup the command line could not finish when its archive could not be removed', async () => {
    const { app, server } = await setUp();
    try {
      const files = async () => (await fs.readdir(path.join(app.config.backupsDir, server.id))).sort();
      const rows = () => app.db.kysely.selectFrom('backups').select('id').execute();
      const failing = () =>
        vi
          .spyOn(BackupRepository.prototype, 'complete')
          .mockRejectedValueOnce(new Error('the database went away'));

      // The archive removed: nothing is left for a record to name.
      failing();
      await expect(importBackup(app, server.id, archive)).rejects.toThrow('the database went away');
      expect(await rows()).toEqual([]);
      expect(await files()).toEqual([]);
      expect(await deletionsRecorded(app)).toEqual([]);

      // The archive left: the deletion is recorded with the row's delete.
      failing();
      vi.spyOn(LocalBackupStorage.prototype, 'delete').mockRejectedValueOnce(
        new Error('the store cannot be reached'),
      );
      await expect(importBackup(app, server.id, archive)).rejects.toThrow('the database went away');
      expect(await rows()).toEqual([]);
      const left = await files();
      expect(left).toHaveLength(1);
      expect(await deletionsRecorded(app)).toEqual([left[0]!.replace('.tar.gz', '')]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('is `aerie backup reconcile`: --dry-run, --json, --remove-unknown, and a non-zero exit while an archive is missing or unknown', async () => {
    const { app, server } = await setUp();
    try {
      const orphan = await stored(app, `${server.id}/${randomUUID()}.tar.gz`, 2 * HOUR);
      const lost = await importBackup(app, server.id, archive, 'lost');
      await fs.rm(path.join(app.config.backupsDir, server.id, `${lost.uuid}.tar.gz`));
      const run = async (...args: string[]) => {
        const proc = spawnAerie(app, ['backup', 'reconcile', ...args], {
          ...formatEnv('archive'),
          LOG_LEVEL: 'error',
        });
        const code = await proc.exited;
        return { code, output: proc.output() };
      };

      const dry = await run('--dry-run', '--json');
      expect(dry.code, dry.output).toBe(1);
      const record = JSON.parse(dry.output) as Record<string, unknown>;
      expect(record).toMatchObject({
        dry_run: true,
        grace_minutes: 60,
        disks: ['local'],
        removed: [],
        unknown: [{ disk: 'local', kind: 'archive', server: server.id, reason: 'unknown' }],
        missing: [{ uuid: lost.uuid, server: server.id, name: 'lost', disk: 'local' }],
        stalled: [],
        errors: [],
      });
      expect(await exists(orphan)).toBe(true);

      // Without the flag the unknown archive is named, and left.
      const kept = await run();
      expect(kept.code, kept.output).toBe(1);
      expect(kept.output).toContain('1 archive(s) left alone');
      expect(kept.output).toContain('--remove-unknown');
      expect(kept.output).toContain(`lost (${lost.uuid})`);
      expect(await exists(orphan)).toBe(true);

      const dryRemove = JSON.parse((await run('--dry-run', '--remove-unknown', '--json')).output) as Record<
        string,
        unknown
      >;
      expect(dryRemove).toMatchObject({ removed: [{ reason: 'unknown' }], unknown: [] });
      expect(await exists(orphan)).toBe(true);

      const done = await run('--remove-unknown');
      expect(done.code, done.output).toBe(1); // the missing archive is still named
      expect(done.output).toContain('1 leftover(s) removed');
      expect(await exists(orphan)).toBe(false);
    } finally {
      await app.close();
    }
  }, 60_000);
});

describe('reconciling an S3 store of archive backups', () => {
  async function openUpload(key: string): Promise<string> {
    const { UploadId } = await s3.client.send(
      new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: key }),
    );
    await s3.client.send(
      new UploadPartCommand({
        Bucket: s3.bucket,
        Key: key,
        UploadId,
        PartNumber: 1,
        Body: Buffer.alloc(4096, 1),
      }),
    );
    return UploadId!;
  }

  it('removes the objects of deleted backups and aborts stale uploads, never those of a backup in progress; names unknown objects', async () => {
    const { app, time, owner, server } = await setUp(s3.archiveEnv());
    try {
      const id = server.id;
      const kept = await app.services.backupManagement.createNow(id, 'kept');
      const deleted = await app.services.backupManagement.createNow(id, 'deleted');
      const deletedKey = `${id}/${deleted.uuid}.tar.gz`;
      await deleteWhileStoreFails(app, owner, id, deleted.uuid, S3BackupStorage.prototype);
      expect(await s3.exists(deletedKey)).toBe(true);
      const lost = await app.services.backupManagement.createNow(id, 'lost');
      await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: `${id}/${lost.uuid}.tar.gz` }));
      const making = await backupInProgress(app, owner, id);
      const orphanKey = `${id}/${randomUUID()}.tar.gz`;
      await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: orphanKey, Body: 'orphan' }));
      const foreignKey = `${randomUUID()}/${randomUUID()}.tar.gz`;
      await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: foreignKey, Body: 'theirs' }));
      // Left by attempts killed mid-upload: one of a backup deleted since, one of a finished
      // backup, and one of the backup still being made.
      const goneKey = `${id}/${randomUUID()}.tar.gz`;
      const gone = await openUpload(goneKey);
      const finished = await openUpload(`${id}/${kept.uuid}.tar.gz`);
      const inProgress = await openUpload(`${id}/${making.id}.tar.gz`);

      // Just written: all within the grace period.
      const early = await app.services.backupReconcile.run();
      expect(early).toMatchObject({ removed: [], unknown: [], stalled: [], errors: [] });
      expect(early.recent).toBe(4);
      time.move(2 * HOUR);

      const dry = await app.services.backupReconcile.run({ dryRun: true });
      expect(dry.disks).toEqual(['local', 's3']);
      expect(locations(dry)).toEqual([deletedKey, `${id}/${kept.uuid}.tar.gz`, goneKey].sort());
      expect(dry.removed.filter((item) => item.kind === 'upload').length).toBe(2);
      expect(dry.unknown.map((item) => [item.disk, item.location])).toEqual([['s3', orphanKey]]);
      expect(dry.missing.map((b) => b.uuid)).toEqual([lost.uuid]);
      expect(await s3.exists(orphanKey)).toBe(true);
      expect(await s3.pendingUploads()).toEqual(expect.arrayContaining([gone, finished, inProgress]));

      const report = await app.services.backupReconcile.run();
      expect(report.removed.map((item) => [item.kind, item.reason]).sort()).toEqual([
        ['archive', 'backup-deleted'],
        ['upload', 'backup-finished'],
        ['upload', 'no-backup'],
      ]);
      expect(report.errors).toEqual([]);
      expect(report.deletionsForgotten).toBe(1);
      expect(report.stalled).toEqual([]); // its job is queued: something will make it
      expect(report.missing).toEqual([{ uuid: lost.uuid, server: id, name: 'lost', disk: 's3' }]);
      expect(await s3.exists(deletedKey)).toBe(false);
      expect(await s3.exists(orphanKey)).toBe(true);
      expect(await s3.exists(foreignKey)).toBe(true);
      expect(await s3.exists(`${id}/${kept.uuid}.tar.gz`)).toBe(true);
      const pending = await s3.pendingUploads();
      expect(pending).not.toContain(gone);
      expect(pending).not.toContain(finished);
      expect(pending).toContain(inProgress);

      // The backup's next attempt aborts the upload an earlier one left, before its own.
      await drainJobs(app);
      expect(Number((await backupRow(app, making.id))?.is_successful)).toBe(1);
      expect(await s3.pendingUploads()).not.toContain(inProgress);
      expect(await s3.exists(`${id}/${making.id}.tar.gz`)).toBe(true);
    } finally {
      await app.close();
    }
  }, 90_000);
});
