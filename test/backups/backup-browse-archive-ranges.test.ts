/**
 * One path of a .tar.gz archive backup, downloaded from the gzip members that hold it alone: the
 * catalog notes each member (where it is, the SHA-256 of its bytes) and where each entry is in the
 * tar, and a download reads only the members that cover the path (a local file at their offsets,
 * one ranged GET of an S3 object), each checked before it is inflated.
 *
 * What is proved: a file's download reads at most its stored size and two members (everything
 * else in the local archive can be garbage, and the S3 GET asks for no more); the bytes are exact;
 * a directory comes as a .tar.gz of exactly what it holds; a damaged member or a swapped archive
 * never gives a whole-looking file; a foreign archive that is one gzip member (GNU tar) lists and
 * downloads; a catalog made before members were noted still serves downloads (the whole archive
 * read); and the stage that tells members apart reads what gunzip reads, failing where it fails.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupRepository } from '../../src/backups/backup.repository.ts';
import type { Backup } from '../../src/backups/backup.ts';
import { readArchive } from '../../src/storage/archive/archive-reader.ts';
import { GzipMembers, PIECE_BYTES } from '../../src/storage/archive/gzip-members.ts';
import { piecesCovering, PIECES_FILE, type ArchiveSlice } from '../../src/storage/catalog/archive-pieces.ts';
import {
  readCatalogPage,
  readCatalogSummary,
  type CatalogSummary,
} from '../../src/storage/catalog/backup-catalog.ts';
import { archivePathStream } from '../../src/storage/stores/archive-path.ts';
import { contents, flipBits, tempDir, writeTree } from '../support/archives.ts';
import { storedKey } from '../support/backup-formats.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { paxRecord, rawTar } from '../support/raw-tar.ts';
import { plantArchive, postRestore, restoreJobsOf, storedArchive } from '../support/restores.ts';
import { startRelay, startS3, type Relay, type TestS3 } from '../support/s3.ts';
import { backupsUrl, backupThroughApi, listeningUrl, type BackupAttributes } from '../support/snapshots.ts';

const KIB = 1024;
const MIB = 1024 * KIB;
const ARCHIVE_ENV = { AERIE_BACKUP_FORMAT: 'archive', AERIE_RESTORE_UNDO_BACKUP: 'false' };

interface Suite {
  app: TestApp;
  token: string;
  server: { id: string; identifier: string; volume: string };
}

async function openSuite(env: Record<string, string>): Promise<Suite> {
  const app = await startTestApp({ env });
  const owner = await createUser(app);
  const token = (await createApiKey(app, owner)).token;
  const server = await createServer(app, owner);
  return { app, token, server };
}

/** The volume every backup here is made of: random (incompressible) files, one gzip member per MiB. */
function volumeSpec() {
  return {
    'before.bin': randomBytes(3 * MIB),
    'world/level.dat': randomBytes(2 * MIB + 12_345),
    'world/region/r.0.0.mca': randomBytes(MIB + 777),
    'world/region/r.0.1.mca': 'second region',
    'world/empty/': { dir: true },
    'after.bin': randomBytes(3 * MIB),
  } as const;
}

function list({ app, token, server }: Suite, uuid: string, directory: string) {
  return app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/list?directory=${encodeURIComponent(directory)}`,
    headers: bearer(token),
  });
}

interface Fetched {
  status: number;
  body: Buffer;
  /** The body stopped short: the connection was cut. */
  cut: boolean;
}

/** Asks for one path's signed link, then fetches it over real HTTP (a body cut short is `cut`). */
async function download({ app, token, server }: Suite, uuid: string, file: string): Promise<Fetched> {
  const link = await app.http.inject({
    method: 'GET',
    url: `${backupsUrl(server)}/${uuid}/files/download?file=${encodeURIComponent(file)}`,
    headers: bearer(token),
  });
  expect(link.statusCode, link.body).toBe(200);
  const signed = new URL(link.json<{ attributes: { url: string } }>().attributes.url, 'http://aerie.invalid');
  const url = `${await listeningUrl(app)}${signed.pathname}${signed.search}`;
  // A connection of its own, closed after the response: the app's close never waits on it.
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      const done = (cut: boolean) =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), cut });
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done(!res.complete));
      res.on('error', () => done(true));
      res.on('aborted', () => done(true));
    });
    request.on('error', reject);
  });
}

function catalogDir(app: TestApp, backupId: string): string {
  return path.join(app.config.dataDir, 'cache', 'catalogs', backupId);
}

async function summaryOf(app: TestApp, backupId: string, sha256: string | null): Promise<CatalogSummary> {
  const summary = await readCatalogSummary(catalogDir(app, backupId), sha256);
  expect(summary, 'the catalog is built').not.toBeNull();
  return summary!;
}

/** The members the catalog says a path needs (what a download of it reads). */
async function sliceOf(app: TestApp, backup: { id: string; sha256: string | null }, file: string) {
  const dir = catalogDir(app, backup.id);
  const summary = await summaryOf(app, backup.id, backup.sha256);
  expect(summary.ranges, 'the catalog notes the archive’s members').toBeDefined();
  const page = await readCatalogPage(dir, path.posix.dirname(file), 1);
  const entry = page!.entries.find((candidate) => candidate.name === path.posix.basename(file))!;
  expect(entry.at).toBeDefined();
  const slice = await piecesCovering(dir, summary.ranges!.pieces, { start: entry.at![0], end: entry.at![1] });
  expect(slice).not.toBeNull();
  return slice!;
}

/** Every member of the catalog's table: [offset, length]. */
async function allPieces(app: TestApp, backupId: string): Promise<[number, number][]> {
  const table = await readFile(path.join(catalogDir(app, backupId), PIECES_FILE));
  const pieces: [number, number][] = [];
  for (let at = 0; at < table.length; at += 64)
    pieces.push([Number(table.readBigUInt64LE(at)), Number(table.readBigUInt64LE(at + 8))]);
  return pieces;
}

function bytesOf(slice: ArchiveSlice): { from: number; to: number; length: number } {
  const from = slice.pieces[0]!.offset;
  const last = slice.pieces[slice.pieces.length - 1]!;
  return { from, to: last.offset + last.length, length: last.offset + last.length - from };
}

/** Reads a path straight through archivePathStream, as a download does: its bytes and the archive bytes the thread read. */
async function readPath(
  input: Parameters<typeof archivePathStream>[0],
): Promise<{ bytes: Buffer; read: number }> {
  let read = -1;
  const chunks: Buffer[] = [];
  await pipeline(
    archivePathStream(input, (bytes) => (read = bytes)),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk);
        done();
      },
    }),
  );
  return { bytes: Buffer.concat(chunks), read };
}

/** A .tar.gz's paths and file contents, read with GNU tar. */
async function untar(work: string, tarGz: Buffer): Promise<{ listed: string[]; files: Map<string, Buffer> }> {
  const dir = await mkdtemp(path.join(work, 'untar-'));
  const file = path.join(dir, 'in.tar.gz');
  await writeFile(file, tarGz);
  const listed = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' })
    .split('\n')
    .filter((name) => name !== '')
    .sort();
  const out = path.join(dir, 'out');
  await mkdir(out);
  execFileSync('tar', ['-xzf', file, '-C', out]);
  const files = new Map<string, Buffer>();
  for (const name of listed.filter((name) => !name.endsWith('/')))
    files.set(name, await readFile(path.join(out, name)));
  return { listed, files };
}

let work: string;

beforeAll(async () => {
  work = await tempDir('aerie-browse-ranges-');
});

afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe('an archive backup on local disk, one path at a time', () => {
  let suite: Suite;
  let backup: BackupAttributes;
  let archive: string;
  let original: Buffer;
  const spec = volumeSpec();
  const level = spec['world/level.dat'];

  beforeAll(async () => {
    suite = await openSuite(ARCHIVE_ENV);
    await writeTree(suite.server.volume, spec);
    backup = await backupThroughApi(suite.app, suite.token, suite.server, { name: 'ranges' });
    expect(backup.format).toBe('archive');
    archive = storedArchive(suite.app, suite.server.id, backup.uuid);
    original = await readFile(archive);
    // The catalog is built (from the whole archive) by the first listing.
    expect((await list(suite, backup.uuid, '/')).statusCode).toBe(200);
  });

  afterAll(async () => suite?.app.close());

  const record = () => ({ id: backup.uuid, sha256: backup.sha256_hash });

  it('notes one member per MiB of tar, and where each entry is', async () => {
    const summary = await summaryOf(suite.app, backup.uuid, record().sha256);
    const pieces = await allPieces(suite.app, backup.uuid);
    expect(summary.ranges!.pieces).toBe(pieces.length);
    expect(pieces.length).toBeGreaterThanOrEqual(9);
    // Back to back from the first byte to the last: the whole file.
    let next = 0;
    for (const [offset, length] of pieces) {
      expect(offset).toBe(next);
      next = offset + length;
    }
    expect(next).toBe(original.length);
    expect(summary.ranges!.tarBytes).toBeGreaterThan(9 * MIB);
  });

  it('downloads one file reading only the members that hold it: everything else may be garbage', async () => {
    const slice = await sliceOf(suite.app, record(), '/world/level.dat');
    const pieces = await allPieces(suite.app, backup.uuid);
    const largest = Math.max(...pieces.map(([, length]) => length));
    const needed = bytesOf(slice);
    console.info(
      `one file of ${level.length} bytes: ${needed.length} of the archive's ${original.length} bytes read (${slice.pieces.length} of ${pieces.length} members)`,
    );
    expect(needed.length).toBeLessThanOrEqual(level.length + 2 * largest);
    // What the thread reads, and says it read.
    const direct = await readPath({
      archive,
      rel: 'world/level.dat',
      kind: 'file',
      sha256: record().sha256,
      slice,
    });
    expect(direct.bytes.equals(level)).toBe(true);
    expect(direct.read).toBeGreaterThan(0);
    expect(direct.read).toBeLessThanOrEqual(needed.length);

    // Everything outside those members overwritten: the download is still exact.
    const poisoned = randomBytes(original.length);
    original.copy(poisoned, needed.from, needed.from, needed.to);
    await writeFile(archive, poisoned);
    try {
      const res = await download(suite, backup.uuid, '/world/level.dat');
      expect(res.status, res.body.subarray(0, 300).toString()).toBe(200);
      expect(res.cut).toBe(false);
      expect(res.body.equals(level)).toBe(true);
      // A file elsewhere in the archive is now garbage: refused, never served.
      const other = await download(suite, backup.uuid, '/before.bin');
      expect(other.status === 200 && !other.cut && other.body.equals(spec['before.bin'])).toBe(false);
      expect(other.status).toBe(400);
      expect(other.body.toString()).toContain('does not match its checksum');
    } finally {
      await writeFile(archive, original);
    }
  });

  it('downloads a directory as a .tar.gz of exactly what it holds, from its members alone', async () => {
    const slice = await sliceOf(suite.app, record(), '/world');
    const needed = bytesOf(slice);
    const poisoned = randomBytes(original.length);
    original.copy(poisoned, needed.from, needed.from, needed.to);
    await writeFile(archive, poisoned);
    try {
      const res = await download(suite, backup.uuid, '/world');
      expect(res.status).toBe(200);
      expect(res.cut).toBe(false);
      const { listed, files } = await untar(work, res.body);
      expect(listed).toEqual(['empty/', 'level.dat', 'region/', 'region/r.0.0.mca', 'region/r.0.1.mca']);
      expect(files.get('level.dat')!.equals(level)).toBe(true);
      expect(files.get('region/r.0.0.mca')!.equals(spec['world/region/r.0.0.mca'])).toBe(true);
      expect(files.get('region/r.0.1.mca')!.toString()).toBe('second region');
      const empty = await download(suite, backup.uuid, '/world/empty');
      expect(empty.status).toBe(200);
      expect((await untar(work, empty.body)).listed).toEqual([]);
    } finally {
      await writeFile(archive, original);
    }
  });

  it('never serves a whole file from a damaged member: cut part-way, or refused before a byte', async () => {
    const slice = await sliceOf(suite.app, record(), '/world/level.dat');
    expect(slice.pieces.length).toBeGreaterThanOrEqual(3);
    try {
      // A member in the middle of the file: the first bytes go out, then the connection is cut.
      const middle = slice.pieces[Math.floor(slice.pieces.length / 2)]!;
      await flipBits(archive, middle.offset + Math.floor(middle.length / 2));
      const cut = await download(suite, backup.uuid, '/world/level.dat');
      expect(cut.status === 200 && !cut.cut && cut.body.length === level.length).toBe(false);
      expect(cut.body.length).toBeLessThan(level.length);
      await writeFile(archive, original);

      // The first member: nothing is sent, the error says why.
      const first = slice.pieces[0]!;
      await flipBits(archive, first.offset + first.length - 20);
      const refused = await download(suite, backup.uuid, '/world/level.dat');
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body.toString())).toMatchObject({
        errors: [
          {
            code: 'DisplayException',
            detail: 'This file cannot be downloaded: the backup archive does not match its checksum.',
          },
        ],
      });
    } finally {
      await writeFile(archive, original);
    }
    const whole = await download(suite, backup.uuid, '/world/level.dat');
    expect(whole.body.equals(level)).toBe(true);
  });

  it('never serves a file from another archive put in its place', async () => {
    // Another backup of the same server, the volume changed since: a valid archive, not this one.
    await writeFile(path.join(suite.server.volume, 'world/level.dat'), randomBytes(level.length));
    const other = await backupThroughApi(suite.app, suite.token, suite.server, { name: 'other' });
    const impostor = await readFile(storedArchive(suite.app, suite.server.id, other.uuid));
    await writeFile(archive, impostor);
    try {
      for (const file of ['/world/level.dat', '/world', '/after.bin']) {
        const res = await download(suite, backup.uuid, file);
        expect(res.status === 200 && !res.cut, `${file} was served whole`).toBe(false);
      }
    } finally {
      await writeFile(archive, original);
      await writeFile(path.join(suite.server.volume, 'world/level.dat'), level);
    }
  });

  it('restores one directory from its members alone, the rest of the volume left as it is', async () => {
    const stored = await new BackupRepository(suite.app.db.kysely).findOfServer(suite.server.id, backup.uuid);
    const slices = await suite.app.services.backupFiles.restoreSlices(stored!, ['world/region']);
    expect(slices).not.toBeNull();
    const needed = slices!.flatMap((slice) => slice.pieces);
    const neededBytes = needed.reduce((sum, piece) => sum + piece.length, 0);
    console.info(
      `partial restore of world/region: ${neededBytes} of the archive's ${original.length} bytes read`,
    );
    expect(neededBytes).toBeLessThan(original.length / 2);
    // Everything but those members overwritten: the restore still brings back exact files.
    const poisoned = randomBytes(original.length);
    for (const piece of needed)
      original.copy(poisoned, piece.offset, piece.offset, piece.offset + piece.length);
    await writeFile(archive, poisoned);
    const volume = suite.server.volume;
    try {
      await writeFile(path.join(volume, 'world/region/r.0.0.mca'), 'replaced since');
      await writeFile(path.join(volume, 'after.bin'), 'moved on');
      const before = await contents(volume);
      const res = await postRestore(suite.app, suite.token, suite.server.identifier, backup.uuid, {
        files: ['/world/region'],
        undo_backup: false,
      });
      expect(res.statusCode, res.body).toBe(204);
      await drainJobs(suite.app);
      const jobs = await restoreJobsOf(suite.app, suite.server.id);
      expect(jobs.map((job) => [job.state, job.error])).toEqual([['succeeded', null]]);
      expect(
        (await readFile(path.join(volume, 'world/region/r.0.0.mca'))).equals(spec['world/region/r.0.0.mca']),
      ).toBe(true);
      const after = await contents(volume);
      for (const [rel, node] of Object.entries(before))
        if (!rel.startsWith('world/region')) expect(after[rel], rel).toEqual(node);
      expect(await readFile(path.join(volume, 'after.bin'), 'utf8')).toBe('moved on');

      // A damaged member among them: the restore fails and changes nothing.
      await writeFile(path.join(volume, 'world/region/r.0.0.mca'), 'replaced again');
      const last = needed[needed.length - 1]!;
      await flipBits(archive, last.offset + 40);
      const unchanged = await contents(volume);
      const again = await postRestore(suite.app, suite.token, suite.server.identifier, backup.uuid, {
        files: ['/world/region'],
        undo_backup: false,
      });
      expect(again.statusCode, again.body).toBe(204);
      await drainJobs(suite.app);
      const failed = (await restoreJobsOf(suite.app, suite.server.id))[1]!;
      expect(failed.state).toBe('failed');
      expect(failed.error).toMatch(/does not match its checksum/);
      expect(await contents(volume)).toEqual(unchanged);
    } finally {
      await writeFile(archive, original);
      await writeTree(volume, spec);
    }
  });

  it('still downloads from a catalog made before members were noted: the archive read whole', async () => {
    const dir = catalogDir(suite.app, backup.uuid);
    const summaryFile = path.join(dir, 'catalog.json');
    const saved = await readFile(summaryFile, 'utf8');
    const old = JSON.parse(saved) as CatalogSummary;
    delete old.ranges;
    await writeFile(summaryFile, JSON.stringify(old));
    const table = await readFile(path.join(dir, PIECES_FILE));
    await rm(path.join(dir, PIECES_FILE));
    try {
      const file = await download(suite, backup.uuid, '/world/level.dat');
      expect(file.status).toBe(200);
      expect(file.body.equals(level)).toBe(true);
      const directory = await download(suite, backup.uuid, '/world/region');
      expect((await untar(work, directory.body)).listed).toEqual(['r.0.0.mca', 'r.0.1.mca']);
      // Read whole: a damaged byte far from the file is noticed (its checksum), and the file is cut.
      await flipBits(archive, original.length - 100);
      const damaged = await download(suite, backup.uuid, '/world/level.dat');
      expect(damaged.status === 200 && !damaged.cut && damaged.body.length === level.length).toBe(false);
    } finally {
      await writeFile(archive, original);
      await writeFile(summaryFile, saved);
      await writeFile(path.join(dir, PIECES_FILE), table);
    }
  });
});

describe('a foreign .tar.gz of one gzip member (GNU tar), planted as an archive backup', () => {
  let suite: Suite;
  let backup: Backup;
  let bytes: Buffer;
  const spec = volumeSpec();

  beforeAll(async () => {
    suite = await openSuite(ARCHIVE_ENV);
    const source = await mkdtemp(path.join(work, 'foreign-'));
    await writeTree(source, spec);
    const file = path.join(work, 'foreign.tar.gz');
    execFileSync('tar', ['-czf', file, '-C', source, 'before.bin', 'world', 'after.bin']);
    bytes = await readFile(file);
    backup = await plantArchive(suite.app, suite.server.id, bytes, { files: 4, name: 'foreign' });
  });

  afterAll(async () => suite?.app.close());

  it('lists, and downloads a file and a directory exactly, reading from the start only as far as the path', async () => {
    const root = await list(suite, backup.id, '/');
    expect(root.statusCode, root.body).toBe(200);
    expect(
      root.json<{ data: { attributes: { name: string } }[] }>().data.map((item) => item.attributes.name),
    ).toEqual(['world', 'after.bin', 'before.bin']);
    const summary = await summaryOf(suite.app, backup.id, backup.sha256);
    // One member, read as a stream: pieces of a MiB, inflation beginning at the first only.
    expect(summary.ranges!.pieces).toBe(Math.ceil(bytes.length / PIECE_BYTES));
    const table = await readFile(path.join(catalogDir(suite.app, backup.id), PIECES_FILE));
    const entries = Array.from({ length: table.length / 64 }, (_, i) => table[i * 64 + 56]);
    expect(entries).toEqual(entries.map((_, i) => (i === 0 ? 1 : 0)));

    const file = await download(suite, backup.id, '/world/level.dat');
    expect(file.status).toBe(200);
    expect(file.body.equals(spec['world/level.dat'])).toBe(true);
    const directory = await download(suite, backup.id, '/world/region');
    expect((await untar(work, directory.body)).listed).toEqual(['r.0.0.mca', 'r.0.1.mca']);

    // The first file: read from the start, and no further than the file.
    const first = await readPath({
      archive: storedArchive(suite.app, suite.server.id, backup.id),
      rel: 'before.bin',
      kind: 'file',
      sha256: backup.sha256,
      slice: await sliceOf(suite.app, backup, '/before.bin'),
    });
    expect(first.bytes.equals(spec['before.bin'])).toBe(true);
    console.info(
      `foreign one-member archive of ${bytes.length} bytes: ${first.read} read for its first file`,
    );
    // The pieces up to the file's end, and at most one more read ahead (in reads of 256 KiB).
    expect(first.read).toBeLessThanOrEqual(spec['before.bin'].length + 2 * PIECE_BYTES + 256 * KIB);
    expect(first.read).toBeLessThan(bytes.length);
  });

  it('never serves a whole file once a piece before it is damaged', async () => {
    const archive = storedArchive(suite.app, suite.server.id, backup.id);
    await flipBits(archive, 2 * PIECE_BYTES + 5);
    try {
      const res = await download(suite, backup.id, '/world/level.dat');
      expect(res.status === 200 && !res.cut && res.body.equals(spec['world/level.dat'])).toBe(false);
    } finally {
      await writeFile(archive, bytes);
    }
  });
});

describe('an archive of long names and extended headers, in small gzip members', () => {
  let suite: Suite;
  const deep = `deep/${'d'.repeat(90)}/${'n'.repeat(60)}.bin`; // over 100 bytes: a pax `path`
  const gnu = `deep/${'g'.repeat(150)}.bin`; // a GNU long-name header before it
  const content = {
    first: randomBytes(200 * KIB),
    deep: randomBytes(150 * KIB),
    gnu: randomBytes(90 * KIB),
    last: randomBytes(200 * KIB),
  };

  /** The archive, a gzip member per 64 KiB of tar, after a global header saying `global`. */
  function archiveOf(global: Record<string, string>): Buffer {
    const tar = rawTar([
      {
        path: 'pax_global_header',
        type: 'g',
        content: Buffer.concat(Object.entries(global).map(([key, value]) => paxRecord(key, value))),
      },
      { path: 'first.bin', content: content.first },
      { path: 'deep/', type: '5' },
      { path: deep, content: content.deep, longPath: 'pax', pax: { 'SCHILY.xattr.user.note': 'ünïcode' } },
      { path: '././@LongLink', type: 'L', content: `${gnu}\0` },
      { path: gnu.slice(0, 99), content: content.gnu },
      { path: 'last.bin', content: content.last },
    ]);
    const members: Buffer[] = [];
    for (let at = 0; at < tar.length; at += 64 * KIB) members.push(gzipSync(tar.subarray(at, at + 64 * KIB)));
    return Buffer.concat(members);
  }

  beforeAll(async () => {
    suite = await openSuite(ARCHIVE_ENV);
  });

  afterAll(async () => suite?.app.close());

  it('places every entry, and downloads each from its own members', async () => {
    const bytes = archiveOf({ comment: 'made by hand' });
    const backup = await plantArchive(suite.app, suite.server.id, bytes, { files: 4, name: 'foreign' });
    expect((await list(suite, backup.id, '/deep')).statusCode).toBe(200);
    const summary = await summaryOf(suite.app, backup.id, backup.sha256);
    expect(summary.ranges).toBeDefined();
    for (const [file, expected] of [
      ['/first.bin', content.first],
      [`/${deep}`, content.deep],
      [`/${gnu}`, content.gnu],
      ['/last.bin', content.last],
    ] as const) {
      const res = await download(suite, backup.id, file);
      expect(res.status, file).toBe(200);
      expect(res.body.equals(expected), file).toBe(true);
      const slice = await sliceOf(suite.app, backup, file);
      expect(bytesOf(slice).length, file).toBeLessThan(expected.length + 3 * 64 * KIB);
    }
    const directory = await download(suite, backup.id, '/deep');
    const { listed, files } = await untar(work, directory.body);
    // What the archive names (the directory above `deep` is only implied: not written).
    expect(listed).toEqual([deep, gnu].map((name) => name.slice('deep/'.length)).sort());
    expect(files.get(gnu.slice('deep/'.length))!.equals(content.gnu)).toBe(true);
  });

  it('reads the archive whole when a global header changes how later entries read', async () => {
    const bytes = archiveOf({ mtime: '1700000000', comment: 'dated' });
    const backup = await plantArchive(suite.app, suite.server.id, bytes, { files: 4, name: 'foreign' });
    expect((await list(suite, backup.id, '/')).statusCode).toBe(200);
    expect((await summaryOf(suite.app, backup.id, backup.sha256)).ranges).toBeUndefined();
    const res = await download(suite, backup.id, `/${deep}`);
    expect(res.status).toBe(200);
    expect(res.body.equals(content.deep)).toBe(true);
  });
});

describe('an archive backup in an S3-compatible store, one path at a time', () => {
  let s3: TestS3;
  let relay: Relay;
  let suite: Suite;
  let backup: BackupAttributes;
  const spec = volumeSpec();
  const level = spec['world/level.dat'];

  beforeAll(async () => {
    s3 = await startS3();
    relay = await startRelay(s3.port);
    suite = await openSuite({ ...s3.env(relay.endpoint), ...ARCHIVE_ENV });
    await writeTree(suite.server.volume, spec);
    backup = await backupThroughApi(suite.app, suite.token, suite.server, { name: 's3 ranges' });
    expect(await s3.exists(storedKey(suite.server.id, backup.uuid, 'archive'))).toBe(true);
    expect((await list(suite, backup.uuid, '/')).statusCode).toBe(200);
  });

  afterAll(async () => {
    await suite?.app.close();
    await relay?.close();
    await s3?.close();
  });

  /** The GETs of the backup's object since `mark`, with the range each asked for. */
  function archiveGets(mark: number): { range: { from: number; to: number } | null }[] {
    const key = `/${s3.bucket}/${storedKey(suite.server.id, backup.uuid, 'archive')}`;
    return relay.heads
      .slice(mark)
      .filter((head) => head.startsWith(`get ${key.toLowerCase()}`))
      .map((head) => {
        const match = /\r\nrange: bytes=(\d+)-(\d+)\r\n/.exec(head);
        return { range: match === null ? null : { from: Number(match[1]), to: Number(match[2]) } };
      });
  }

  it('downloads one file with one ranged GET of no more than its members', async () => {
    const sha256 = backup.sha256_hash;
    const slice = await sliceOf(suite.app, { id: backup.uuid, sha256 }, '/world/level.dat');
    const largest = Math.max(...(await allPieces(suite.app, backup.uuid)).map(([, length]) => length));
    const mark = relay.heads.length;
    const res = await download(suite, backup.uuid, '/world/level.dat');
    expect(res.status).toBe(200);
    expect(res.body.equals(level)).toBe(true);
    const gets = archiveGets(mark);
    expect(gets).toHaveLength(1);
    const { range } = gets[0]!;
    expect(range).not.toBeNull();
    const fetched = range!.to - range!.from + 1;
    console.info(
      `S3: one file of ${level.length} bytes, one GET of ${fetched} of the archive's ${backup.bytes} bytes`,
    );
    expect(range!.from).toBe(bytesOf(slice).from);
    expect(fetched).toBe(bytesOf(slice).length);
    expect(fetched).toBeLessThanOrEqual(level.length + 2 * largest);
  });

  it('restores one path reading only ranges of the archive', async () => {
    await writeFile(path.join(suite.server.volume, 'world/level.dat'), 'replaced since');
    const mark = relay.heads.length;
    const res = await postRestore(suite.app, suite.token, suite.server.identifier, backup.uuid, {
      files: ['/world/level.dat'],
      undo_backup: false,
    });
    expect(res.statusCode, res.body).toBe(204);
    await drainJobs(suite.app);
    const jobs = await restoreJobsOf(suite.app, suite.server.id);
    expect(jobs.map((job) => job.state)).toEqual(['succeeded']);
    expect((await readFile(path.join(suite.server.volume, 'world/level.dat'))).equals(level)).toBe(true);
    const gets = archiveGets(mark);
    expect(gets.length).toBeGreaterThanOrEqual(1);
    expect(gets.filter((get) => get.range === null)).toEqual([]);
    const fetched = gets.reduce((sum, get) => sum + get.range!.to - get.range!.from + 1, 0);
    console.info(
      `S3: partial restore of one file of ${level.length} bytes: ${fetched} of ${backup.bytes} bytes asked for`,
    );
    expect(fetched).toBeLessThan(level.length + 3 * MIB);
  });

  it('downloads a directory as a .tar.gz of exactly what it holds, with one ranged GET', async () => {
    const mark = relay.heads.length;
    const res = await download(suite, backup.uuid, '/world/region');
    expect(res.status).toBe(200);
    const { listed, files } = await untar(work, res.body);
    expect(listed).toEqual(['r.0.0.mca', 'r.0.1.mca']);
    expect(files.get('r.0.0.mca')!.equals(spec['world/region/r.0.0.mca'])).toBe(true);
    const gets = archiveGets(mark);
    expect(gets).toHaveLength(1);
    const fetched = gets[0]!.range!.to - gets[0]!.range!.from + 1;
    expect(fetched).toBeLessThan(spec['world/region/r.0.0.mca'].length + 3 * MIB);
    expect(fetched).toBeLessThan(backup.bytes / 2);
  });
});

describe('telling gzip members apart', () => {
  /** The tar GzipMembers gives for `bytes`, its pieces, or the error readArchive fails with. */
  async function through(bytes: Buffer, inflate: 'members' | 'gunzip') {
    const stage = new GzipMembers();
    const tar: Buffer[] = [];
    const entries: string[] = [];
    try {
      // In chunks of 64 KiB, as a file or an S3 object is read.
      const chunks = Array.from({ length: Math.ceil(bytes.length / (64 * KIB)) }, (_, i) =>
        bytes.subarray(i * 64 * KIB, (i + 1) * 64 * KIB),
      );
      await readArchive(
        Readable.from(chunks),
        async (entry) => {
          entries.push(entry.rel);
          await entry.readBody((chunk) => void tar.push(Buffer.from(chunk)));
        },
        inflate === 'members' ? { inflate: stage } : {},
      );
      return { entries, content: Buffer.concat(tar), pieces: stage.pieces, error: null };
    } catch (error) {
      return { entries, content: null, pieces: stage.pieces, error: (error as Error).message };
    }
  }

  function tarOf(files: Record<string, Buffer>): Buffer {
    const dir = path.join(work, `tar-${randomUUID()}`);
    mkdirSync(dir);
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
    return execFileSync('tar', ['-cf', '-', '-C', dir, ...Object.keys(files)], { maxBuffer: 64 * MIB });
  }

  it('reads members with a name, a comment, extra fields and a header CRC, as gunzip does', async () => {
    const tar = tarOf({ 'a.bin': randomBytes(300 * KIB), 'b.txt': Buffer.from('b'.repeat(5000)) });
    const parts = [tar.subarray(0, 100_000), tar.subarray(100_000, 250_000), tar.subarray(250_000)];
    const members = [
      gzipSync(parts[0]!),
      withHeaderFields(gzipSync(parts[1]!, { level: constants.Z_BEST_SPEED })),
      gzipSync(parts[2]!),
    ];
    const bytes = Buffer.concat([...members, Buffer.alloc(7)]); // trailing zeros, which gunzip ignores
    const plain = await through(bytes, 'gunzip');
    const split = await through(bytes, 'members');
    expect(plain.error).toBeNull();
    expect(split.error).toBeNull();
    expect(split.entries).toEqual(plain.entries);
    expect(split.content!.equals(plain.content!)).toBe(true);
    expect(split.pieces.map((piece) => [piece.offset, piece.length, piece.entry])).toEqual([
      [0, members[0]!.length, true],
      [members[0]!.length, members[1]!.length, true],
      [members[0]!.length + members[1]!.length, members[2]!.length, true],
    ]);
    expect(split.pieces.map((piece) => piece.tarOffset)).toEqual([0, 100_000, 250_000]);
  });

  it('fails where gunzip fails, with the same words', async () => {
    const member = gzipSync(tarOf({ 'a.bin': randomBytes(10 * KIB) }));
    const crcBroken = Buffer.from(member);
    crcBroken[crcBroken.length - 6]! ^= 0xff;
    const cases = {
      'trailing garbage': Buffer.concat([member, Buffer.from('garbage')]),
      truncated: member.subarray(0, member.length - 3),
      'bad CRC': crcBroken,
      'not gzip': tarOf({ 'a.txt': Buffer.from('plain') }),
      empty: Buffer.alloc(0),
      'unknown method': Buffer.concat([member, Buffer.from([0x1f, 0x8b, 0x07, 0])]),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      const plain = await through(bytes, 'gunzip');
      const split = await through(bytes, 'members');
      expect(plain.error, name).not.toBeNull();
      expect(split.error, name).toBe(plain.error);
    }
  });

  it('reads a member too big to take whole as a stream, in pieces of a MiB', async () => {
    const tar = tarOf({ 'big.bin': randomBytes(6 * MIB) });
    const bytes = gzipSync(tar, { level: 1 });
    const split = await through(bytes, 'members');
    expect(split.error).toBeNull();
    expect(split.entries).toEqual(['big.bin']);
    expect(split.pieces.map((piece) => piece.entry)).toEqual(
      Array.from({ length: Math.ceil(bytes.length / PIECE_BYTES) }, (_, i) => i === 0),
    );
    expect(split.pieces.reduce((sum, piece) => sum + piece.length, 0)).toBe(bytes.length);
  });
});

/** A gzip member with FEXTRA, FNAME, FCOMMENT and FHCRC set in its header (the same deflate data). */
function withHeaderFields(member: Buffer): Buffer {
  const extra = Buffer.from([4, 0, 0x41, 0x42, 0x43, 0x44]); // XLEN 4, then 4 bytes
  const name = Buffer.from('part.tar\0');
  const comment = Buffer.from('a comment\0');
  const head = Buffer.from(member.subarray(0, 10));
  head[3] = 0x02 | 0x04 | 0x08 | 0x10;
  const header = Buffer.concat([head, extra, name, comment]);
  const crc = Buffer.alloc(2);
  crc.writeUInt16LE(crc32Of(header) & 0xffff);
  return Buffer.concat([header, crc, member.subarray(10)]);
}

function crc32Of(bytes: Buffer): number {
  return gzipSync(bytes).readUInt32LE(gzipSync(bytes).length - 8);
}
