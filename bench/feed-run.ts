/**
 * One round of the feed benchmark against a seeded database (bench/seed-activity.ts): starts
 * `aerie serve` (compiled), the bare `node:http` baseline and the minimal driver baseline, then
 * runs autocannon against each scenario, the scenarios interleaved run after run. Appends one
 * JSON line per measurement to OUT and prints a table of medians (min–max).
 *
 *   DATABASE_URL=... AERIE_DATA_DIR=... TOKEN=... USER_ID=... \
 *     node --import tsx bench/feed-run.ts --label sqlite-1M --out results.jsonl \
 *       [--runs 3] [--duration 4] [--aerie dist/main.js]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { autocannon } from './autocannon.ts';

const { values } = parseArgs({
  options: {
    label: { type: 'string', default: 'feed' },
    out: { type: 'string', default: '/dev/null' },
    runs: { type: 'string', default: '3' },
    duration: { type: 'string', default: '4' },
    aerie: { type: 'string', default: 'dist/main.js' },
  },
});
const token = process.env.TOKEN ?? '';
const userId = process.env.USER_ID ?? '';
if (token === '' || userId === '') throw new Error('set TOKEN and USER_ID (printed by seed-activity.ts)');
const runs = Number(values.runs);
const duration = Number(values.duration);

const PORTS = { aerie: 18701, bare: 18702, ideal: 18703, kept: 18704 } as const;
const children: ChildProcess[] = [];
const tsx = ['--import', 'tsx'];

function start(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}
async function ready(port: number, headers: Record<string, string> = {}): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/client/activity`, { headers });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`nothing answers on port ${port}`);
}
process.on('exit', () => children.forEach((child) => child.kill()));

const auth = { authorization: `Bearer ${token}`, accept: 'application/json' };
start([values.aerie, 'serve', '--port', String(PORTS.aerie)], {
  AERIE_RATE_LIMIT_PER_MINUTE: '0',
  // Retention off: it would be deleting the seeded entries while the feed is measured.
  AERIE_ACTIVITY_RETENTION_DAYS: '0',
  LOG_LEVEL: 'silent',
});
await ready(PORTS.aerie, auth);
const captured = await (
  await fetch(`http://127.0.0.1:${PORTS.aerie}/api/client/activity`, { headers: auth })
).text();
const bodyFile = path.join(fs.mkdtempSync('/tmp/aerie-feed-'), 'body.json');
fs.writeFileSync(bodyFile, captured);
start([...tsx, 'bench/feed-bare-server.ts', String(PORTS.bare), bodyFile]);
start([...tsx, 'bench/feed-ideal-server.ts', String(PORTS.ideal), userId]);
start([...tsx, 'bench/feed-ideal-server.ts', String(PORTS.kept), userId, 'kept']);
await Promise.all([ready(PORTS.bare), ready(PORTS.ideal), ready(PORTS.kept)]);

interface Scenario {
  name: string;
  port: number;
  query: string;
  connections: number[];
}
const A = '/api/client/activity';
const SCENARIOS: Scenario[] = [
  { name: 'bare node:http', port: PORTS.bare, query: A, connections: [1, 16, 64] },
  { name: 'minimal driver server', port: PORTS.ideal, query: A, connections: [1, 16, 64] },
  // The same, reading the total from the feed's kept count as Aerie does for an unfiltered feed.
  { name: 'minimal driver server, kept count', port: PORTS.kept, query: A, connections: [16] },
  { name: 'aerie default', port: PORTS.aerie, query: A, connections: [1, 16, 64] },
  {
    name: 'aerie filter[event]=api-key',
    port: PORTS.aerie,
    query: `${A}?filter[event]=api-key`,
    connections: [16],
  },
  {
    name: 'aerie filter[ip]=10.0.1.',
    port: PORTS.aerie,
    query: `${A}?filter[ip]=10.0.1.`,
    connections: [16],
  },
  {
    name: 'aerie filter[actor_id]=system',
    port: PORTS.aerie,
    query: `${A}?filter[actor_id]=system`,
    connections: [16],
  },
  { name: 'aerie page=400', port: PORTS.aerie, query: `${A}?page=400&per_page=25`, connections: [1, 16] },
];

// Warm every server and query once, briefly.
for (const s of SCENARIOS) {
  await autocannon({
    url: `http://127.0.0.1:${s.port}${s.query}`,
    connections: 4,
    duration: 1,
    headers: auth,
  });
}

type Sample = { rps: number; mean: number; p50: number; p99: number };
const samples = new Map<string, Sample[]>();
for (let run = 0; run < runs; run += 1) {
  for (const s of SCENARIOS) {
    for (const connections of s.connections) {
      const result = await autocannon({
        url: `http://127.0.0.1:${s.port}${s.query}`,
        connections,
        duration,
        headers: auth,
      });
      if (result.non2xx > 0 || result.errors > 0)
        throw new Error(`${s.name}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
      const sample = {
        rps: result.requests.average,
        mean: result.latency.mean,
        p50: result.latency.p50,
        p99: result.latency.p99,
      };
      const key = `${s.name} @${connections}`;
      samples.set(key, [...(samples.get(key) ?? []), sample]);
      fs.appendFileSync(
        values.out,
        `${JSON.stringify({ label: values.label, scenario: s.name, connections, run, ...sample })}\n`,
      );
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const spread = (xs: number[], digits = 0) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
process.stdout.write(
  `\n### ${values.label}\n\n| scenario | conns | req/s median (min–max) | × minimal driver | × minimal driver, kept count | × bare | mean ms | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|---|\n`,
);
for (const [key, list] of samples) {
  const [name, at] = key.split(' @') as [string, string];
  const rps = median(list.map((x) => x.rps));
  const ideal = median(
    (samples.get(`minimal driver server @${at}`) ?? samples.get('minimal driver server @16')!).map(
      (x) => x.rps,
    ),
  );
  const kept = median(samples.get('minimal driver server, kept count @16')!.map((x) => x.rps));
  const bare = median(
    (samples.get(`bare node:http @${at}`) ?? samples.get('bare node:http @16')!).map((x) => x.rps),
  );
  process.stdout.write(
    `| ${name} | ${at} | ${spread(list.map((x) => x.rps))} | ${(rps / ideal).toFixed(2)} | ${(rps / kept).toFixed(2)} | ${(rps / bare).toFixed(3)} | ${spread(
      list.map((x) => x.mean),
      2,
    )} | ${spread(list.map((x) => x.p50))} | ${spread(list.map((x) => x.p99))} |\n`,
  );
}
process.exit(0);
