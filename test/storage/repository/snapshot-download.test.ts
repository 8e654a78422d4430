import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ArchiveError } from '../../../src/storage/archive/archive.types.ts';
import { Repository } from '../../../src/storage/repository/repository.ts';
import { LocalRepositoryStore } from '../../../src/storage/repository/repository-store.ts';
import { snapshotTarGzInProcess } from '../../../src/storage/repository/snapshot-download.ts';
import { snapshotTarGz } from '../../../src/storage/repository/snapshot-tar.ts';
import { takeSnapshot } from '../../../src/storage/repository/snapshot-writer.ts';
import { flipByteInData } from '../../support/snapshots.ts';
import { until } from '../../support/wait.ts';
import { growYoungGeneration, youngGenerationMiB } from '../../support/young-generation.ts';

const MiB = 1024 * 1024;
const BACKUP = '5b2e8c1a-9d4f-4e6a-8b3c-2f1d0e9a7c01';
const ENTRY = 'snapshot-download.process';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

interface Made {
  root: string;
  volume: string;
  repository: { kind: 'local'; root: string };
  sha256: string;
  tree: string;
}

/** A volume of random (incompressible) and repetitive files, in a repository of its own. */
async function snapshotOf(files: Record<string, Buffer | string>): Promise<Made> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-snapshot-download-'));
  roots.push(root);
  const volume = path.join(root, 'volume');
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(volume, rel)), { recursive: true });
    fs.writeFileSync(path.join(volume, rel), content);
  }
  const repoDir = path.join(root, 'repository');
  const store = new LocalRepositoryStore(repoDir);
  try {
    const { record, sha256 } = await takeSnapshot(volume, await Repository.open(store), {
      backupId: BACKUP,
      parent: null,
    });
    return { root, volume, repository: { kind: 'local', root: repoDir }, sha256, tree: record.tree };
  } finally {
    await store.close();
  }
}

const VOLUME = {
  'world/region/r.0.0.mca': randomBytes(6 * MiB),
  'world/level.dat': randomBytes(40_000),
  'logs/latest.log': '[12:00:00] [Server thread/INFO]: Player joined the game\n'.repeat(60_000),
  'server.properties': 'motd=download\n',
};

/** The input of a download of the whole of `made`'s snapshot. */
function wholeOf(made: Made) {
  return { repository: made.repository, backupId: BACKUP, sha256: made.sha256, parts: [] };
}

async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The pids of this process's download processes that are running. */
function downloadProcesses(): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
      if (parent !== process.pid || state === 'Z') continue;
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(ENTRY)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe('a snapshot download made in a process of its own', () => {
  it('gives the very bytes a download made in the calling thread gives, which GNU tar reads back', async () => {
    const made = await snapshotOf(VOLUME);
    const apart = await collect((await snapshotTarGzInProcess(wholeOf(made)))!);

    // The same archive from the calling thread (three compression threads there, the process
    // compresses in its own main thread beside one): the members are the same bytes.
    const store = new LocalRepositoryStore(made.repository.root);
    const here = await collect(snapshotTarGz(await Repository.open(store), made.tree)).finally(() =>
      store.close(),
    );
    expect(sha(apart)).toBe(sha(here));

    const file = path.join(made.root, 'download.tar.gz');
    fs.writeFileSync(file, apart);
    const extracted = path.join(made.root, 'extracted');
    fs.mkdirSync(extracted);
    execFileSync('tar', ['-xzf', file, '-C', extracted]);
    for (const [rel, content] of Object.entries(VOLUME))
      expect(fs.readFileSync(path.join(extracted, rel)).equals(Buffer.from(content)), rel).toBe(true);
    await until(() => downloadProcesses().length === 0, { what: 'the process to end with its download' });
  });

  it('sends one directory alone, and says when the snapshot has no such directory', async () => {
    const made = await snapshotOf(VOLUME);
    const base = { repository: made.repository, backupId: BACKUP, sha256: made.sha256 };
    const world = await collect((await snapshotTarGzInProcess({ ...base, parts: ['world'] }))!);
    const file = path.join(made.root, 'world.tar.gz');
    fs.writeFileSync(file, world);
    const listed = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n').sort();
    expect(listed).toEqual(['level.dat', 'region/', 'region/r.0.0.mca']);

    expect(await snapshotTarGzInProcess({ ...base, parts: ['nowhere'] })).toBeNull();
    // A file is no directory.
    expect(await snapshotTarGzInProcess({ ...base, parts: ['server.properties'] })).toBeNull();
  });

  it('refuses a snapshot that is not the backup’s before any byte, as an ArchiveError', async () => {
    const made = await snapshotOf(VOLUME);
    const failure = await snapshotTarGzInProcess({
      repository: made.repository,
      backupId: BACKUP,
      sha256: 'f'.repeat(64),
      parts: [],
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ArchiveError);
    const missing = await snapshotTarGzInProcess({
      repository: made.repository,
      backupId: 'd1a5e0b2-0000-4000-8000-000000000000',
      sha256: null,
      parts: [],
    }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ArchiveError);
    expect((missing as ArchiveError).reason).toBe('not-found');
  });

  it('fails the stream at a damaged chunk, naming the damage, instead of ending it', async () => {
    const made = await snapshotOf(VOLUME);
    await flipByteInData(made.repository.root);
    const stream = (await snapshotTarGzInProcess(wholeOf(made)))!;
    const failure = await collect(stream).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ArchiveError);
    expect((failure as ArchiveError).reason).toBe('corrupt');
    expect((failure as Error).message).toMatch(
      /^the backup's stored data is damaged: .*does not match its hash/,
    );
  });

  it('fails the stream, never ends it, when the process dies part-way', async () => {
    const made = await snapshotOf({ 'big.bin': randomBytes(24 * MiB) });
    const stream = (await snapshotTarGzInProcess(wholeOf(made)))!;
    const [pid] = downloadProcesses();
    expect(pid).toBeDefined();
    let received = 0;
    let killed = false;
    const failure = await (async () => {
      for await (const part of stream) {
        received += (part as Buffer).length;
        if (!killed && received > 2 * MiB) {
          killed = true;
          process.kill(pid!, 'SIGKILL');
        }
      }
    })().catch((error: unknown) => error);
    expect(killed).toBe(true);
    expect(failure).toBeInstanceOf(Error);
    expect(String(failure)).toMatch(/ended \(SIGKILL\) before it finished/);
  });

  it('ends its process when the stream is given up part-way', async () => {
    const made = await snapshotOf({ 'big.bin': randomBytes(24 * MiB) });
    const stream = (await snapshotTarGzInProcess(wholeOf(made)))!;
    expect(downloadProcesses()).toHaveLength(1);
    for await (const part of stream) {
      expect((part as Buffer).length).toBeGreaterThan(0);
      break; // destroys the stream
    }
    await until(() => downloadProcesses().length === 0, { what: 'the process to end' });
  });

  it('gives back the young generation a relay made V8 grow, once the downloads are over', async () => {
    const made = await snapshotOf({ 'big.bin': randomBytes(24 * MiB) });
    // This thread's young generation as a busy server has it; relaying more than 8 MB forces
    // young collections, which would grow it too.
    growYoungGeneration();
    expect(youngGenerationMiB()).toBeGreaterThanOrEqual(8);
    const first = (await snapshotTarGzInProcess(wholeOf(made)))!;
    const second = (await snapshotTarGzInProcess(wholeOf(made)))!;
    const [one, two] = await Promise.all([collect(first), collect(second)]);
    expect(one.length).toBeGreaterThan(16 * MiB);
    expect(sha(two)).toBe(sha(one));
    await until(() => youngGenerationMiB() <= 1, {
      what: 'the young generation to be given back',
      timeoutMs: 5_000,
    });
  });
});
