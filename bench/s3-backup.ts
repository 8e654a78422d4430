/**
 * Peak memory of `aerie backup create` to an S3-compatible store, against the same backup to
 * local storage run alongside (the baseline). It builds Aerie into a directory of its own (as
 * `npm run build` bundles it: the measured command is `bin/aerie.js` as users run it, and no one
 * else's `dist/` is touched), from the working tree, git revisions or directories (`--rev`, repeatable: several builds are
 * measured in the same session, run by run in turn), starts s3rver (the tests' S3-compatible
 * server, in this process), makes a data directory with one server whose volume holds the bench
 * tree, then runs, in turn and `--runs` times each, the local backup and each build's S3 backup
 * under GNU time (`/usr/bin/time -v`): peak RSS, wall time, CPU time (user + system). Each
 * archive is deleted before the next run. It prints each run, then the median (min–max) of each
 * contender and the ratios of the medians to the local backup's.
 *
 *   node --import tsx bench/s3-backup.ts [--runs 3] [--rev REV]... [--part-size-mb N]
 *
 * The tree is bench/make-tree.ts's, generated into TREE (default /tmp/aerie-bench-tree) when that
 * does not exist, and kept for the next run. Needs GNU time and about 4.5 GiB free in /tmp.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startS3 } from '../test/support/s3.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    rev: { type: 'string', multiple: true, default: ['.'] },
    'part-size-mb': { type: 'string' },
  },
});
const RUNS = Number(values.runs);
const REVS = values.rev;
const ROOT = path.resolve(import.meta.dirname, '..');
const TREE = process.env.TREE ?? path.join(os.tmpdir(), 'aerie-bench-tree');
if (!fs.existsSync('/usr/bin/time')) throw new Error('GNU time is missing (apt-get install time)');

/**
 * Compiles the sources of `rev` (a git revision; `.`: the working tree; or a directory holding a
 * copy of the repository's sources) into `dir`; returns its entry point.
 */
function build(rev: string, dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const files = ['src', 'bin', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
  if (rev === '.' || fs.existsSync(rev)) {
    const from = rev === '.' ? ROOT : rev;
    for (const file of files) fs.cpSync(path.join(from, file), path.join(dir, file), { recursive: true });
  } else {
    const archive = execFileSync('git', ['archive', rev, ...files], { cwd: ROOT, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/bundle.ts'], { cwd: dir, stdio: 'inherit' });
  return path.join(dir, 'bin/aerie.js');
}

/** Runs a command to its end without blocking this process's event loop. */
function runToEnd(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

if (!fs.existsSync(TREE)) {
  console.log(`== generating the tree in ${TREE} (kept for the next run)`);
  execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/make-tree.ts'), TREE], {
    stdio: 'inherit',
  });
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-bench-s3-'));
const s3 = await startS3();
try {
  const builds = REVS.map((rev, i) => ({ rev, main: build(rev, path.join(work, `build-${i}`)) }));
  const dataDir = path.join(work, 'data');
  const env = {
    ...process.env,
    AERIE_DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
    LOG_LEVEL: 'silent',
  };
  const aerie = (args: string[]) =>
    execFileSync(process.execPath, [builds[0]!.main, ...args], { env, encoding: 'utf8' });
  aerie(['migrate']);
  aerie([
    'user',
    'create',
    '--username',
    'bench',
    '--email',
    'bench@example.com',
    '--password',
    'bench-pass-1',
  ]);
  const server = JSON.parse(aerie(['server', 'create', '--owner', 'bench', '--name', 'bench', '--json'])) as {
    identifier: string;
    uuid: string;
    volume: string;
  };
  execFileSync('cp', ['-a', `${TREE}/.`, `${server.volume}/`]);
  const files = fs
    .readdirSync(server.volume, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile()).length;
  const bytes = execFileSync('du', ['-sb', server.volume], { encoding: 'utf8' }).split('\t')[0];
  console.log(`tree: ${files} files, ${bytes} bytes`);

  const s3env = {
    ...s3.env(),
    ...(values['part-size-mb'] ? { AERIE_S3_PART_SIZE_MB: values['part-size-mb'] } : {}),
  };
  const contenders = [
    { name: 'local', main: builds[0]!.main, extra: {}, s3: false },
    ...builds.map((b) => ({ name: `s3@${b.rev}`, main: b.main, extra: s3env, s3: true })),
  ];
  const results = new Map<string, { wall: number; cpu: number; rssMb: number }[]>();
  for (let run = 1; run <= RUNS; run++) {
    for (const contender of contenders) {
      try {
        fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
      } catch {
        // not allowed here: the tree is read from the page cache
      }
      const timing = path.join(work, 'time');
      const args = ['backup', 'create', '--server', server.identifier, '--name', `run-${run}`, '--json'];
      // Not spawnSync: s3rver runs in this process, and must go on answering meanwhile.
      const result = await runToEnd(
        '/usr/bin/time',
        ['-v', '-o', timing, process.execPath, contender.main, ...args],
        {
          ...env,
          ...contender.extra,
        },
      );
      if (result.status !== 0) throw new Error(`${contender.name} run ${run} failed: ${result.stderr}`);
      const record = JSON.parse(result.stdout) as { uuid: string; bytes: number };
      const time = fs.readFileSync(timing, 'utf8');
      const field = (label: string) => new RegExp(`${label}: (.+)`).exec(time)?.[1]?.trim() ?? '';
      const clock = field('Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)').split(':').map(Number);
      const wall = clock.reduce((total, part) => total * 60 + part, 0);
      const cpu = Number(field('User time \\(seconds\\)')) + Number(field('System time \\(seconds\\)'));
      const rssMb = Number(field('Maximum resident set size \\(kbytes\\)')) / 1024;
      const list = results.get(contender.name) ?? [];
      list.push({ wall, cpu, rssMb });
      results.set(contender.name, list);
      console.log(
        `${contender.name.padEnd(14)} run ${run}: wall ${wall.toFixed(2)} s, cpu ${cpu.toFixed(2)} s, ` +
          `max RSS ${rssMb.toFixed(0)} MiB, archive ${record.bytes} bytes`,
      );
      // What the backup stored goes before the next run (an archive; or, for a snapshot, the
      // server's whole repository, so that every run stores everything again), and its row (the
      // server's backup limit is 10).
      const key = `${server.uuid}/${record.uuid}.tar.gz`;
      if (contender.s3) {
        const listing = await s3.client.send(
          new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${server.uuid}/` }),
        );
        for (const object of listing.Contents ?? [])
          await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: object.Key }));
      } else {
        fs.rmSync(path.join(dataDir, 'backups', key), { force: true });
        fs.rmSync(path.join(dataDir, 'backups', server.uuid, 'repository'), { recursive: true, force: true });
      }
      execFileSync('sqlite3', [
        path.join(dataDir, 'aerie.db'),
        `delete from backups where id = '${record.uuid}'`,
      ]);
    }
  }

  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const stat = (xs: number[], digits: number) =>
    `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
  console.log(`\n== medians (min–max) of ${RUNS} runs`);
  for (const [name, runs] of results) {
    console.log(
      `${name.padEnd(14)} wall ${stat(
        runs.map((r) => r.wall),
        2,
      )} s  cpu ${stat(
        runs.map((r) => r.cpu),
        2,
      )} s  max RSS ${stat(
        runs.map((r) => r.rssMb),
        0,
      )} MiB`,
    );
  }
  const of = (name: string, key: 'wall' | 'cpu' | 'rssMb') => median(results.get(name)!.map((r) => r[key]));
  for (const { name } of contenders.slice(1)) {
    console.log(
      `${name} against local (medians): max RSS ${(of(name, 'rssMb') / of('local', 'rssMb')).toFixed(2)}x, ` +
        `wall ${(of(name, 'wall') / of('local', 'wall')).toFixed(2)}x, cpu ${(of(name, 'cpu') / of('local', 'cpu')).toFixed(2)}x`,
    );
  }
  console.log(
    `machine: ${os.cpus().length} CPUs, ${os.cpus()[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM; ` +
      `node ${process.version}; ${new Date().toISOString()}; load average at the end: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
} finally {
  await s3.close();
  fs.rmSync(work, { recursive: true, force: true });
}
