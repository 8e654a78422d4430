/**
 * Archive backups (AERIE_BACKUP_FORMAT=archive) kept in an S3-compatible store (a real one:
 * s3rver in a temporary directory): made through the API and uploaded in parts as they are
 * compressed, restored by streaming the object (the checksum checked on the same pass),
 * downloaded through presigned URLs that expire, deleted with their backup; an upload cut
 * half-way leaves no object and a failed backup. Switching the store keeps each backup, of either
 * format, in the store it was made in.
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveVolume } from '../../src/backups/backup-archive.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { s3UploadSink } from '../../src/storage/stores/s3-object.ts';
import {
  contents,
  snapshot,
  tarGzOf,
  tempDir,
  writeIncompressibleFiles,
  writeTree,
  type TreeSpec,
} from '../support/archives.ts';
import { BACKUP_FORMATS, formatEnv, storedKey } from '../support/backup-formats.ts';
import { activityOfServer, postRestore, serverStatus } from '../support/restores.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { startRelay, startS3, type TestS3 } from '../support/s3.ts';

const MIB = 1024 * 1024;

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3.close());

/** A clock the tests move (job retries wait on it; download links are signed at its time). */
function movableClock() {
  let offsetMs = 0;
  return {
    clock: () => new Date(Date.now() + offsetMs),
    move: (ms: number) => (offsetMs += ms),
  };
}

async function appOnS3(env: Record<string, string> = {}) {
  const time = movableClock();
  const app = await startTestApp({ env: { ...s3.archiveEnv(), ...env }, clock: time.clock });
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  const { token } = await createApiKey(app, owner);
  return { app, time, server, token, base: `/api/client/servers/${server.identifier}/backups` };
}

async function backupThroughApi(app: TestApp, base: string, token: string) {
  const res = await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} });
  expect(res.statusCode).toBe(200);
  const uuid = res.json<{ attributes: { uuid: string } }>().attributes.uuid;
  await drainJobs(app);
  return backupRow(app, uuid);
}

function backupRow(app: TestApp, id: string) {
  return app.db.kysely.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Runs jobs, moving the clock past each retry's wait, until `done` holds. */
async function drainUntil(app: TestApp, time: { move: (ms: number) => void }, done: () => Promise<boolean>) {
  for (let round = 0; round < 10 && !(await done()); round++) {
    await drainJobs(app);
    time.move(60_000);
  }
  expect(await done()).toBe(true);
}

async function objectSha256(key: string): Promise<{ sha256: string; bytes: number }> {
  const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of object.Body as Readable) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/** The files (not directories) under `dir`. */
async function filesUnder(dir: string): Promise<string[]> {
  try {
    const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

const TREE: TreeSpec = {
  'server.properties': 'motd=hello\n',
  'world/level.dat': Buffer.from([0, 1, 2, 3, 255, 254]),
  'world/region/r.0.0.mca': Buffer.alloc(300 * 1024, 7),
  'plugins/empty.txt': '',
  'plugins/config/': { dir: true, mode: 0o750 },
  'bin/start.sh': { content: '#!/bin/sh\necho start\n', mode: 0o755 },
  'logs/latest.log': 'x'.repeat(10_000),
};

describe('archive backups in an S3-compatible store', () => {
  it('are made through the API as one object, and restore exactly from it', async () => {
    const { app, server, token, base } = await appOnS3();
    try {
      await writeTree(server.volume, TREE);
      const original = await contents(server.volume);
      const row = await backupThroughApi(app, base, token);
      expect(row).toMatchObject({ is_successful: 1, disk: 's3' });
      const key = `${server.id}/${row.id}.tar.gz`;
      expect(await s3.keys()).toContain(key);
      // The recorded checksum and size are the object's.
      expect(await objectSha256(key)).toEqual({ sha256: row.sha256, bytes: Number(row.bytes) });
      // Nothing passed through local disk.
      expect(await filesUnder(app.config.backupsDir)).toEqual([]);

      await fs.rm(path.join(server.volume, 'world'), { recursive: true });
      await fs.writeFile(path.join(server.volume, 'server.properties'), 'changed');
      await fs.writeFile(path.join(server.volume, 'new.txt'), 'not in the backup');
      const res = await postRestore(app, token, server.identifier, row.id, { truncate: true });
      expect(res.statusCode).toBe(204);
      await drainJobs(app);
      expect(await contents(server.volume)).toEqual(original);
      expect(await serverStatus(app, server.id)).toBeNull();
      const events = (await activityOfServer(app, server.id)).map((entry) => entry.event);
      expect(events).toContain('server:backup.restore-complete');
      expect(await filesUnder(app.config.backupsDir)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('made or imported from the command line are stored in the bucket too', async () => {
    const { app, server } = await appOnS3();
    const work = await tempDir();
    try {
      await writeTree(server.volume, TREE);
      const made = await app.services.backupManagement.createNow(server.id, 'from the cli');
      expect(await objectSha256(`${server.id}/${made.uuid}.tar.gz`)).toEqual({
        sha256: made.checksum.slice('sha256:'.length),
        bytes: made.bytes,
      });
      await writeTree(path.join(work, 'src'), { 'imported.txt': 'from a file' });
      const file = await tarGzOf(path.join(work, 'src'), path.join(work, 'import.tar.gz'));
      const imported = await app.services.backupManagement.importArchive(server.id, 'imported', file);
      expect(await objectSha256(`${server.id}/${imported.uuid}.tar.gz`)).toEqual({
        sha256: imported.checksum.slice('sha256:'.length),
        bytes: imported.bytes,
      });
      expect((await backupRow(app, made.uuid)).disk).toBe('s3');
      expect(await filesUnder(app.config.backupsDir)).toEqual([]);
    } finally {
      await app.close();
      await fs.rm(work, { recursive: true, force: true });
    }
  });

  it('upload an archive larger than a part in several parts, and restore it', async () => {
    // The app reaches the store through a relay that notes every request.
    const relay = await startRelay(s3.port);
    const time = movableClock();
    const app = await startTestApp({
      env: { ...s3.archiveEnv(relay.endpoint), AERIE_S3_PART_SIZE_MB: '5' },
      clock: time.clock,
    });
    try {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      await writeIncompressibleFiles(path.join(server.volume, 'data'), 3, 5 * MIB);
      await writeTree(server.volume, TREE);
      const original = await contents(server.volume);
      const row = await backupThroughApi(app, `/api/client/servers/${server.identifier}/backups`, token);
      expect(row.is_successful).toBe(1);
      expect(Number(row.bytes)).toBeGreaterThan(15 * MIB);
      const parts = relay.requests.filter((line) => /^PUT \S+[?&]partNumber=\d+/.test(line));
      expect(parts.length).toBe(Math.ceil(Number(row.bytes) / (5 * MIB)));
      expect(relay.requests.filter((line) => /^POST \S+[?&]uploads\b/.test(line))).toHaveLength(1);
      // No checksum header or trailer, which several S3-compatible stores refuse (AERIE_S3_CHECKSUMS).
      const partHeads = relay.heads.filter((head) => /^put \S+[?&]partnumber=\d+/.test(head));
      expect(partHeads).toHaveLength(parts.length);
      for (const head of partHeads) expect(head).not.toMatch(/^x-amz-(checksum-|sdk-checksum|trailer)/m);

      await fs.rm(server.volume, { recursive: true });
      await fs.mkdir(server.volume);
      expect((await postRestore(app, token, server.identifier, row.id, { truncate: false })).statusCode).toBe(
        204,
      );
      await drainJobs(app);
      expect(await contents(server.volume)).toEqual(original);
      // Read with one GET, streamed: the archive never reached local disk. (The undo backup taken
      // first is a snapshot, which asks for its repository's objects too.)
      const gets = relay.requests.filter((line) =>
        line.startsWith(`GET /${s3.bucket}/${server.id}/${row.id}.tar.gz`),
      );
      expect(gets).toHaveLength(1);
      expect(await filesUnder(app.config.backupsDir)).toEqual([]);
    } finally {
      await app.close();
      await relay.close();
    }
  });

  it('send a CRC32 of every part with AERIE_S3_CHECKSUMS=when_supported', async () => {
    const relay = await startRelay(s3.port);
    const app = await startTestApp({
      env: {
        ...s3.archiveEnv(relay.endpoint),
        AERIE_S3_PART_SIZE_MB: '5',
        AERIE_S3_CHECKSUMS: 'when_supported',
      },
    });
    try {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      await writeIncompressibleFiles(path.join(server.volume, 'data'), 2, 4 * MIB);
      const row = await backupThroughApi(app, `/api/client/servers/${server.identifier}/backups`, token);
      expect(row.is_successful).toBe(1);
      const partHeads = relay.heads.filter((head) => /^put \S+[?&]partnumber=\d+/.test(head));
      expect(partHeads).toHaveLength(2);
      for (const head of partHeads) expect(head).toMatch(/^x-amz-(checksum-crc32|trailer): /m);
      expect(await s3.exists(`${server.id}/${row.id}.tar.gz`)).toBe(true);
    } finally {
      await app.close();
      await relay.close();
    }
  });

  it('leave no object and a failed backup when the store goes away half-way through the upload', async () => {
    const relay = await startRelay(s3.port, 8 * MIB);
    const time = movableClock();
    const app = await startTestApp({
      // The store never comes back: the job fails without waiting out a retry window.
      env: { ...s3.archiveEnv(relay.endpoint), AERIE_S3_PART_SIZE_MB: '5', AERIE_JOB_RETRY_MINUTES: '0' },
      clock: time.clock,
    });
    try {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      await writeIncompressibleFiles(server.volume, 4, 5 * MIB);
      const before = await s3.keys();
      const res = await app.http.inject({
        method: 'POST',
        url: `/api/client/servers/${server.identifier}/backups`,
        headers: bearer(token),
        payload: {},
      });
      const uuid = res.json<{ attributes: { uuid: string } }>().attributes.uuid;
      await drainUntil(app, time, async () => (await backupRow(app, uuid)).completed_at !== null);
      await relay.cut;
      const row = await backupRow(app, uuid);
      expect(row.is_successful).toBe(0);
      expect(await s3.keys()).toEqual(before);
      expect(await s3.exists(`${server.id}/${uuid}.tar.gz`)).toBe(false);
      const failures = await activityOfServer(app, server.id, 'server:backup.fail');
      expect(failures).toHaveLength(1);
      // A restore of it is refused.
      const restore = await postRestore(app, token, server.identifier, uuid, { truncate: false });
      expect(restore.statusCode).toBe(400);
    } finally {
      await app.close();
      await relay.close();
    }
  }, 90_000); // (7 s alone; the store's client gives up on a dead relay slowly under load)

  it('abort the multipart upload when the archive is stopped half-way: no object, no parts', async () => {
    const volume = await tempDir('aerie-s3-volume-');
    try {
      await writeIncompressibleFiles(volume, 6, 5 * MIB);
      const key = 'stopped/half-way.tar.gz';
      // (The store-gone test leaves an upload the store never heard the end of: not this one's.)
      const earlier = await s3.pendingUploads();
      const stop = new AbortController();
      const made = archiveVolume(
        volume,
        {
          kind: 's3',
          upload: { s3: loadS3Settings(), key, partSize: 5 * MIB, queueSize: 2 },
        },
        { signal: stop.signal },
      );
      made.catch(() => undefined);
      // Stop once the store holds a part of it.
      await until(async () => (await partsStored(s3, earlier)) > 0);
      stop.abort(new Error('stopped by the test'));
      await expect(made).rejects.toThrow('stopped by the test');
      expect(await s3.exists(key)).toBe(false);
      expect(await s3.pendingUploads()).toEqual(earlier);
    } finally {
      await fs.rm(volume, { recursive: true, force: true });
    }
  });

  it('tell the writer each time a part is stored (the archive thread collects its garbage then)', async () => {
    const key = 'parts/counted.tar.gz';
    let stored = 0;
    const sink = s3UploadSink({ s3: loadS3Settings(), key, partSize: 5 * MIB, queueSize: 2 }, () => {
      stored += 1;
    });
    for (let i = 0; i < 12; i++) {
      if (!sink.stream.write(Buffer.alloc(MIB, i)))
        await new Promise((resolve) => sink.stream.once('drain', resolve));
    }
    sink.stream.end();
    await sink.finish();

    expect(stored).toBe(3); // 5 + 5 + 2 MiB
    expect(await s3.exists(key)).toBe(true);
  });

  it('abort the multipart upload when the bytes stop coming with an error', async () => {
    const key = 'failed/source.tar.gz';
    const earlier = await s3.pendingUploads();
    const sink = s3UploadSink({ s3: loadS3Settings(), key, partSize: 5 * MIB, queueSize: 2 });
    const failed = new Promise((resolve) => sink.stream.once('error', resolve));
    for (let i = 0; i < 12; i++) {
      if (!sink.stream.write(Buffer.alloc(MIB, i)))
        await new Promise((resolve) => sink.stream.once('drain', resolve));
    }
    await until(async () => (await partsStored(s3, earlier)) > 0);
    sink.stream.destroy(new Error('the source failed'));
    await failed;
    await sink.discard();
    expect(await s3.exists(key)).toBe(false);
    expect(await s3.pendingUploads()).toEqual(earlier);
  });

  it('are downloaded through a presigned URL that works for 15 minutes', async () => {
    const { app, time, server, token, base } = await appOnS3();
    try {
      await writeTree(server.volume, TREE);
      const row = await backupThroughApi(app, base, token);
      const link = async () => {
        const res = await app.http.inject({
          method: 'GET',
          url: `${base}/${row.id}/download`,
          headers: bearer(token),
        });
        expect(res.statusCode).toBe(200);
        return new URL(res.json<{ attributes: { url: string } }>().attributes.url);
      };
      const url = await link();
      expect(url.origin).toBe(s3.endpoint);
      expect(url.pathname).toBe(`/${s3.bucket}/${server.id}/${row.id}.tar.gz`);
      expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
      const download = await fetch(url);
      expect(download.status).toBe(200);
      expect(download.headers.get('content-disposition')).toContain('attachment');
      const body = Buffer.from(await download.arrayBuffer());
      expect(createHash('sha256').update(body).digest('hex')).toBe(row.sha256);

      // A link signed 16 minutes ago no longer works; one signed 14 minutes ago still does.
      time.move(-14 * 60_000);
      expect((await fetch(await link())).status).toBe(200);
      time.move(-2 * 60_000);
      const expired = await fetch(await link());
      expect(expired.status).toBe(403);
      expect(await expired.text()).toContain('Request has expired');
    } finally {
      await app.close();
    }
  });

  it('are deleted with their object', async () => {
    const { app, server, token, base } = await appOnS3();
    try {
      await writeTree(server.volume, TREE);
      const row = await backupThroughApi(app, base, token);
      const key = `${server.id}/${row.id}.tar.gz`;
      expect(await s3.exists(key)).toBe(true);
      const res = await app.http.inject({
        method: 'DELETE',
        url: `${base}/${row.id}`,
        headers: bearer(token),
      });
      expect(res.statusCode).toBe(204);
      expect(await s3.exists(key)).toBe(false);
    } finally {
      await app.close();
    }
  });

  it('change nothing in the volume when the object does not match its checksum', async () => {
    const { app, time, server, token, base } = await appOnS3();
    try {
      await writeTree(server.volume, TREE);
      const row = await backupThroughApi(app, base, token);
      // The object is replaced by another valid archive.
      const other = await tempDir();
      await writeTree(path.join(other, 'src'), { 'server.properties': 'motd=impostor\n', 'extra.txt': 'x' });
      const file = await tarGzOf(path.join(other, 'src'), path.join(other, 'other.tar.gz'));
      await s3.client.send(
        new PutObjectCommand({
          Bucket: s3.bucket,
          Key: `${server.id}/${row.id}.tar.gz`,
          Body: await fs.readFile(file),
        }),
      );
      await fs.rm(other, { recursive: true });
      await fs.writeFile(path.join(server.volume, 'new.txt'), 'made after the backup');
      const before = await snapshot(server.volume, { mtimes: true });

      expect((await postRestore(app, token, server.identifier, row.id, { truncate: true })).statusCode).toBe(
        204,
      );
      await drainUntil(app, time, async () => (await serverStatus(app, server.id)) === null);
      expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
      const [failed] = await activityOfServer(app, server.id, 'server:backup.restore-failed');
      expect(JSON.stringify(failed?.properties)).toContain('checksum');
      // No staging or retired tree left beside the volumes.
      expect(
        (await fs.readdir(app.config.volumesDir)).filter((name) => name.startsWith('.restore-')),
      ).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('fail a restore whose object is missing, changing nothing', async () => {
    const { app, time, server, token, base } = await appOnS3();
    try {
      await writeTree(server.volume, TREE);
      const row = await backupThroughApi(app, base, token);
      await s3.client.send(
        new DeleteObjectCommand({
          Bucket: s3.bucket,
          Key: `${server.id}/${row.id}.tar.gz`,
        }),
      );
      const before = await snapshot(server.volume, { mtimes: true });
      expect((await postRestore(app, token, server.identifier, row.id, { truncate: true })).statusCode).toBe(
        204,
      );
      await drainUntil(app, time, async () => (await serverStatus(app, server.id)) === null);
      expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
      const [failed] = await activityOfServer(app, server.id, 'server:backup.restore-failed');
      expect(JSON.stringify(failed?.properties)).toContain('missing');
    } finally {
      await app.close();
    }
  });
});

describe.each(BACKUP_FORMATS)('switching AERIE_BACKUP_STORAGE, with %s backups', (format) => {
  it('keeps each backup in the store it was made in', async () => {
    const time = movableClock();
    const local = await startTestApp({ env: formatEnv(format), clock: time.clock });
    try {
      const owner = await createUser(local);
      const server = await createServer(local, owner);
      const { token } = await createApiKey(local, owner);
      const base = `/api/client/servers/${server.identifier}/backups`;
      await writeTree(server.volume, TREE);
      const original = await contents(server.volume);
      const made = await backupThroughApi(local, base, token);
      expect(made).toMatchObject({ disk: 'local', format, is_successful: 1 });

      // The same database and data directory, now with S3 storage.
      const onS3 = await startTestApp({
        databaseUrl: local.config.database.url,
        env: { ...s3.env(), ...formatEnv(format), AERIE_DATA_DIR: local.dataDir },
        clock: time.clock,
      });
      let inS3: Awaited<ReturnType<typeof backupRow>>;
      try {
        // The local backup still restores, from its file.
        await fs.rm(path.join(server.volume, 'world'), { recursive: true });
        expect(
          (await postRestore(onS3, token, server.identifier, made.id, { truncate: true })).statusCode,
        ).toBe(204);
        await drainJobs(onS3);
        expect(await contents(server.volume)).toEqual(original);
        // New backups go to the bucket.
        inS3 = await backupThroughApi(onS3, base, token);
        expect(inS3).toMatchObject({ disk: 's3', format, is_successful: 1 });
        expect(await s3.exists(storedKey(server.id, inS3.id, format))).toBe(true);
      } finally {
        await onS3.close();
      }

      // Back on local storage, the S3 backup is refused with a reason, and nothing changes.
      const download = await local.http.inject({
        method: 'GET',
        url: `${base}/${inS3.id}/download`,
        headers: bearer(token),
      });
      expect(download.statusCode).toBe(400);
      const before = await snapshot(server.volume, { mtimes: true });
      expect(
        (await postRestore(local, token, server.identifier, inS3.id, { truncate: true })).statusCode,
      ).toBe(204);
      await drainUntil(local, time, async () => (await serverStatus(local, server.id)) === null);
      expect(await snapshot(server.volume, { mtimes: true })).toEqual(before);
      const [failed] = await activityOfServer(local, server.id, 'server:backup.restore-failed');
      expect(JSON.stringify(failed?.properties)).toContain('kept in s3 storage, which is not configured');
    } finally {
      await local.close();
    }
  });
});

describe('S3 configuration', () => {
  const base = {
    AERIE_BACKUP_STORAGE: 's3',
    AERIE_S3_BUCKET: 'backups',
    AWS_ACCESS_KEY_ID: 'id',
    AWS_SECRET_ACCESS_KEY: 'secret',
  };
  const refused = (env: Record<string, string>) => () => loadConfig({ AERIE_DATA_DIR: '/tmp/x', ...env });

  it('defaults to local storage, and reads every S3 variable', () => {
    expect(loadConfig({ AERIE_DATA_DIR: '/tmp/x' }).backupStorage).toEqual({ kind: 'local' });
    expect(
      loadConfig({
        ...base,
        AERIE_S3_ENDPOINT: 'https://s3.example.com/',
        AERIE_S3_PUBLIC_ENDPOINT: 'https://files.example.com:8443/',
        AERIE_S3_REGION: 'eu-west-3',
        AERIE_S3_FORCE_PATH_STYLE: 'true',
        AERIE_S3_PART_SIZE_MB: '12',
        AERIE_S3_CHECKSUMS: 'When_Supported',
      }).backupStorage,
    ).toEqual({
      kind: 's3',
      partSizeBytes: 12 * MIB,
      s3: {
        bucket: 'backups',
        endpoint: 'https://s3.example.com',
        publicEndpoint: 'https://files.example.com:8443',
        region: 'eu-west-3',
        forcePathStyle: true,
        checksums: 'when_supported',
        accessKeyId: 'id',
        secretAccessKey: 'secret',
      },
    });
    expect(loadConfig(base).backupStorage).toMatchObject({
      partSizeBytes: 8 * MIB,
      s3: {
        endpoint: null,
        publicEndpoint: null,
        region: 'us-east-1',
        forcePathStyle: false,
        checksums: 'when_required',
      },
    });
  });

  it.each([
    [{ AERIE_BACKUP_STORAGE: 'ftp' }, 'AERIE_BACKUP_STORAGE must be local or s3'],
    [{ ...base, AERIE_S3_BUCKET: '' }, 'needs AERIE_S3_BUCKET'],
    [{ ...base, AERIE_S3_BUCKET: 'a/b' }, 'needs AERIE_S3_BUCKET'],
    [{ ...base, AWS_SECRET_ACCESS_KEY: '' }, 'needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY'],
    [{ ...base, AERIE_S3_ENDPOINT: 'ftp://s3.example.com' }, 'AERIE_S3_ENDPOINT must be an http(s) URL'],
    [
      { ...base, AERIE_S3_ENDPOINT: 'https://u:p@s3.example.com' },
      'AERIE_S3_ENDPOINT must be an http(s) URL',
    ],
    [
      { ...base, AERIE_S3_PUBLIC_ENDPOINT: 'minio:9000' },
      'AERIE_S3_PUBLIC_ENDPOINT must be an http(s) origin',
    ],
    [
      { ...base, AERIE_S3_PUBLIC_ENDPOINT: 'https://example.com/s3' },
      'AERIE_S3_PUBLIC_ENDPOINT must be an http(s) origin',
    ],
    [
      { ...base, AERIE_S3_PUBLIC_ENDPOINT: 'https://u:p@s3.example.com' },
      'AERIE_S3_PUBLIC_ENDPOINT must be an http(s) origin',
    ],
    [
      { ...base, AERIE_S3_PUBLIC_ENDPOINT: 'https://s3.example.com/?a=b' },
      'AERIE_S3_PUBLIC_ENDPOINT must be an http(s) origin',
    ],
    [{ ...base, AERIE_S3_FORCE_PATH_STYLE: 'yes' }, 'AERIE_S3_FORCE_PATH_STYLE must be true or false'],
    [{ ...base, AERIE_S3_REGION: 'eu west' }, 'AERIE_S3_REGION must be a region name'],
    [{ ...base, AERIE_S3_CHECKSUMS: 'always' }, 'AERIE_S3_CHECKSUMS must be when_required or when_supported'],
    [{ ...base, AERIE_S3_PART_SIZE_MB: '4' }, 'AERIE_S3_PART_SIZE_MB must be an integer from 5 to 5120'],
  ])('refuses %o', (env, message) => {
    expect(refused(env)).toThrow(ConfigError);
    expect(refused(env)).toThrow(message);
  });
});

function loadS3Settings() {
  const storage = loadConfig({ AERIE_DATA_DIR: '/tmp/x', ...s3.env() }).backupStorage;
  if (storage.kind !== 's3') throw new Error('not s3');
  return storage.s3;
}

/** How many parts of unfinished multipart uploads (other than `earlier` ones) the store holds. */
async function partsStored(store: TestS3, earlier: string[]): Promise<number> {
  let parts = 0;
  for (const upload of await store.pendingUploads()) {
    if (earlier.includes(upload)) continue;
    const dir = path.join(store.uploadsDir, upload);
    parts += (await fs.readdir(dir).catch(() => [])).filter((name) => /^\d+$/.test(name)).length;
  }
  return parts;
}

async function until(condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
