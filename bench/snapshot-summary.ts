/**
 * The summary of bench/snapshot-vs-restic.sh, from its results file: per contender, the median
 * (min–max) over runs of the first backup, the later backups (each run's median of its days 1-5),
 * the storage after 6 backups, the restore and the peak RSS; then the ratios against restic.
 * Prints Markdown tables.
 *
 *   node --import tsx bench/snapshot-summary.ts RESULTS
 *
 * The results file has one line per measure:
 *   backup RUN CONTENDER DAY WALL_S CPU_S MAX_RSS_KIB
 *   stored RUN CONTENDER BYTES
 *   restore RUN CONTENDER WALL_S CPU_S MAX_RSS_KIB
 *   note TEXT…
 */
import fs from 'node:fs';

const file = process.argv[2];
if (!file) throw new Error('usage: snapshot-summary.ts RESULTS');

interface Step {
  wall: number;
  cpu: number;
  rssMiB: number;
}
interface Run {
  backups: Map<number, Step>;
  stored?: number;
  restore?: Step;
}

const ORDER = ['restic', 'borg', 'tar-czf', 'tar-pigz', 'aerie'];
const runs = new Map<string, Map<string, Run>>(); // contender -> run -> measures
const notes: string[] = [];
const runOf = (contender: string, run: string): Run => {
  if (!runs.has(contender)) runs.set(contender, new Map());
  const byRun = runs.get(contender)!;
  if (!byRun.has(run)) byRun.set(run, { backups: new Map() });
  return byRun.get(run)!;
};
const step = (wall: string, cpu: string, kib: string): Step => ({
  wall: +wall,
  cpu: +cpu,
  rssMiB: +kib / 1024,
});

for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
  const [kind, ...rest] = line.trim().split(/\s+/);
  if (kind === 'note') {
    const text = rest.join(' ');
    if (!notes.includes(text)) notes.push(text);
  } else if (kind === 'backup') {
    const [run, contender, day, wall, cpu, kib] = rest as [string, string, string, string, string, string];
    runOf(contender, run).backups.set(+day, step(wall, cpu, kib));
  } else if (kind === 'stored') {
    const [run, contender, bytes] = rest as [string, string, string];
    runOf(contender, run).stored = +bytes;
  } else if (kind === 'restore') {
    const [run, contender, wall, cpu, kib] = rest as [string, string, string, string, string];
    runOf(contender, run).restore = step(wall, cpu, kib);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
/** "median (min–max)", or the one value when there is one run. */
function stat(xs: number[], digits: number): string {
  if (xs.length === 0) return '–';
  const f = (x: number) => x.toFixed(digits);
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? f(median(xs)) : `${f(median(xs))} (${f(lo)}–${f(hi)})`;
}

interface Figures {
  first: number[];
  later: number[];
  firstCpu: number[];
  laterCpu: number[];
  storedMB: number[];
  restore: number[];
  backupRss: number[];
  restoreRss: number[];
}
const figures = new Map<string, Figures>();
const contenders = [...runs.keys()].sort(
  (a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b),
);
for (const contender of contenders) {
  const f: Figures = {
    first: [],
    later: [],
    firstCpu: [],
    laterCpu: [],
    storedMB: [],
    restore: [],
    backupRss: [],
    restoreRss: [],
  };
  for (const run of runs.get(contender)!.values()) {
    const first = run.backups.get(0);
    const later = [...run.backups].filter(([day]) => day > 0).map(([, s]) => s);
    if (first) {
      f.first.push(first.wall);
      f.firstCpu.push(first.cpu);
    }
    if (later.length > 0) {
      f.later.push(median(later.map((s) => s.wall)));
      f.laterCpu.push(median(later.map((s) => s.cpu)));
    }
    if (run.backups.size > 0) f.backupRss.push(Math.max(...[...run.backups.values()].map((s) => s.rssMiB)));
    if (run.stored !== undefined) f.storedMB.push(run.stored / 1e6);
    if (run.restore) {
      f.restore.push(run.restore.wall);
      f.restoreRss.push(run.restore.rssMiB);
    }
  }
  figures.set(contender, f);
}

const runCount = Math.max(...[...runs.values()].map((r) => r.size));
console.log(
  `${runCount} run(s); times in seconds (wall), median (min–max) over runs; MB = 10^6 bytes, MiB = 2^20.`,
);
console.log('"later backups" is each run\'s median of the backups after days 1 to 5.\n');
console.log(
  '| contender | first backup s | later backups s | CPU s first / later | stored MB after 6 | restore s | peak RSS MiB backup / restore |',
);
console.log('|---|---|---|---|---|---|---|');
for (const [name, f] of figures) {
  console.log(
    `| ${name} | ${stat(f.first, 2)} | ${stat(f.later, 2)} | ${stat(f.firstCpu, 1)} / ${stat(f.laterCpu, 2)} | ` +
      `${stat(f.storedMB, 1)} | ${stat(f.restore, 2)} | ${stat(f.backupRss, 0)} / ${stat(f.restoreRss, 0)} |`,
  );
}

const restic = figures.get('restic');
if (restic) {
  const ratio = (base: number[], x: number[]) =>
    base.length && x.length ? `${(median(base) / median(x)).toFixed(2)}x` : '–';
  console.log(
    "\nAgainst restic (ratios of the medians): speed = restic's time / the contender's (above 1: faster than restic);",
  );
  console.log("storage = the contender's / restic's (below 1: smaller than restic).\n");
  console.log('| contender | first backup speed | later backups speed | restore speed | storage |');
  console.log('|---|---|---|---|---|');
  for (const [name, f] of figures) {
    if (name === 'restic') continue;
    const storage =
      f.storedMB.length && restic.storedMB.length
        ? `${(median(f.storedMB) / median(restic.storedMB)).toFixed(2)}x`
        : '–';
    console.log(
      `| ${name} | ${ratio(restic.first, f.first)} | ${ratio(restic.later, f.later)} | ${ratio(restic.restore, f.restore)} | ${storage} |`,
    );
  }
}
if (notes.length > 0) console.log(`\n${notes.map((n) => `Note: ${n}.`).join('\n')}`);
