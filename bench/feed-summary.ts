/**
 * p50 and throughput by table size, from the JSON lines bench/feed-run.ts appends: for each
 * engine and scenario, the median at each size, and the largest size against the smallest.
 *
 *   node --import tsx bench/feed-summary.ts results.jsonl
 */
import fs from 'node:fs';

interface Line {
  label: string;
  scenario: string;
  connections: number;
  rps: number;
  p50: number;
}
const file = process.argv[2];
if (file === undefined) throw new Error('usage: feed-summary.ts RESULTS.jsonl');
const lines = fs
  .readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Line);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

// "sqlite, 1000000 rows" → engine "sqlite", size 1000000
const groups = new Map<string, Map<number, Line[]>>();
for (const line of lines) {
  const match = /^(.*), (\d+) rows$/.exec(line.label);
  if (!match || !line.scenario.startsWith('aerie')) continue;
  const key = `${match[1]} | ${line.scenario} | ${line.connections}`;
  const bySize = groups.get(key) ?? new Map<number, Line[]>();
  bySize.set(Number(match[2]), [...(bySize.get(Number(match[2])) ?? []), line]);
  groups.set(key, bySize);
}
process.stdout.write(
  '\n### By table size\n\n| engine | scenario | conns | p50 ms by size | req/s by size | p50 largest ÷ smallest |\n|---|---|---|---|---|---|\n',
);
for (const [key, bySize] of groups) {
  const sizes = [...bySize.keys()].sort((a, b) => a - b);
  const p50 = sizes.map((s) => median(bySize.get(s)!.map((l) => l.p50)));
  const rps = sizes.map((s) => median(bySize.get(s)!.map((l) => l.rps)));
  const name = (s: number) => (s >= 1e6 ? `${s / 1e6}M` : `${s / 1e3}k`);
  const ratio = p50[0]! > 0 ? (p50[p50.length - 1]! / p50[0]!).toFixed(2) : 'n/a (p50 0 ms)';
  process.stdout.write(
    `| ${key.replaceAll(' | ', ' | ')} | ${sizes.map((s, i) => `${name(s)}: ${p50[i]}`).join(', ')} | ${sizes.map((s, i) => `${name(s)}: ${rps[i]?.toFixed(0)}`).join(', ')} | ${ratio} |\n`,
  );
}
