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
  mean?: number;
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
  '\n### By table size\n\n| engine | scenario | conns | req/s | p50 ms | mean ms | p50, largest ÷ smallest | mean, largest ÷ smallest |\n|---|---|---|---|---|---|---|---|\n',
);
const name = (size: number) => (size >= 1e6 ? `${size / 1e6}M` : `${size / 1e3}k`);
const ratio = (xs: number[]) => (xs[0]! > 0 ? (xs[xs.length - 1]! / xs[0]!).toFixed(2) : 'n/a (0 ms)');
for (const [key, bySize] of groups) {
  const sizes = [...bySize.keys()].sort((a, b) => a - b);
  const of = (pick: (l: Line) => number) => sizes.map((size) => median(bySize.get(size)!.map(pick)));
  const [rps, p50, mean] = [of((l) => l.rps), of((l) => l.p50), of((l) => l.mean ?? NaN)];
  const show = (xs: number[], digits: number) =>
    sizes.map((size, i) => `${name(size)}: ${xs[i]!.toFixed(digits)}`).join(', ');
  process.stdout.write(
    `| ${key} | ${show(rps, 0)} | ${show(p50, 0)} | ${show(mean, 2)} | ${ratio(p50)} | ${ratio(mean)} |\n`,
  );
}
