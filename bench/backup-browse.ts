/**
 * Browsing a snapshot backup of 1,000,000 files: `GET …/backups/{backup}/files/list` over real
 * HTTP against `aerie serve`, the program as production runs it (bundled by scripts/bundle.ts
 * into .bench-dist/backup-browse, removed at the end; no one else's dist/ is touched). The
 * target (the issue): a listing answers in under 50 ms at p50. The API's rate limit is off.
 *
 * It makes a data directory (SQLite) with one server whose volume holds DIRS directories of FILES
 * files each (12 bytes, the same in every file: they dedupe to one chunk), timing that, then takes
 * a snapshot backup with `aerie backup create` (`--backup-runs` times, each into an empty
 * repository; the last one is browsed), timed with its peak RSS (GNU time). Then, `--runs` times,
 * with the backup's catalog removed first and a fresh `aerie serve`:
 *   - the first listing of `/`, which builds the catalog (in a worker thread): its time alone;
 *   - sequentially over one keep-alive connection, `--warmup` requests then `--requests` timed
 *     ones each: `/` (DIRS directories), `/d0500` (FILES files), and a page in the middle of it
 *     (`page=6&per_page=100`: entries 500–599): p50, p90, max;
 *   - the server's peak RSS (VmHWM of /proc/<pid>/status) after start-up and at the end;
 *   - the same requests against a bare `node:http` server answering each with the very bytes Aerie
 *     answered (same size), as the floor: the ratio of the p50s.
 * It prints the catalog's size on disk, every run, then medians (min–max) over the runs. The
 * requests come from this process (one connection, node:http), the same client for both servers.
 *
 *   node --import tsx bench/backup-browse.ts [--runs 3] [--backup-runs 1] [--requests 200]
 *     [--warmup 10] [--dirs 1000] [--files 1000] [--tree DIR] [--build DIR]
 *   bash bench/backup-browse.sh [same options]
 *
 * --tree DIR keeps the generated volume in DIR between invocations (moved into the server's
 * volume and back: same file system); without it the files are made in a temporary directory
 * and removed at the end, as everything else is. --build DIR measures a bundle made elsewhere
 * (`node --import tsx scripts/bundle.ts --out DIR`, inside a checkout with node_modules).
 * Needs GNU time and about 4.5 GB free in the temporary directory (1M small files take a 4 KiB
 * block each).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  aerieEnv,
  buildAerie,
  commandLine,
  freePort,
  httpClient,
  machineLine,
  median,
  mib,
  onExit,
  percentile,
  run,
  setUpData,
  spread,
  startAerie,
  startProcess,
  treeSize,
  type Served,
} from './backup-browse-support.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'backup-runs': { type: 'string', default: '1' },
    requests: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '10' },
    dirs: { type: 'string', default: '1000' },
    files: { type: 'string', default: '1000' },
    tree: { type: 'string' },
    build: { type: 'string' },
  },
});
const RUNS = Number(values.runs);
const BACKUP_RUNS = Number(values['backup-runs']);
const REQUESTS = Number(values.requests);
const WARMUP = Number(values.warmup);
const DIRS = Number(values.dirs);
const FILES = Number(values.files);
const TREE = values.tree === undefined ? undefined : path.resolve(values.tree);
const CONTENT = Buffer.from('aerie bench\n');
const TARGET_MS = 50;
if (!fs.existsSync('/usr/bin/time')) throw new Error('GNU time is missing (apt-get install time)');

const dirName = (i: number) => `d${String(i).padStart(4, '0')}`;
const fileName = (i: number) => `f${String(i).padStart(4, '0')}.txt`;
const middleDir = `/${dirName(Math.floor(DIRS / 2))}`;
const middlePage = Math.floor(FILES / 200) + 1;
/** What is listed, `--requests` times each. */
const LISTINGS: { name: string; query: Record<string, string> }[] = [
  { name: `/ (${DIRS} dirs)`, query: { directory: '/' } },
  { name: `${middleDir} (${FILES} files)`, query: { directory: middleDir } },
  // A page of 100 in the middle of it.
  {
    name: `${middleDir} page ${middlePage} of 100`,
    query: { directory: middleDir, page: String(middlePage), per_page: '100' },
  },
];
/** Beside a kept tree: it was made whole by this bench, with these dimensions. */
const MARKER = TREE === undefined ? '' : `${TREE}.aerie-bench-browse-${DIRS}x${FILES}`;

/** DIRS directories of FILES files each, in `dir` (sync: the kernel's work, one file at a time). */
function makeTree(dir: string): void {
  for (let d = 0; d < DIRS; d++) {
    const sub = path.join(dir, dirName(d));
    fs.mkdirSync(sub, { recursive: true });
    for (let f = 0; f < FILES; f++) fs.writeFileSync(path.join(sub, fileName(f)), CONTENT);
  }
}

/** Latencies of `count` sequential GETs of `url` after `warmup` untimed ones; the last body. */
async function measure(
  client: ReturnType<typeof httpClient>,
  url: string,
): Promise<{ ms: number[]; body: Buffer }> {
  let body: Buffer = Buffer.alloc(0);
  const ms: number[] = [];
  for (let i = 0; i < WARMUP + REQUESTS; i++) {
    const answer = await client.request('GET', url);
    if (answer.status !== 200) throw new Error(`GET ${url}: ${answer.status} ${answer.body.toString()}`);
    if (i >= WARMUP) ms.push(answer.ms);
    body = answer.body;
  }
  return { ms, body };
}

/** A bare node:http server answering each path (with its query) with the bytes in `bodies`. */
const BARE_SERVER = `
import fs from 'node:fs';
import http from 'node:http';
const [port, file] = process.argv.slice(1);
const bodies = new Map(Object.entries(JSON.parse(fs.readFileSync(file, 'utf8'))).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
http.createServer((req, res) => {
  if (req.url === '/health') { res.end('ok'); return; }
  const body = bodies.get(req.url);
  if (body === undefined) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}).listen(Number(port), '127.0.0.1');
`;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-bench-browse-'));
let serving: Served | undefined;
let volume: string | undefined;
/** Whether the volume is the tree to keep in --tree at the end. */
let keepTree = false;
/** The build's entry point; a build of the bench's own is removed at the end. */
let main: string | undefined;
const cleanup = onExit(async () => {
  await serving?.stop();
  if (main !== undefined && values.build === undefined)
    fs.rmSync(path.dirname(main), { recursive: true, force: true });
  // A kept tree goes back where it came from; anything else goes with the work directory.
  if (TREE !== undefined && volume !== undefined && keepTree) {
    fs.rmSync(TREE, { recursive: true, force: true });
    fs.renameSync(volume, TREE);
    fs.writeFileSync(MARKER, '');
  }
  fs.rmSync(work, { recursive: true, force: true });
});

try {
  console.log(`== ${commandLine()}`);
  console.log(machineLine());
  main = buildAerie('backup-browse', values.build);
  const dataDir = path.join(work, 'data');
  const env = aerieEnv(dataDir);
  const { server, token } = await setUpData(main, env);
  volume = server.volume;

  // The volume: DIRS × FILES files (moved in from --tree when it holds them already).
  let treeSeconds: number | null = null;
  if (TREE !== undefined && fs.existsSync(MARKER) && fs.existsSync(TREE)) {
    fs.rmSync(volume, { recursive: true, force: true });
    fs.rmSync(MARKER);
    fs.renameSync(TREE, volume);
    keepTree = true;
    console.log(`volume: ${TREE} moved in (made by an earlier run)`);
  } else {
    const started = performance.now();
    makeTree(volume);
    treeSeconds = (performance.now() - started) / 1000;
    keepTree = TREE !== undefined;
    console.log(`volume: ${DIRS * FILES} files made in ${treeSeconds.toFixed(1)} s`);
  }

  // The backup, `--backup-runs` times into an empty repository each.
  const backups: { wall: number; cpu: number; rssMib: number }[] = [];
  let backup = { uuid: '', files: 0, bytes: 0, added_bytes: 0 };
  for (let i = 1; i <= BACKUP_RUNS; i++) {
    if (i > 1) {
      fs.rmSync(path.join(dataDir, 'backups', server.uuid), { recursive: true, force: true });
      await run(
        'sqlite3',
        [path.join(dataDir, 'aerie.db'), `delete from backups where id = '${backup.uuid}'`],
        env,
      );
    }
    const timing = path.join(work, 'time');
    const out = await run(
      '/usr/bin/time',
      [
        '-f',
        '%e %U %S %M',
        '-o',
        timing,
        process.execPath,
        main,
        'backup',
        'create',
        '--server',
        server.identifier,
        '--name',
        `browse-${i}`,
        '--json',
      ],
      env,
    );
    backup = JSON.parse(out) as typeof backup;
    const [wall, user, sys, kib] = fs.readFileSync(timing, 'utf8').trim().split(/\s+/).map(Number);
    backups.push({ wall: wall!, cpu: user! + sys!, rssMib: kib! / 1024 });
    console.log(
      `backup create ${i}: ${wall!.toFixed(1)} s wall, ${(user! + sys!).toFixed(1)} s CPU, ` +
        `max RSS ${(kib! / 1024).toFixed(0)} MiB; ${backup.files} files, ${backup.bytes} bytes, ` +
        `${backup.added_bytes} bytes stored`,
    );
  }

  const catalog = path.join(dataDir, 'cache', 'catalogs', backup.uuid);
  const listUrl = (base: string, query: Record<string, string>) =>
    `${base}/api/client/servers/${server.identifier}/backups/${backup.uuid}/files/list?${new URLSearchParams(query).toString()}`;
  type Row = {
    p50: number;
    p90: number;
    max: number;
    bytes: number;
    bareP50: number;
    bareMax: number;
    ratio: number;
  };
  const rounds: {
    firstMs: number;
    startKib: number;
    peakKib: number;
    rows: Row[];
  }[] = [];
  let catalogSize = { files: 0, bytes: 0, diskBytes: 0 };

  for (let round = 1; round <= RUNS; round++) {
    fs.rmSync(catalog, { recursive: true, force: true });
    serving = await startAerie(main, env, path.join(work, 'serve.log'));
    const startKib = serving.peakKib();
    const client = httpClient(token);
    // The first listing builds the catalog.
    const first = await client.request('GET', listUrl(serving.base, { directory: '/' }));
    if (first.status !== 200) throw new Error(`first listing: ${first.status} ${first.body.toString()}`);
    if (round === 1) catalogSize = treeSize(catalog);
    const results: { ms: number[]; body: Buffer }[] = [];
    for (const listing of LISTINGS) results.push(await measure(client, listUrl(serving.base, listing.query)));
    const peakKib = serving.peakKib();
    client.close();
    await serving.stop();
    serving = undefined;

    // The floor: node:http answering the same bytes.
    const bodiesFile = path.join(work, 'bodies.json');
    const paths = LISTINGS.map((listing) => new URL(listUrl('http://x', listing.query)));
    fs.writeFileSync(
      bodiesFile,
      JSON.stringify(
        Object.fromEntries(
          paths.map((url, i) => [url.pathname + url.search, results[i]!.body.toString('base64')]),
        ),
      ),
    );
    const port = await freePort();
    serving = await startProcess(
      ['--input-type=module', '-e', BARE_SERVER, String(port), bodiesFile],
      process.env,
      port,
      '/health',
      path.join(work, 'bare.log'),
    );
    const bareClient = httpClient(null);
    const rows: Row[] = [];
    for (const [i, url] of paths.entries()) {
      const bare = await measure(bareClient, `${serving.base}${url.pathname}${url.search}`);
      const { ms, body } = results[i]!;
      const bareP50 = percentile(bare.ms, 0.5);
      rows.push({
        p50: percentile(ms, 0.5),
        p90: percentile(ms, 0.9),
        max: Math.max(...ms),
        bytes: body.length,
        bareP50,
        bareMax: Math.max(...bare.ms),
        ratio: percentile(ms, 0.5) / bareP50,
      });
    }
    bareClient.close();
    await serving.stop();
    serving = undefined;

    rounds.push({ firstMs: first.ms, startKib, peakKib, rows });
    console.log(
      `run ${round}: first listing (catalog built) ${first.ms.toFixed(0)} ms; serve VmHWM ` +
        `${(startKib / 1024).toFixed(0)} MiB after start, ${(peakKib / 1024).toFixed(0)} MiB at the end`,
    );
    for (const [i, row] of rows.entries())
      console.log(
        `  ${LISTINGS[i]!.name.padEnd(26)} p50 ${row.p50.toFixed(2)} ms  p90 ${row.p90.toFixed(2)} ms  ` +
          `max ${row.max.toFixed(2)} ms  (${row.bytes} bytes; bare node:http p50 ${row.bareP50.toFixed(2)} ms, ` +
          `max ${row.bareMax.toFixed(2)} ms; p50 ${row.ratio.toFixed(1)}x bare)`,
      );
  }

  console.log(`\n== ${DIRS * FILES} files in ${DIRS} directories; medians (min–max)`);
  if (treeSeconds !== null) console.log(`making the volume's files     ${treeSeconds.toFixed(1)} s`);
  console.log(
    `aerie backup create           ${spread(backups.map((b) => b.wall))} s wall, ` +
      `${spread(backups.map((b) => b.cpu))} s CPU, max RSS ${spread(
        backups.map((b) => b.rssMib),
        0,
      )} MiB (${BACKUP_RUNS} run${BACKUP_RUNS === 1 ? '' : 's'})`,
  );
  console.log(
    `catalog on disk               ${catalogSize.files} files, ${mib(catalogSize.bytes)} ` +
      `(${mib(catalogSize.diskBytes)} allocated)`,
  );
  console.log(
    `first listing (builds it)     ${spread(
      rounds.map((r) => r.firstMs),
      0,
    )} ms (${RUNS} runs)`,
  );
  console.log(
    `serve peak RSS (VmHWM)        ${spread(
      rounds.map((r) => r.startKib / 1024),
      0,
    )} MiB after start, ${spread(
      rounds.map((r) => r.peakKib / 1024),
      0,
    )} MiB at the end`,
  );
  console.log(
    `\n${'listing'.padEnd(28)}${'bytes'.padStart(8)}  ${'p50 ms'.padEnd(20)}${'p90 ms'.padEnd(20)}` +
      `${'max ms'.padEnd(22)}${'bare p50 ms'.padEnd(20)}${'bare max ms'.padEnd(22)}p50 / bare`,
  );
  for (const [i, listing] of LISTINGS.entries()) {
    const of = (key: keyof Row, digits = 2) =>
      spread(
        rounds.map((r) => r.rows[i]![key]),
        digits,
      );
    console.log(
      `${listing.name.padEnd(28)}${String(rounds[0]!.rows[i]!.bytes).padStart(8)}  ${of('p50').padEnd(20)}` +
        `${of('p90').padEnd(20)}${of('max').padEnd(22)}${of('bareP50').padEnd(20)}${of('bareMax').padEnd(22)}` +
        `${of('ratio', 1)}x`,
    );
  }
  const worst = Math.max(...LISTINGS.map((_, i) => median(rounds.map((r) => r.rows[i]!.p50))));
  console.log(
    `\ntarget: a listing under ${TARGET_MS} ms at p50: ${worst < TARGET_MS ? 'met' : 'NOT met'} ` +
      `(slowest median p50 ${worst.toFixed(2)} ms; ${REQUESTS} requests each after ${WARMUP} warm-up, ` +
      `${RUNS} runs)`,
  );
  console.log(machineLine());
} finally {
  await cleanup();
}
