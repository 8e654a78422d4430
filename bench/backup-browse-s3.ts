/**
 * What one file of a snapshot backup on S3 costs in reads from the bucket, when it is downloaded
 * through its signed link (`GET …/backups/{backup}/files/download?file=/target.bin`) and when it
 * alone is restored (`POST …/backups/{backup}/restore` with `files: ["/target.bin"]`,
 * `undo_backup: false`). The target (the issue): for a 1 MiB file in a 1 GB snapshot, bytes
 * fetched ≤ 2× the file's stored size plus the index.
 *
 * s3rver (the tests' S3-compatible server) runs in this process, with a Koa middleware of the
 * bench's own first in its stack that logs every request and counts the bytes of every response
 * body. The data directory (SQLite) has one server whose volume holds FILES files of MIB MiB of
 * pseudo-random data (AES-CTR of zeros, keyed by the file's name: the same bytes every run) in
 * /data, and /target.bin of MIB MiB; `aerie backup create` (AERIE_BACKUP_STORAGE=s3) snapshots it
 * onto S3, timed. Then `aerie serve`, as production runs it (bundled by scripts/bundle.ts into
 * .bench-dist/backup-browse-s3, removed at the end), answers on a free port (the API's rate limit
 * off) and, `--runs` times (the catalog removed first):
 *   1. the first listing of `/`, which builds the backup's catalog (index, snapshot, trees);
 *   2. the link to /target.bin, then the file through it (checked against its SHA-256);
 *   3. /target.bin deleted from the volume, then restored alone; the wait is until the server's
 *      status clears (polled every 20 ms), and the file is checked;
 *   4. the whole backup through its download link (a .tar.gz made on the fly), for comparison.
 * For each, the bytes read from the bucket by kind: index objects, snapshot record, listings
 * (ListObjectsV2), pack ranges split into the target's chunks, other file chunks and trees (by the
 * index: which blob lies where in each pack). The target's stored size (its chunks' bytes in the
 * packs) comes from the repository itself, read by the bench before anything is measured (with
 * Aerie's own Repository, from src/). Also the server's peak RSS (VmHWM).
 *
 *   node --import tsx bench/backup-browse-s3.ts [--runs 3] [--files 1000] [--mib 1] [--build DIR]
 *     [--log FILE]
 *   bash bench/backup-browse-s3.sh [same options]
 *
 * --log FILE appends every request of every measured operation to FILE (tab-separated:
 * operation, method, key, query, range, status, bytes of the response body). With
 * AERIE_BENCH_MEMORY set, the server's memory is printed after its start and after each operation
 * (see memoryLine).
 * Needs about 2.5 GB free in the temporary directory (the volume, and the bucket's copy).
 */
import { createCipheriv, createHash } from 'node:crypto';
import fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import S3rver from 's3rver';
import { loadConfig } from '../src/config.ts';
import { Repository, snapshotKey } from '../src/storage/repository/repository.ts';
import { openRepositoryStore, s3Repository } from '../src/storage/repository/repository-location.ts';
import {
  aerieEnv,
  buildAerie,
  commandLine,
  httpClient,
  machineLine,
  median,
  mib,
  onExit,
  run,
  setUpData,
  spread,
  startAerie,
  type Served,
} from './backup-browse-support.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    files: { type: 'string', default: '1000' },
    mib: { type: 'string', default: '1' },
    build: { type: 'string' },
    log: { type: 'string' },
  },
});
const RUNS = Number(values.runs);
const FILES = Number(values.files);
const FILE_BYTES = Number(values.mib) * 2 ** 20;
const BUCKET = 'aerie-backups';
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
const TARGET = '/target.bin';

/** The same pseudo-random bytes for the same name, every run. */
function contentOf(name: string): Buffer {
  const key = createHash('sha256').update(name).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(FILE_BYTES)), cipher.final()]);
}

/** A request s3rver answered, and the bytes of its response body. */
interface Logged {
  method: string;
  /** The object's key (no bucket); '' for a request on the bucket (a listing). */
  key: string;
  query: string;
  range: string | undefined;
  status: number;
  bytes: number;
}

interface KoaContext {
  method: string;
  path: string;
  querystring: string;
  headers: Record<string, string | string[] | undefined>;
  status: number;
  res: ServerResponse;
}

/** Logs into `log` every request and the bytes of its response body, as they are written. */
function countingMiddleware(log: Logged[]) {
  const size = (chunk: unknown, encoding?: unknown): number =>
    typeof chunk === 'string'
      ? Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
      : chunk instanceof Uint8Array
        ? chunk.length
        : 0;
  return async (ctx: KoaContext, next: () => Promise<void>): Promise<void> => {
    const res = ctx.res;
    let bytes = 0;
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      bytes += size(chunk, rest[0]);
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (typeof chunk !== 'function') bytes += size(chunk, rest[0]);
      return end(chunk, ...rest);
    }) as typeof res.end;
    const rel = decodeURIComponent(ctx.path).replace(/^\/+/, '');
    const slash = rel.indexOf('/');
    const entry = {
      method: ctx.method,
      key: slash === -1 ? '' : rel.slice(slash + 1),
      query: ctx.querystring,
      range: typeof ctx.headers.range === 'string' ? ctx.headers.range : undefined,
    };
    res.once('close', () => log.push({ ...entry, status: res.statusCode, bytes }));
    await next();
  };
}

/** Where each blob lies in its pack, and the target's chunks: to tell what a pack range held. */
interface Layout {
  prefix: string;
  /** By pack id: the blobs, by offset. */
  packs: Map<string, { offset: number; length: number; kind: 'data' | 'tree'; id: string }[]>;
  target: Set<string>;
}

/**
 * What the bytes read were. 'background' (left out of the totals): listings of anything but the
 * index, i.e. the retention job's inventory of the bucket (`aerie serve` runs it within a minute
 * of its start, then hourly), when it happens to run during an operation.
 */
const KINDS = [
  'index listing',
  'index',
  'snapshot',
  'trees',
  'target chunks',
  'other chunks',
  'pack other',
  'other',
  'background',
] as const;
type Kind = (typeof KINDS)[number];

/** The bytes of the logged GETs (and listings) under the repository, by kind; the requests by method. */
function tally(log: readonly Logged[], layout: Layout): { bytes: Record<Kind, number>; requests: string } {
  const bytes = Object.fromEntries(KINDS.map((kind) => [kind, 0])) as Record<Kind, number>;
  const methods = new Map<string, number>();
  for (const entry of log) {
    methods.set(entry.method, (methods.get(entry.method) ?? 0) + 1);
    if (entry.method !== 'GET') continue;
    if (entry.key === '') {
      const prefix = new URLSearchParams(entry.query).get('prefix') ?? '';
      bytes[prefix === `${layout.prefix}index/` ? 'index listing' : 'background'] += entry.bytes;
      continue;
    }
    const key = entry.key.startsWith(layout.prefix) ? entry.key.slice(layout.prefix.length) : null;
    if (key === null) bytes.other += entry.bytes;
    else if (key.startsWith('index/')) bytes.index += entry.bytes;
    else if (key.startsWith('snapshots/')) bytes.snapshot += entry.bytes;
    else if (key.startsWith('packs/')) {
      const blobs = layout.packs.get(key.slice(key.lastIndexOf('/') + 1)) ?? [];
      const match = /^bytes=(\d+)-(\d*)$/.exec(entry.range ?? '');
      const start = match === null ? 0 : Number(match[1]);
      const stop = start + entry.bytes; // what was sent, from where it started
      let mapped = 0;
      for (const blob of blobs) {
        const overlap = Math.min(stop, blob.offset + blob.length) - Math.max(start, blob.offset);
        if (overlap <= 0) continue;
        mapped += overlap;
        const kind: Kind =
          blob.kind === 'tree' ? 'trees' : layout.target.has(blob.id) ? 'target chunks' : 'other chunks';
        bytes[kind] += overlap;
      }
      bytes['pack other'] += entry.bytes - mapped;
    } else bytes.other += entry.bytes;
  }
  const requests = [...methods].map(([method, n]) => `${n} ${method}`).join(', ');
  return { bytes, requests };
}

/**
 * With AERIE_BENCH_MEMORY set, a line after each operation: the server's resident memory now and
 * at its peak, its anonymous memory (heaps, buffers, what the C allocator keeps) and its threads.
 */
function memoryLine(name: string, pid: number): string {
  const field = (text: string, key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const m = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
  return (
    `  memory after ${name}: VmRSS ${m(field(status, 'VmRSS'))}, VmHWM ${m(field(status, 'VmHWM'))}, ` +
    `anonymous ${m(field(rollup, 'Anonymous'))}, file ${m(field(status, 'RssFile'))}, threads ${field(status, 'Threads')}`
  );
}

/** The bytes an operation read (background listings left out). */
const sum = (bytes: Record<Kind, number>) =>
  KINDS.reduce((total, kind) => total + (kind === 'background' ? 0 : bytes[kind]), 0);
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-bench-browse-s3-'));
const log: Logged[] = [];
const s3 = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: path.join(work, 's3'),
  configureBuckets: [{ name: BUCKET, configs: [] }],
});
(s3 as unknown as { middleware: unknown[] }).middleware.unshift(countingMiddleware(log));
let serving: Served | undefined;
let s3Running = false;
/** The build's entry point; a build of the bench's own is removed at the end. */
let main: string | undefined;
const cleanup = onExit(async () => {
  await serving?.stop();
  if (main !== undefined && values.build === undefined)
    fs.rmSync(path.dirname(main), { recursive: true, force: true });
  if (s3Running) await s3.close();
  fs.rmSync(work, { recursive: true, force: true });
});

try {
  console.log(`== ${commandLine()}`);
  console.log(machineLine());
  main = buildAerie('backup-browse-s3', values.build);
  const { port } = await s3.run();
  s3Running = true;
  const dataDir = path.join(work, 'data');
  const env = aerieEnv(dataDir, {
    AERIE_BACKUP_STORAGE: 's3',
    AERIE_S3_BUCKET: BUCKET,
    AERIE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
    AERIE_S3_REGION: 'us-east-1',
    AERIE_S3_FORCE_PATH_STYLE: 'true',
    ...CREDENTIALS,
  });
  const { server, token } = await setUpData(main, env);

  // The volume: FILES files in /data, and the target.
  let started = performance.now();
  fs.mkdirSync(path.join(server.volume, 'data'));
  for (let i = 0; i < FILES; i++) {
    const name = `data/f${String(i).padStart(4, '0')}.bin`;
    fs.writeFileSync(path.join(server.volume, name), contentOf(name));
  }
  const target = contentOf(TARGET);
  const targetSha = sha256(target);
  fs.writeFileSync(path.join(server.volume, TARGET), target);
  console.log(
    `volume: ${FILES + 1} files, ${mib((FILES + 1) * FILE_BYTES, 0)}, made in ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s`,
  );

  started = performance.now();
  const backup = JSON.parse(
    await run(
      process.execPath,
      [main, 'backup', 'create', '--server', server.identifier, '--name', 'browse', '--json'],
      env,
    ),
  ) as { uuid: string; files: number; bytes: number; added_bytes: number };
  const backupSeconds = (performance.now() - started) / 1000;
  const uploaded = log.filter((entry) => entry.method === 'PUT').length;
  console.log(
    `aerie backup create (to S3): ${backupSeconds.toFixed(1)} s; ${backup.files} files, ` +
      `${backup.bytes} bytes, ${backup.added_bytes} bytes stored in ${uploaded} PUTs`,
  );

  // The repository as stored: where every blob is, which are the target's, the index's size.
  const config = loadConfig(env);
  if (config.backupStorage.kind !== 's3') throw new Error('the backup storage is not S3');
  const location = s3Repository(config.backupStorage.s3, server.uuid);
  if (location.kind !== 's3') throw new Error('not an S3 repository');
  const store = await openRepositoryStore(location);
  const repository = await Repository.open(store);
  const indexObjects = await store.list('index/');
  const indexBytes = indexObjects.reduce((total, object) => total + object.bytes, 0);
  const snapshotBytes = (await store.get(snapshotKey(backup.uuid))).length;
  const { record } = await repository.loadSnapshot(backup.uuid);
  const node = (await repository.readTree(record.tree)).entries.find(
    (entry) => entry.name === TARGET.slice(1),
  );
  if (node?.type !== 'file') throw new Error(`${TARGET} is not a file of the snapshot`);
  const chunks = node.chunks;
  const layout: Layout = { prefix: location.prefix, packs: new Map(), target: new Set(chunks) };
  for (const [id, where] of repository.entries()) {
    const list = layout.packs.get(where.pack) ?? [];
    list.push({ offset: where.offset, length: where.length, kind: where.kind, id });
    layout.packs.set(where.pack, list);
  }
  const packObjects = await store.list('packs/');
  const packBytes = packObjects.reduce((total, object) => total + object.bytes, 0);
  const stored = [...layout.target].reduce((total, id) => total + repository.location(id)!.length, 0);
  console.log(
    `repository: ${packObjects.length} packs (${mib(packBytes)}), index ${indexObjects.length} object(s) of ` +
      `${indexBytes} bytes, snapshot record ${snapshotBytes} bytes`,
  );
  console.log(
    `${TARGET}: ${target.length} bytes in ${chunks.length} chunk(s), ${layout.target.size} distinct, ` +
      `stored ${stored} bytes in ${new Set(chunks.map((id) => repository.location(id)!.pack)).size} pack(s)`,
  );

  serving = await startAerie(main, env, path.join(work, 'serve.log'));
  if (process.env.AERIE_BENCH_MEMORY !== undefined) console.log(memoryLine('start', serving.pid));
  const client = httpClient(token);
  const api = `${serving.base}/api/client/servers/${server.identifier}`;
  const catalog = path.join(dataDir, 'cache', 'catalogs', backup.uuid);
  type Operation = 'catalog' | 'download' | 'restore' | 'whole';
  const measured: Record<
    Operation,
    { ms: number[]; linkMs: number[]; bytes: Record<Kind, number>[]; requests: string }
  > = {
    catalog: { ms: [], linkMs: [], bytes: [], requests: '' },
    download: { ms: [], linkMs: [], bytes: [], requests: '' },
    restore: { ms: [], linkMs: [], bytes: [], requests: '' },
    whole: { ms: [], linkMs: [], bytes: [], requests: '' },
  };
  /** Runs `work` with the log emptied first; its reads from the bucket are noted under `name`. */
  const observe = async (name: Operation, work: () => Promise<{ ms: number; linkMs?: number }>) => {
    log.length = 0;
    const { ms, linkMs } = await work();
    // The log's entries are pushed when a response's socket side closes: let the last ones land.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { bytes, requests } = tally(log, layout);
    measured[name].ms.push(ms);
    if (linkMs !== undefined) measured[name].linkMs.push(linkMs);
    measured[name].bytes.push(bytes);
    measured[name].requests = requests;
    if (process.env.AERIE_BENCH_MEMORY !== undefined) console.log(memoryLine(name, serving!.pid));
    if (values.log !== undefined)
      fs.appendFileSync(
        values.log,
        log
          .map((e) => [name, e.method, e.key, e.query, e.range ?? '', e.status, e.bytes].join('\t') + '\n')
          .join(''),
      );
    return bytes;
  };
  /** Follows a signed link (`GET …` answering `{attributes: {url}}`): the body's bytes and SHA-256. */
  const download = async (linkPath: string) => {
    const link = await client.json<{ attributes: { url: string } }>('GET', `${api}${linkPath}`);
    const hash = createHash('sha256');
    let length = 0;
    const answer = await client.request('GET', link.value.attributes.url, undefined, (chunk) => {
      length += chunk.length;
      hash.update(chunk);
    });
    if (answer.status !== 200) throw new Error(`GET ${link.value.attributes.url}: ${answer.status}`);
    return { linkMs: link.ms, ms: answer.ms, length, sha: hash.digest('hex') };
  };

  let peakBeforeWhole = 0;
  for (let round = 1; round <= RUNS; round++) {
    fs.rmSync(catalog, { recursive: true, force: true });
    await observe('catalog', async () => {
      const { ms } = await client.json('GET', `${api}/backups/${backup.uuid}/files/list?directory=%2F`);
      return { ms };
    });

    await observe('download', async () => {
      const got = await download(`/backups/${backup.uuid}/files/download?file=${encodeURIComponent(TARGET)}`);
      if (got.sha !== targetSha) throw new Error(`the downloaded ${TARGET} is not the file backed up`);
      return { ms: got.ms, linkMs: got.linkMs };
    });

    const restored = path.join(server.volume, TARGET);
    fs.rmSync(restored);
    await observe('restore', async () => {
      const begin = performance.now();
      await client.json('POST', `${api}/backups/${backup.uuid}/restore`, {
        files: [TARGET],
        truncate: false,
        undo_backup: false,
      });
      for (;;) {
        const { value } = await client.json<{ attributes: { status: string | null } }>('GET', api);
        if (value.attributes.status === null) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return { ms: performance.now() - begin };
    });
    if (!fs.existsSync(restored) || sha256(fs.readFileSync(restored)) !== targetSha)
      throw new Error(`the restore did not put ${TARGET} back as backed up (see ${work}/serve.log)`);

    if (round === 1) peakBeforeWhole = serving.peakKib();
    await observe('whole', async () => {
      const got = await download(`/backups/${backup.uuid}/download`);
      return { ms: got.ms, linkMs: got.linkMs };
    });

    const b = measured;
    const last = (name: Operation) => b[name].bytes[b[name].bytes.length - 1]!;
    console.log(
      `run ${round}: catalog ${b.catalog.ms.at(-1)!.toFixed(0)} ms (${sum(last('catalog'))} bytes read); ` +
        `download: link ${b.download.linkMs.at(-1)!.toFixed(0)} ms + file ${b.download.ms.at(-1)!.toFixed(0)} ms ` +
        `(${sum(last('download'))} bytes read); restore ${b.restore.ms.at(-1)!.toFixed(0)} ms ` +
        `(${sum(last('restore'))} bytes read); whole backup ${(b.whole.ms.at(-1)! / 1000).toFixed(1)} s ` +
        `(${sum(last('whole'))} bytes read)`,
    );
  }
  const peakKib = serving.peakKib();
  const childPeakKib = serving.childPeakKib();
  client.close();
  await serving.stop();
  serving = undefined;

  console.log(
    `\n== ${FILES + 1} files of ${mib(FILE_BYTES, 0)} (${mib(backup.bytes, 0)}); ${TARGET} stored in ` +
      `${stored} bytes; index ${indexBytes} bytes; ${RUNS} runs (bytes: the same every run unless a range is shown)`,
  );
  const names: Record<Operation, string> = {
    catalog: 'first listing (catalog)',
    download: `download ${TARGET}`,
    restore: `restore ${TARGET} alone`,
    whole: 'download whole backup',
  };
  const cell = (xs: number[]) =>
    Math.min(...xs) === Math.max(...xs) ? String(xs[0]) : `${Math.min(...xs)}–${Math.max(...xs)}`;
  console.log(
    `${'bytes read from S3'.padEnd(22)}${Object.values(names)
      .map((n) => n.padStart(26))
      .join('')}`,
  );
  const order = [...KINDS.filter((kind) => kind !== 'background'), 'total', 'background'] as const;
  for (const kind of order) {
    const row = (Object.keys(names) as Operation[]).map((name) =>
      cell(measured[name].bytes.map((bytes) => (kind === 'total' ? sum(bytes) : bytes[kind]))).padStart(26),
    );
    console.log(`${kind.padEnd(22)}${row.join('')}`);
  }
  console.log(
    `${'requests (last run)'.padEnd(22)}${(Object.keys(names) as Operation[]).map((n) => measured[n].requests.padStart(26)).join('')}`,
  );
  console.log('');
  const bound = 2 * stored + indexBytes;
  for (const name of ['download', 'restore'] as const) {
    const totals = measured[name].bytes.map(sum);
    const packs = measured[name].bytes.map(
      (bytes) => bytes['target chunks'] + bytes['other chunks'] + bytes['pack other'],
    );
    console.log(
      `${names[name]}: ${cell(totals)} bytes read = ${(Math.max(...totals) / stored).toFixed(3)}x the stored size ` +
        `(file chunks and pack bytes alone: ${(Math.max(...packs) / stored).toFixed(3)}x); target ≤ 2 × ${stored} + ` +
        `${indexBytes} = ${bound}: ${Math.max(...totals) <= bound ? 'met' : 'NOT met'}`,
    );
  }
  console.log(`\n${'timing, median (min–max)'.padEnd(28)}`);
  console.log(`aerie backup create (S3)     ${backupSeconds.toFixed(1)} s (1 run)`);
  console.log(`first listing (catalog)      ${spread(measured.catalog.ms, 0)} ms`);
  console.log(
    `download ${TARGET}         link ${spread(measured.download.linkMs, 1)} ms + file ${spread(measured.download.ms, 1)} ms`,
  );
  console.log(
    `restore ${TARGET} alone    ${spread(measured.restore.ms, 0)} ms (request to the status clearing)`,
  );
  console.log(
    `download whole backup        link ${spread(measured.whole.linkMs, 1)} ms + archive ${spread(
      measured.whole.ms.map((ms) => ms / 1000),
      2,
    )} s`,
  );
  const one = median(measured.download.ms.map((ms, i) => ms + measured.download.linkMs[i]!));
  const whole = median(measured.whole.ms.map((ms, i) => ms + measured.whole.linkMs[i]!));
  console.log(`one file vs whole backup     ${(whole / one).toFixed(0)}x faster (medians, link included)`);
  console.log(
    `serve peak RSS (VmHWM)       ${(peakBeforeWhole / 1024).toFixed(0)} MiB before the first whole ` +
      `download, ${(peakKib / 1024).toFixed(0)} MiB at the end; a download process's ` +
      `${(childPeakKib / 1024).toFixed(0)} MiB`,
  );
  console.log(machineLine());
} finally {
  await cleanup();
}
