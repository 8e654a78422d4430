/**
 * Looking inside a snapshot backup kept in an S3-compatible store (a real one: s3rver, reached
 * through a relay that notes every request), and restoring part of it: the root and a
 * subdirectory listed, one file downloaded through its signed link, one file restored onto a
 * volume that has moved on. And what one file costs: its download reads the index objects, the
 * snapshot record and byte ranges of the packs adding up to at most twice the file's stored size,
 * never the ~20 MiB of the other files beside it; a partial restore of it reads no more.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRepositoryStore, s3Repository } from '../../src/storage/repository/repository-location.ts';
import { Repository } from '../../src/storage/repository/repository.ts';
import { walkTree } from '../../src/storage/repository/snapshot-reader.ts';
import { contents, tempDir, writeTree, type TreeSpec } from '../support/archives.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { postRestore, restoreJobsOf } from '../support/restores.ts';
import { startRelay, startS3, type Relay, type TestS3 } from '../support/s3.ts';
import {
  backupsUrl,
  backupThroughApi,
  listeningUrl,
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
  app = await startTestApp({ env: { ...s3.env(relay.endpoint), ...SNAPSHOTS } });
  const owner = await createUser(app);
  token = (await createApiKey(app, owner)).token;
  server = await createServer(app, owner);
  work = await tempDir('aerie-browse-s3-');
});

afterAll(async () => {
  await app?.close();
  await relay?.close();
  await s3?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

interface FileList {
  data: { attributes: { name: string; size: number; is_file: boolean } }[];
  meta: { directory: string; pagination: { total: number } };
}

function list(uuid: string, directory: string) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/list?directory=${encodeURIComponent(directory)}`,
    headers: bearer(token),
  });
}

/** Asks for one file's link, then fetches it over real HTTP. */
async function download(
  uuid: string,
  file: string,
): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const link = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/download?file=${encodeURIComponent(file)}`,
    headers: bearer(token),
  });
  expect(link.statusCode, link.body).toBe(200);
  const signed = new URL(link.json<{ attributes: { url: string } }>().attributes.url);
  const res = await fetch(`${await listeningUrl(app)}${signed.pathname}${signed.search}`);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** A GET that went through the relay: the object's key (relative to the server's repository) and the range asked for. */
interface Read {
  key: string;
  range: { from: number; to: number } | null;
}

/** The GETs of the server's repository in the relay's log from `mark` on. */
function readsSince(mark: number): Read[] {
  const prefix = `/${s3.bucket}/${server.id}/repository/`;
  const reads: Read[] = [];
  for (const head of relay.heads.slice(mark)) {
    const line = head.split('\r\n')[0]!;
    if (!line.startsWith('get ')) continue;
    const target = decodeURIComponent(line.split(' ')[1]!);
    if (!target.startsWith(prefix)) {
      // A listing of the repository (`GET /bucket?list-type=2&prefix=…`), or something else.
      reads.push({ key: target, range: null });
      continue;
    }
    const match = /\r\nrange: bytes=(\d+)-(\d+)\r\n/.exec(head);
    reads.push({
      key: target.slice(prefix.length).split('?')[0]!,
      range: match === null ? null : { from: Number(match[1]), to: Number(match[2]) },
    });
  }
  return reads;
}

describe('a snapshot backup in an S3-compatible store, browsed and partly restored', () => {
  let backup: BackupAttributes;
  /** The file looked at: 1 MiB of random bytes (stored about as large). */
  const target = randomBytes(MIB);
  const NOISE_FILES = 20;
  /** Bytes the file's chunks take in the packs (compressed or not). */
  let targetStored = 0;
  /** Chunks of the files under /noise. */
  let noiseChunks = 0;

  beforeAll(async () => {
    const spec: TreeSpec = {
      'server.properties': 'motd=s3 browse\n',
      'world/level.dat': randomBytes(16 * KIB),
      'world/target.bin': target,
      'config/': { dir: true, mode: 0o750 },
      'config/app.yml': { content: 'key: value\n', mode: 0o640 },
    };
    // About 20 MiB of other files that no compression or deduplication shrinks.
    for (let i = 0; i < NOISE_FILES; i++)
      spec[`noise/n-${String(i).padStart(2, '0')}.bin`] = randomBytes(MIB);
    await writeTree(server.volume, spec);
    backup = await backupThroughApi(app, token, server, { name: 's3 browse' });

    // The stored size of the file's chunks, from the repository's own index.
    const storage = app.config.backupStorage;
    if (storage.kind !== 's3') throw new Error('the app does not keep backups in S3');
    const store = await openRepositoryStore(s3Repository(storage.s3, server.id));
    try {
      const repository = await Repository.open(store);
      const { record } = await repository.loadSnapshot(backup.uuid);
      for await (const { rel, node } of walkTree(repository, record.tree)) {
        if (node.type !== 'file') continue;
        if (rel.startsWith('noise/')) noiseChunks += node.chunks.length;
        if (rel !== 'world/target.bin') continue;
        for (const chunk of node.chunks) targetStored += repository.location(chunk)!.length;
      }
    } finally {
      await store.close();
    }
    expect(targetStored).toBeGreaterThan(MIB - KIB);
    expect(targetStored).toBeLessThan(MIB + 64 * KIB);
  });

  it('lists the root and a subdirectory', async () => {
    const root = await list(backup.uuid, '/');
    expect(root.statusCode, root.body).toBe(200);
    expect(root.json<FileList>().data.map((item) => item.attributes.name)).toEqual([
      'config',
      'noise',
      'world',
      'server.properties',
    ]);
    const world = (await list(backup.uuid, '/world/')).json<FileList>();
    expect(world.meta.directory).toBe('/world');
    expect(world.data.map((item) => [item.attributes.name, item.attributes.size])).toEqual([
      ['level.dat', 16 * KIB],
      ['target.bin', MIB],
    ]);
    const noise = (await list(backup.uuid, '/noise')).json<FileList>();
    expect(noise.meta.pagination.total).toBe(NOISE_FILES);
  });

  it('downloads one file, reading only its own pack ranges besides the index and the snapshot record', async () => {
    const mark = relay.heads.length;
    const file = await download(backup.uuid, '/world/target.bin');
    expect(file.status).toBe(200);
    expect(file.body.equals(target)).toBe(true);
    expect(file.headers.get('content-length')).toBe(String(MIB));

    const reads = readsSince(mark);
    const packs = reads.filter((read) => read.key.startsWith('packs/'));
    const rest = reads.filter((read) => !read.key.startsWith('packs/'));
    // Every pack is read by byte range, never whole.
    expect(packs.length).toBeGreaterThan(0);
    expect(packs.filter((read) => read.range === null)).toEqual([]);
    const packBytes = packs.reduce((sum, read) => sum + read.range!.to - read.range!.from + 1, 0);
    expect(
      packBytes,
      `pack bytes read: ${packBytes}; the file's stored size: ${targetStored}`,
    ).toBeLessThanOrEqual(2 * targetStored);
    // The rest: the listing of the index, the index objects and the snapshot record.
    for (const read of rest)
      expect(read.key, JSON.stringify(read)).toMatch(
        /^(index\/[0-9a-f]{64}|snapshots\/[0-9a-f-]{36}|\/.*list-type=2.*)$/,
      );
    expect(rest.filter((read) => read.key.startsWith('index/')).length).toBeGreaterThan(0);
  });

  it('downloads a directory as a .tar.gz, reading each run of chunks that lie together in a pack at once', async () => {
    const mark = relay.heads.length;
    const archive = await download(backup.uuid, '/noise');
    expect(archive.status).toBe(200);
    const entries = tarEntries(gunzipSync(archive.body));
    expect(entries.map(([name, size]) => [name, size])).toEqual(
      Array.from({ length: NOISE_FILES }, (_, i) => [`n-${String(i).padStart(2, '0')}.bin`, MIB]),
    );
    // Fewer range requests than chunks: a file's chunks were written one after another.
    const packs = readsSince(mark).filter((read) => read.key.startsWith('packs/'));
    expect(packs.filter((read) => read.range === null)).toEqual([]);
    expect(noiseChunks).toBeGreaterThan(2 * NOISE_FILES);
    expect(packs.length, `${packs.length} pack reads for ${noiseChunks} chunks`).toBeLessThanOrEqual(
      NOISE_FILES + 4,
    );
  });

  it('restores one file onto a volume that has moved on, reading no more of the packs', async () => {
    await writeFile(path.join(server.volume, 'world/target.bin'), 'replaced since');
    await writeFile(path.join(server.volume, 'server.properties'), 'motd=moved on\n');
    await writeFile(path.join(server.volume, 'world/added.txt'), 'added since');
    const before = await contents(server.volume);

    const mark = relay.heads.length;
    const res = await postRestore(app, token, server.identifier, backup.uuid, {
      files: ['/world/target.bin'],
      truncate: true,
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(app);
    const jobs = await restoreJobsOf(app, server.id);
    expect(jobs[jobs.length - 1]!.state).toBe('succeeded');

    expect((await readFile(path.join(server.volume, 'world/target.bin'))).equals(target)).toBe(true);
    const after = await contents(server.volume);
    for (const [rel, node] of Object.entries(before)) {
      if (rel === 'world/target.bin' || rel === 'world') continue;
      expect(after[rel], rel).toEqual(node);
    }
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());

    const packs = readsSince(mark).filter((read) => read.key.startsWith('packs/'));
    expect(packs.filter((read) => read.range === null)).toEqual([]);
    const packBytes = packs.reduce((sum, read) => sum + read.range!.to - read.range!.from + 1, 0);
    expect(
      packBytes,
      `pack bytes read: ${packBytes}; the file's stored size: ${targetStored}`,
    ).toBeLessThanOrEqual(2 * targetStored);
  });
});

/** The file entries of an uncompressed tar: each one's name and size (ustar headers only). */
function tarEntries(tar: Buffer): [string, number][] {
  const found: [string, number][] = [];
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) break;
    const name = header.subarray(0, 100).toString().replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString().replace(/\0.*$/s, '').trim() || '0', 8);
    if (String.fromCharCode(header[156]!) === '0') found.push([name, size]);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return found;
}
