/**
 * extractEntries fed by hand-made entries, as a source other than an archive (a snapshot) feeds
 * it: content in chunks, directory modes and times, skipped kinds, the disk limit, content longer
 * than declared; the path rules every source shares (checkEntryPath, EntryPaths); and
 * stageRestore staging through such a source.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkEntryPath, EntryPaths, type EntryKind } from '../../src/storage/archive/archive-reader.ts';
import { ArchiveError, type ArchiveFailure, type Progress } from '../../src/storage/archive/archive.types.ts';
import {
  ENTRY_COST,
  extractEntries,
  type EntryFeed,
  type ExtractEntry,
} from '../../src/storage/archive/extract.ts';
import {
  restorePaths,
  savedReport,
  stageRestore,
  type StageSource,
} from '../../src/storage/volumes/restore-files.ts';

const MTIME = new Date('2024-03-01T12:00:00Z');
const DIR_MTIME = new Date('2023-07-15T08:30:00Z');
const UUID = '3f1c9a2e-7b44-4d0a-9e61-2c8b5d0f4a17';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function workspace(): { root: string; dest: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-entries-'));
  roots.push(root);
  const dest = path.join(root, 'dest');
  fs.mkdirSync(dest);
  return { root, dest };
}

interface Made {
  entry: ExtractEntry;
  /** Whether the extraction read the body, and whether it discarded it. */
  seen: { read: boolean; discarded: boolean };
}

/** An entry whose content is `chunks`, handed on one at a time (each after a pause). */
function made(
  rel: string,
  kind: EntryKind,
  fields: Partial<Pick<ExtractEntry, 'size' | 'mode' | 'mtime' | 'atime' | 'typeLabel'>> = {},
  chunks: (string | Buffer)[] = [],
): Made {
  const body = chunks.map((chunk) => Buffer.from(chunk));
  const seen = { read: false, discarded: false };
  const entry: ExtractEntry = {
    rel,
    kind,
    size: body.reduce((sum, chunk) => sum + chunk.length, 0),
    mode: undefined,
    mtime: MTIME,
    atime: undefined,
    ...fields,
    readBody: async (onChunk) => {
      seen.read = true;
      for (const chunk of body) {
        await new Promise((resolve) => setImmediate(resolve));
        await onChunk(chunk);
      }
    },
    discard: () => (seen.discarded = true),
  };
  return { entry, seen };
}

/** Feeds `entries` in order, reporting 1000 bytes read from storage before each. */
function feedOf(entries: Made[]): EntryFeed {
  return async (onEntry, onRead) => {
    for (const { entry } of entries) {
      onRead(1000);
      await onEntry(entry);
    }
  };
}

async function failure(promise: Promise<unknown>): Promise<ArchiveFailure> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArchiveError);
  return (err as ArchiveError).reason;
}

function thrown(call: () => unknown): ArchiveFailure | null {
  try {
    call();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ArchiveError);
    return (err as ArchiveError).reason;
  }
}

describe('extractEntries', () => {
  it('writes files handed on in several chunks, with their modes and times', async () => {
    const { dest } = workspace();
    const progress: Progress[] = [];
    const report = await extractEntries(
      feedOf([
        made('notes.txt', 'file', { mode: 0o640, atime: DIR_MTIME }, ['hel', 'lo ', 'world']),
        made('data/blob.bin', 'file', { mode: undefined }, [Buffer.alloc(70_000, 1), Buffer.alloc(5, 2)]),
        made('empty', 'file', {}, []),
      ]),
      dest,
      { maxBytes: null, progressIntervalMs: 0 },
      (p) => progress.push({ ...p }),
    );
    // Taken before the content is read, which may move the atime (relatime).
    const notes = fs.statSync(path.join(dest, 'notes.txt'));
    expect(notes.mode & 0o777).toBe(0o640);
    expect(notes.mtime.getTime()).toBe(MTIME.getTime());
    expect(notes.atime.getTime()).toBe(DIR_MTIME.getTime());
    expect(fs.readFileSync(path.join(dest, 'notes.txt'), 'utf8')).toBe('hello world');
    expect(fs.readFileSync(path.join(dest, 'data/blob.bin'))).toEqual(
      Buffer.concat([Buffer.alloc(70_000, 1), Buffer.alloc(5, 2)]),
    );
    expect(fs.readFileSync(path.join(dest, 'empty'))).toHaveLength(0);
    expect(fs.statSync(path.join(dest, 'data/blob.bin')).mode & 0o777).toBe(0o644);
    // 'data' was made for the file under it, and counted.
    expect(report).toEqual({ files: 3, directories: 1, bytes: 11 + 70_005, skipped: [] });
    expect(report.archiveSha256).toBeUndefined();
    expect(progress.at(-1)).toEqual({ files: 3, bytes: 70_016, archiveBytes: 3000 });
  });

  it('applies directory modes and mtimes once their content is written', async () => {
    const { dest } = workspace();
    const report = await extractEntries(
      feedOf([
        made('world', 'directory', { mode: 0o750, mtime: DIR_MTIME }),
        made('world/region', 'directory', { mode: 0o500, mtime: DIR_MTIME }),
        made('world/region/r.0.0.mca', 'file', {}, ['region', ' data']),
        made('world/level.dat', 'file', {}, ['level']),
      ]),
      dest,
      { maxBytes: null },
    );
    expect(report).toMatchObject({ files: 2, directories: 2, bytes: 16, skipped: [] });
    const world = fs.statSync(path.join(dest, 'world'));
    // Written into after it was made, yet it has its own mtime: applied last.
    expect(world.mode & 0o777).toBe(0o750);
    expect(world.mtime.getTime()).toBe(DIR_MTIME.getTime());
    const region = fs.statSync(path.join(dest, 'world/region'));
    // Owner rwx is always kept, so the tree can be merged and removed.
    expect(region.mode & 0o777).toBe(0o700);
    expect(region.mtime.getTime()).toBe(DIR_MTIME.getTime());
    expect(fs.readFileSync(path.join(dest, 'world/region/r.0.0.mca'), 'utf8')).toBe('region data');
  });

  it('reports links and other kinds as skipped and never creates them', async () => {
    const { dest } = workspace();
    const link = made('server.jar', 'symlink', { size: 0 });
    const socket = made('run/ctl', 'other', { typeLabel: 'socket' });
    const unnamed = made('what', 'other');
    const report = await extractEntries(feedOf([link, made('run', 'directory'), socket, unnamed]), dest, {
      maxBytes: null,
    });
    expect(report.skipped).toEqual([
      { path: 'server.jar', kind: 'symlink', reason: 'symlink entries are not restored' },
      { path: 'run/ctl', kind: 'other', reason: 'unsupported type socket' },
      { path: 'what', kind: 'other', reason: 'other entries are not restored' },
    ]);
    expect(fs.lstatSync(path.join(dest, 'server.jar'), { throwIfNoEntry: false })).toBeUndefined();
    expect(fs.readdirSync(path.join(dest, 'run'))).toEqual([]);
    expect(link.seen).toEqual({ read: false, discarded: true });
    expect(report.files).toBe(0);
  });

  it('refuses a file over the disk limit before reading its content', async () => {
    const { dest } = workspace();
    const big = made('big.bin', 'file', { size: 50_000 }, [Buffer.alloc(50_000)]);
    const reason = await failure(extractEntries(feedOf([big]), dest, { maxBytes: 20_000 }));
    expect(reason).toBe('disk-limit');
    expect(big.seen.read).toBe(false);
  });

  it('charges content longer than declared and refuses it over the disk limit', async () => {
    const { dest } = workspace();
    // Declared small enough to pass the check made up front; the content is not.
    const liar = made('liar.bin', 'file', { size: 10 }, [Buffer.alloc(600), Buffer.alloc(600)]);
    const promise = extractEntries(feedOf([liar]), dest, { maxBytes: ENTRY_COST + 1000 });
    const err = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ArchiveError);
    expect((err as ArchiveError).reason).toBe('disk-limit');
    expect((err as ArchiveError).entry).toBe('liar.bin');
    expect(liar.seen.read).toBe(true);
    expect(fs.statSync(path.join(dest, 'liar.bin')).size).toBe(600);
  });

  it('refuses an entry path that was not checked, writing nothing', async () => {
    const { root, dest } = workspace();
    for (const rel of ['../escape.txt', 'a/../../escape.txt', '/abs.txt', './dot.txt', 'a//b.txt']) {
      const reason = await failure(
        extractEntries(feedOf([made(rel, 'file', {}, ['x'])]), dest, { maxBytes: null }),
      );
      expect(reason).toBe('unsafe-path');
    }
    expect(fs.readdirSync(dest)).toEqual([]);
    expect(fs.readdirSync(root)).toEqual(['dest']);
  });

  it("rejects with the feed's own failure, and stops when aborted", async () => {
    const { dest } = workspace();
    const boom = new Error('chunk store unreachable');
    await expect(extractEntries(() => Promise.reject(boom), dest, { maxBytes: null })).rejects.toBe(boom);
    const controller = new AbortController();
    const stop = new Error('lease lost');
    const second = made('b.txt', 'file', {}, ['b']);
    const feed: EntryFeed = async (onEntry) => {
      await onEntry(made('a.txt', 'file', {}, ['a']).entry);
      controller.abort(stop);
      await onEntry(second.entry);
    };
    await expect(extractEntries(feed, dest, { maxBytes: null, signal: controller.signal })).rejects.toBe(
      stop,
    );
    expect(second.seen.read).toBe(false);
  });
});

describe('checkEntryPath', () => {
  it('normalizes as the archive reader does', () => {
    expect(checkEntryPath('world/level.dat')).toBe('world/level.dat');
    expect(checkEntryPath('/world//./level.dat')).toBe('world/level.dat');
    expect(checkEntryPath('./world/')).toBe('world');
    expect(checkEntryPath('./')).toBe('');
    expect(checkEntryPath('')).toBe('');
    expect(checkEntryPath('a..b/..c/d..')).toBe('a..b/..c/d..');
  });

  it('refuses `..`, NUL bytes, overlong components and overlong paths', () => {
    expect(thrown(() => checkEntryPath('../etc/passwd'))).toBe('unsafe-path');
    expect(thrown(() => checkEntryPath('world/../../etc'))).toBe('unsafe-path');
    expect(thrown(() => checkEntryPath('/..'))).toBe('unsafe-path');
    expect(thrown(() => checkEntryPath('a\0b'))).toBe('unsafe-path');
    expect(thrown(() => checkEntryPath(`dir/${'n'.repeat(256)}`))).toBe('name-too-long');
    // 128 two-byte characters: 256 bytes in 128 characters.
    expect(thrown(() => checkEntryPath('é'.repeat(128)))).toBe('name-too-long');
    expect(checkEntryPath('n'.repeat(255))).toBe('n'.repeat(255));
    const longest = `${'d'.repeat(254)}/`.repeat(16) + 'f'.repeat(4096 - 255 * 16);
    expect(Buffer.byteLength(longest)).toBe(4096);
    expect(checkEntryPath(longest)).toBe(longest);
    expect(thrown(() => checkEntryPath(`${longest}x`))).toBe('name-too-long');
    // Leading slashes do not count: the path is measured as it is restored.
    expect(checkEntryPath(`///${longest}`)).toBe(longest);
  });
});

describe('EntryPaths', () => {
  it('refuses a path under a file, a file over a directory and a directory over a file', () => {
    const paths = new EntryPaths();
    paths.file('server.properties');
    expect(thrown(() => paths.file('server.properties/child'))).toBe('conflict');
    expect(thrown(() => paths.directory('server.properties/sub'))).toBe('conflict');
    expect(thrown(() => paths.directory('server.properties'))).toBe('conflict');
    paths.directory('world');
    expect(thrown(() => paths.file('world'))).toBe('conflict');
    // A directory made for an entry under it counts as one.
    paths.file('plugins/a/config.yml');
    expect(thrown(() => paths.file('plugins/a'))).toBe('conflict');
    expect(thrown(() => paths.file('plugins'))).toBe('conflict');
  });

  it('lets a later file replace a file, and a directory be named twice', () => {
    const paths = new EntryPaths();
    paths.file('a.txt');
    expect(thrown(() => paths.file('a.txt'))).toBeNull();
    paths.directory('d');
    expect(thrown(() => paths.directory('d'))).toBeNull();
    expect(thrown(() => paths.file('d/e/f'))).toBeNull();
    expect(thrown(() => paths.directory('d/e'))).toBeNull();
  });

  it('gives the ArchiveError the archive reader gives', () => {
    const paths = new EntryPaths();
    paths.file('a');
    try {
      paths.file('a/b');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ArchiveError);
      expect((err as ArchiveError).message).toBe('a/b conflicts with another entry of the archive');
      expect((err as ArchiveError).entry).toBe('a/b');
    }
  });
});

describe('stageRestore from a StageSource', () => {
  function volume(): ReturnType<typeof restorePaths> {
    const { root } = workspace();
    const paths = restorePaths(path.join(root, 'volumes'), UUID, 7);
    fs.mkdirSync(paths.volume, { recursive: true, mode: 0o750 });
    fs.chmodSync(paths.volume, 0o750);
    fs.writeFileSync(path.join(paths.volume, 'live-only.txt'), 'kept without truncate');
    fs.writeFileSync(path.join(paths.volume, 'both.txt'), 'live version');
    return paths;
  }

  const source =
    (entries: () => Made[]): StageSource =>
    (staging, limits, onProgress) =>
      extractEntries(feedOf(entries()), staging, limits, onProgress);

  it('stages what the source writes, merges the live volume and saves the report', async () => {
    const paths = volume();
    const progress: Progress[] = [];
    const report = await stageRestore(
      paths,
      source(() => [made('both.txt', 'file', {}, ['from ', 'backup']), made('cfg', 'directory')]),
      { truncate: false, maxBytes: null, progressIntervalMs: 0 },
      (p) => progress.push({ ...p }),
    );
    expect(report).toEqual({ files: 1, directories: 1, bytes: 11, skipped: [] });
    expect(fs.readFileSync(path.join(paths.staging, 'both.txt'), 'utf8')).toBe('from backup');
    expect(fs.readFileSync(path.join(paths.staging, 'live-only.txt'), 'utf8')).toBe('kept without truncate');
    expect(fs.statSync(paths.staging).mode & 0o7777).toBe(0o750);
    expect(progress.at(-1)).toMatchObject({ phase: 'merging', archiveBytes: 2000 });
    expect(fs.existsSync(paths.report)).toBe(true);
    expect(await savedReport(paths)).toBeNull(); // not swapped in yet
  });

  it('removes the staging tree and the report when the source fails', async () => {
    const paths = volume();
    const reason = await failure(
      stageRestore(
        paths,
        source(() => [made('a.txt', 'file', {}, ['a']), made('big', 'file', { size: 1e6 })]),
        { truncate: true, maxBytes: 100_000 },
      ),
    );
    expect(reason).toBe('disk-limit');
    expect(fs.existsSync(paths.staging)).toBe(false);
    expect(fs.existsSync(paths.report)).toBe(false);
    expect(fs.readFileSync(path.join(paths.volume, 'both.txt'), 'utf8')).toBe('live version');
  });
});
