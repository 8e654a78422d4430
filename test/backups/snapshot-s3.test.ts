/**
 * Snapshot backups (AERIE_BACKUP_FORMAT=snapshot) in an S3-compatible store (a real one:
 * s3rver, reached through a relay that notes every request): each server's repository is
 * objects under `<server uuid>/repository/` (packs, index, snapshot records) and nothing on
 * local disk; a backup of an unchanged volume adds next to nothing; the download is made by
 * Aerie from the chunks, on Aerie's own host (there is no object to presign); a restore reads
 * the packs by byte range; `aerie backup prune` reclaims a deleted backup's chunks and `aerie
 * backup check --read-data` passes, then fails naming the backups a pack damaged in the bucket
 * harms.
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contents, tempDir, writeTree, type NodeInfo } from '../support/archives.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { postRestore } from '../support/restores.ts';
import { startRelay, startS3, type Relay, type TestS3 } from '../support/s3.ts';
import {
  backupsUrl,
  backupThroughApi,
  deleteBackup,
  jsonRecord,
  listeningUrl,
  runCli,
  SNAPSHOTS,
  type BackupAttributes,
} from '../support/snapshots.ts';

const KIB = 1024;
const MIB = 1024 * KIB;

let s3: TestS3;
let relay: Relay;
let app: TestApp;
let token: string;
let server: { id: string; identifier: string; volume: string };
let work: string;

beforeAll(async () => {
  s3 = await startS3();
  relay = await startRelay(s3.port);
  // Aerie reaches the store through the relay; the commands run below go to it directly.
  app = await startTestApp({ env: { ...s3.env(relay.endpoint), ...SNAPSHOTS } });
  const owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  server = await createServer(app, owner);
  work = await tempDir('aerie-snapshot-s3-');
});

afterAll(async () => {
  await app?.close();
  await relay?.close();
  await s3?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

/** The objects of the server's repository, keys relative to it (`packs/ab/<id>`), with sizes. */
async function repositoryObjects(): Promise<Map<string, number>> {
  const prefix = `${server.id}/repository/`;
  const found = new Map<string, number>();
  let token: string | undefined;
  do {
    const page = await s3.client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) found.set(object.Key!.slice(prefix.length), object.Size ?? 0);
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return found;
}

const total = (objects: Map<string, number>) => [...objects.values()].reduce((sum, n) => sum + n, 0);

async function getObject(key: string): Promise<Buffer> {
  const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await object.Body!.transformToByteArray());
}

/** Files under `dir`, relative; none when it is not there. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

/** `aerie <args>` as a process of its own, on the app's database, with its S3 settings (snapshots: runCli). */
const cli = (args: string[]) => runCli(app, args, s3.env());

interface CheckRecord {
  damaged_backups: string[];
  repositories: { disk: string; problems: { backup: string | null; message: string }[] }[];
}

const PACK = /^packs\/[0-9a-f]{2}\/[0-9a-f]{64}$/;
const INDEX = /^index\/[0-9a-f]{64}$/;

describe('snapshot backups in an S3-compatible store', () => {
  /** The backups made, in order, and the volume each was taken of. */
  const backups: BackupAttributes[] = [];
  const taken: Record<string, NodeInfo>[] = [];
  const first = () => backups[0]!;
  const second = () => backups[1]!;
  const third = () => backups[2]!;

  async function backUp(name: string): Promise<BackupAttributes> {
    taken.push(await contents(server.volume));
    const backup = await backupThroughApi(app, token, server, { name });
    backups.push(backup);
    return backup;
  }

  it('are objects under the server’s repository prefix: packs, index and the snapshot record', async () => {
    await writeTree(server.volume, {
      'server.properties': 'motd=snapshots in s3\n',
      'world/level.dat': randomBytes(64 * KIB),
      'world/region/r.0.0.mca': randomBytes(MIB),
      'world/region/r.0.1.mca': randomBytes(MIB),
      'logs/latest.log': 'player joined the game\n'.repeat(8000),
      'config/': { dir: true, mode: 0o750 },
      'config/app.yml': { content: 'key: value\n', mode: 0o640 },
      'run.sh': { content: '#!/bin/sh\nexec java\n', mode: 0o755 },
      'empty/': { dir: true },
      'zero.bin': '',
    });
    await backUp('first');
    expect(first()).toMatchObject({ format: 'snapshot', is_successful: true });

    const objects = await repositoryObjects();
    const keys = [...objects.keys()];
    expect(keys.filter((key) => key.startsWith('snapshots/'))).toEqual([`snapshots/${first().uuid}`]);
    expect(keys.filter((key) => PACK.test(key)).length).toBeGreaterThan(0);
    expect(keys.filter((key) => INDEX.test(key))).toHaveLength(1);
    expect(keys.every((key) => PACK.test(key) || INDEX.test(key) || key.startsWith('snapshots/'))).toBe(true);
    // Nothing else in the bucket (no .tar.gz), nothing on local disk.
    expect((await s3.keys()).every((key) => key.startsWith(`${server.id}/repository/`))).toBe(true);
    expect(await filesUnder(app.config.backupsDir)).toEqual([]);
    // Its checksum is the record's SHA-256; the packs hold about what the files do (random data).
    const record = await getObject(`${server.id}/repository/snapshots/${first().uuid}`);
    expect(createHash('sha256').update(record).digest('hex')).toBe(first().sha256_hash);
    expect(total(objects)).toBeGreaterThan(2 * MIB);
    expect(total(objects)).toBeLessThan(2.5 * MIB);
  });

  it('adds next to nothing for a backup of an unchanged volume', async () => {
    const before = await repositoryObjects();
    await backUp('second');
    const after = await repositoryObjects();
    expect([...after.keys()].filter((key) => !before.has(key))).toEqual([`snapshots/${second().uuid}`]);
    expect(total(after) - total(before)).toBeLessThan(2 * KIB);
    expect(second().added_bytes).toBeLessThan(KIB);
    expect(second().bytes).toBe(first().bytes);
  });

  it('downloads through a link on Aerie’s own host, made from the chunks: exactly the volume', async () => {
    const base = await listeningUrl(app);
    const linkRes = await fetch(`${base}${backupsUrl(server)}/${first().uuid}/download`, {
      headers: { ...bearer(token), accept: 'application/json' },
    });
    expect(linkRes.status).toBe(200);
    const url = ((await linkRes.json()) as { attributes: { url: string } }).attributes.url;
    // Not presigned: Aerie's path with its own token, on the host the request came to.
    expect(url.startsWith(`${base}/download/backup?token=`)).toBe(true);
    expect(url).not.toMatch(/X-Amz-/i);
    const requestsBefore = relay.requests.length;
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    const file = path.join(work, 'first.tar.gz');
    await writeFile(file, Buffer.from(await res.arrayBuffer()));
    // Aerie read the chunks from the store to make it.
    expect(relay.requests.slice(requestsBefore).some((line) => line.includes('/repository/packs/'))).toBe(
      true,
    );
    const out = path.join(work, 'untarred');
    await mkdir(out);
    execFileSync('tar', ['-xzf', file, '-C', out]);
    expect(await contents(out)).toEqual(taken[0]);
  });

  it('restores a backup through the API, reading the packs by byte range', async () => {
    // The volume moves on, and is backed up: chunks only this backup has.
    await writeFile(path.join(server.volume, 'world/region/r.0.0.mca'), randomBytes(MIB));
    await writeFile(path.join(server.volume, 'world/region/r.0.2.mca'), randomBytes(MIB));
    await rm(path.join(server.volume, 'config/app.yml'));
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=moved on\n');
    await backUp('third');
    expect(third().added_bytes).toBeGreaterThan(2 * MIB);

    const mark = relay.heads.length;
    const res = await postRestore(app, token, server.identifier, first().uuid, {
      truncate: true,
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    expect(await contents(server.volume)).toEqual(taken[0]);

    const packReads = relay.heads
      .slice(mark)
      .filter((head) => head.startsWith('get ') && head.split('\r\n')[0]!.includes('/repository/packs/'));
    expect(packReads.length).toBeGreaterThan(0);
    for (const head of packReads) expect(head).toMatch(/\r\nrange: bytes=\d+-\d+\r\n/);
  });

  it('reclaims what a deleted backup alone held with `aerie backup prune`, and checks clean', async () => {
    const before = await repositoryObjects();
    await deleteBackup(app, token, server, third().uuid);
    const pruned = await cli(['backup', 'prune', '--server', server.id, '--json']);
    expect(pruned.code, pruned.output).toBe(0);
    const record = jsonRecord<{ repositories: { disk: string; snapshots: number }[] }>(pruned);
    expect(record.repositories).toEqual([expect.objectContaining({ disk: 's3', snapshots: 2 })]);
    const after = await repositoryObjects();
    // The two regions only the deleted backup had are gone.
    expect(total(after)).toBeLessThan(total(before) - 1.9 * MIB);
    expect([...after.keys()].filter((key) => key.startsWith('snapshots/')).sort()).toEqual(
      [`snapshots/${first().uuid}`, `snapshots/${second().uuid}`].sort(),
    );

    const checked = await cli(['backup', 'check', '--server', server.id, '--read-data', '--json']);
    expect(checked.code, checked.output).toBe(0);
    const report = jsonRecord<CheckRecord>(checked);
    expect(report.damaged_backups).toEqual([]);
    expect(report.repositories.flatMap((repository) => repository.problems)).toEqual([]);
  });

  it('fails `aerie backup check --read-data`, naming the backups, once a byte of a pack is flipped', async () => {
    // The largest pack: it holds the regions both remaining backups share.
    const objects = await repositoryObjects();
    const [packKey] = [...objects.entries()]
      .filter(([key]) => PACK.test(key))
      .sort((a, b) => b[1] - a[1])
      .map(([key]) => key);
    const key = `${server.id}/repository/${packKey!}`;
    const pack = await getObject(key);
    const headerLength = pack.readUInt32LE(pack.length - 12);
    const header = JSON.parse(
      pack.subarray(pack.length - 12 - headerLength, pack.length - 12).toString(),
    ) as { blobs: [string, number, number, number][] };
    const [blob, , offset, length] = header.blobs
      .filter((line) => line[1] === 0)
      .sort((a, b) => b[3] - a[3])[0]!;
    const at = offset + Math.floor(length / 2);
    pack[at] = pack[at]! ^ 0xff;
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: pack }));

    // A check that does not read the data sees nothing wrong: the pack is there, its size right.
    const quick = await cli(['backup', 'check', '--server', server.id, '--json']);
    expect(quick.code, quick.output).toBe(0);

    const checked = await cli(['backup', 'check', '--server', server.id, '--read-data', '--json']);
    expect(checked.code, checked.output).toBe(1);
    const report = jsonRecord<CheckRecord>(checked);
    const both = [first().uuid, second().uuid].sort();
    expect(report.damaged_backups).toEqual(both);
    const problems = report.repositories.flatMap((repository) => repository.problems);
    for (const uuid of both)
      expect(problems.some((p) => p.backup === uuid && p.message.includes(blob))).toBe(true);
    expect(problems.some((p) => p.backup === null && p.message.includes(packKey!.slice(-64)))).toBe(true);
    // Said in words too, without --json.
    const plain = await cli(['backup', 'check', '--server', server.id, '--read-data']);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain(`damaged backups (2): ${both.join(', ')}`);
  });
});

describe('aerie backup create --full in an S3-compatible store', () => {
  /** The requests for the repository's restore base made while `aerie backup create <flags>` ran, through the relay. */
  async function restoreBaseRequests(name: string, ...flags: string[]): Promise<string[]> {
    const mark = relay.requests.length;
    const run = await runCli(
      app,
      ['backup', 'create', '--server', server.id, '--name', name, '--json', ...flags],
      s3.env(relay.endpoint),
    );
    expect(run.code, run.output).toBe(0);
    return relay.requests
      .slice(mark)
      .filter((line) => line.includes(`/${server.id}/repository/restore-base`));
  }

  it('compares with nothing, so it does not ask for the restore base; an incremental backup does', async () => {
    expect(await restoreBaseRequests('incremental')).not.toEqual([]);
    expect(await restoreBaseRequests('full', '--full')).toEqual([]);
  });
});
