/**
 * The feed's latency while a backup is being made: `aerie serve` (compiled, rate limits off)
 * answers the default feed at 16 connections, idle and then while it archives the bench tree
 * (about 1.1 GiB) through the API, round after round. Prints each run's p50/p99 and req/s, then
 * the medians (min–max) and the ratio of the busy p99 to the idle p99.
 *
 *   DATABASE_URL=... AERIE_DATA_DIR=... TOKEN=... SERVER=... \
 *     node --import tsx bench/feed-during-backup.ts [--runs 5] [--duration 5]
 *
 * bench/feed-during-backup.sh prepares all of that (seeded feed, server, tree) and runs it.
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { apiClient } from './api-client.ts';
import { autocannon } from './autocannon.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, duration: { type: 'string', default: '5' } },
});
const token = process.env.TOKEN ?? '';
const server = process.env.SERVER ?? '';
if (token === '' || server === '') throw new Error('set TOKEN and SERVER');
const PORT = 18721;
const base = `http://127.0.0.1:${PORT}`;
const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };

const child = spawn(process.execPath, ['dist/main.js', 'serve', '--port', String(PORT)], {
  // Retention off: it would be deleting the seeded entries while the feed is measured.
  env: {
    ...process.env,
    AERIE_RATE_LIMIT_PER_MINUTE: '0',
    AERIE_ACTIVITY_RETENTION_DAYS: '0',
    LOG_LEVEL: 'silent',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
process.on('exit', () => child.kill());

const api = apiClient(base, token);

for (let i = 0; ; i += 1) {
  try {
    await api('GET', '/api/client/activity');
    break;
  } catch (error) {
    if (i > 300) throw error;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function load(): Promise<{ p50: number; p99: number; rps: number }> {
  const r = await autocannon({
    url: `${base}/api/client/activity`,
    connections: 16,
    duration: Number(values.duration),
    headers,
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { p50: r.latency.p50, p99: r.latency.p99, rps: r.requests.average };
}

interface Backup {
  attributes: { uuid: string; completed_at: string | null; is_successful: boolean; bytes: number };
}
await load(); // warm-up
const idle: { p50: number; p99: number; rps: number }[] = [];
const busy: typeof idle = [];
for (let run = 1; run <= Number(values.runs); run += 1) {
  idle.push(await load());
  const created = (await api('POST', `/api/client/servers/${server}/backups`, {
    name: `bench-${run}`,
  })) as Backup;
  const uuid = created.attributes.uuid;
  const began = Date.now();
  busy.push(await load());
  const loadEnded = Date.now();
  let done: Backup;
  for (;;) {
    done = (await api('GET', `/api/client/servers/${server}/backups/${uuid}`)) as Backup;
    if (done.attributes.completed_at !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const seconds = (Date.now() - began) / 1000;
  if (!done.attributes.is_successful) throw new Error('the backup failed');
  if (Date.now() - loadEnded < 250)
    process.stderr.write(`run ${run}: the backup ended as the load did; give it a larger tree\n`);
  process.stdout.write(
    `run ${run}: idle p50 ${idle.at(-1)?.p50} ms p99 ${idle.at(-1)?.p99} ms ${idle.at(-1)?.rps.toFixed(0)} req/s; ` +
      `during backup p50 ${busy.at(-1)?.p50} ms p99 ${busy.at(-1)?.p99} ms ${busy.at(-1)?.rps.toFixed(0)} req/s; ` +
      `backup ${(done.attributes.bytes / 2 ** 20).toFixed(0)} MiB in ${seconds.toFixed(1)} s\n`,
  );
  await api('DELETE', `/api/client/servers/${server}/backups/${uuid}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const spread = (xs: number[]) => `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`;
const pick = (list: typeof idle, key: 'p50' | 'p99' | 'rps') => list.map((x) => Math.round(x[key]));
process.stdout.write(
  `\n| feed, 16 connections | p50 ms | p99 ms | req/s |\n|---|---|---|---|\n` +
    `| idle | ${spread(pick(idle, 'p50'))} | ${spread(pick(idle, 'p99'))} | ${spread(pick(idle, 'rps'))} |\n` +
    `| during a backup | ${spread(pick(busy, 'p50'))} | ${spread(pick(busy, 'p99'))} | ${spread(pick(busy, 'rps'))} |\n` +
    `\np99 during a backup ÷ idle p99: ${(median(pick(busy, 'p99')) / median(pick(idle, 'p99'))).toFixed(2)} (medians of ${idle.length} runs)\n`,
);
process.exit(0);
