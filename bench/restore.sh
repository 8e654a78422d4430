#!/usr/bin/env bash
# Restores a ~1.2 GiB archive of mixed files with Aerie and with `tar -xzf`, alternating run by
# run, and prints each run's wall time and peak memory (max RSS, from GNU time), then medians
# with min and max and the ratio of tar's median time to Aerie's (above 1: Aerie is faster).
# Aerie is measured end to end: a process with a running job worker asks for the restore and
# waits until the server's status clears (bench/restore-run.ts). Two figures each: the process's
# whole wall time (Node's start and everything the worker does, including deleting the replaced
# tree after the status cleared), and the time from the request to the status clearing, which
# is what a user waits for.
#
#   bash bench/restore.sh [work dir]      (default /tmp/aerie-bench; needs ~5 GiB free)
#
# RUNS (default 5) sets the number of rounds. The measured process is bench/restore-run.ts
# bundled with the program (`node --import tsx scripts/bundle.ts --out DIR bench/restore-run.ts`,
# into .bench-dist/restore-run); BENCH_BUILD=DIR measures such a build made elsewhere instead.
# BENCH_BEFORE=DIR also runs, in every round, the one in DIR (built so in a checkout of an earlier
# commit, beside a node_modules).
# BENCH_TREE=DIR BENCH_ARCHIVE=FILE reuse a tree made by bench/make-tree.ts and its tar -czf.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/aerie-bench}
RUNS=${RUNS:-5}
# The restore runs bundled, as `aerie serve` does (plain JavaScript, no TypeScript loader).
AFTER=${BENCH_BUILD:-$PWD/.bench-dist/restore-run}
if [ -z "${BENCH_BUILD:-}" ]; then
  rm -rf "$AFTER"
  node --import tsx scripts/bundle.ts --out "$AFTER" bench/restore-run.ts
fi
rm -rf "$WORK" && mkdir -p "$WORK"
TREE=${BENCH_TREE:-$WORK/src}
ARCHIVE=${BENCH_ARCHIVE:-$WORK/archive.tar.gz}
if [ -z "${BENCH_TREE:-}" ]; then
  echo "== generating the tree (mixed: many small text files, medium and large binary files)"
  mkdir "$TREE" && node --import tsx bench/make-tree.ts "$TREE"
  tar -czf "$ARCHIVE" -C "$TREE" .
fi
echo "archive: $(stat -c %s "$ARCHIVE") bytes, $(find "$TREE" -type f | wc -l) files," \
  "$(du -sb "$TREE" | cut -f1) bytes unpacked"
read -r SERVER VOLUME BACKUP < <(node --import tsx bench/restore-setup.ts "$WORK/data" "$ARCHIVE")

RESULTS="$WORK/results.txt"
: > "$RESULTS"
measure() { # label, command...
  local label=$1; shift
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "$@" > "$WORK/out.txt"
  read -r secs kib user sys < "$WORK/time.txt"
  local cpu waited
  cpu=$(echo "$user + $sys" | bc -l)
  # Aerie prints the milliseconds from the request to the status clearing; tar, nothing.
  waited=$(head -c 32 "$WORK/out.txt" | tr -dc 0-9)
  waited=$(if [ -n "$waited" ]; then echo "$waited / 1000" | bc -l; else echo "$secs"; fi)
  printf '%-34s %7.2f s %7.1f MB max RSS %7.2f s CPU %7.2f s until the status cleared\n' "$label" "$secs" \
    "$(echo "$kib / 1024" | bc -l)" "$cpu" "$waited"
  echo "$label|$secs|$kib|$cpu|$waited" >> "$RESULTS"
}
empty_volume() { find "$VOLUME" -mindepth 1 -delete; }
full_volume() { empty_volume; cp -a "$TREE/." "$VOLUME/"; }
restore() { # label, truncate, build dir
  local build=$3
  measure "$1" node "$build/restore-run.js" "$WORK/data" "$SERVER" "$BACKUP" "$2"
}

for run in $(seq 1 "$RUNS"); do
  echo "== round $run (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  rm -rf "$WORK/tar-out" && mkdir "$WORK/tar-out"
  measure "tar -xzf" tar -xzf "$ARCHIVE" -C "$WORK/tar-out"
  # The baseline for a restore without truncate onto a full volume: tar over the same tree, which
  # replaces each existing file (unlinks it, then creates it anew).
  rm -rf "$WORK/tar-out" && mkdir "$WORK/tar-out" && cp -a "$TREE/." "$WORK/tar-out/"
  measure "tar -xzf, full directory" tar -xzf "$ARCHIVE" -C "$WORK/tar-out"
  empty_volume
  restore "aerie, truncate" true "$AFTER"
  if [ -n "${BENCH_BEFORE:-}" ]; then
    empty_volume
    restore "before, truncate" true "$BENCH_BEFORE"
  fi
  # Without truncate, onto a volume that already holds the same tree (the merge path).
  full_volume
  restore "aerie, no truncate, full volume" false "$AFTER"
  if [ -n "${BENCH_BEFORE:-}" ]; then
    full_volume
    restore "before, no truncate, full volume" false "$BENCH_BEFORE"
  fi
done

echo "== medians of $RUNS runs (min-max)"
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split("|"));
const by = new Map();
for (const [label, secs, kib, cpu, waited] of rows) { if (!by.has(label)) by.set(label, []); by.get(label).push([+secs, +kib / 1024, +cpu, +waited]); }
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
for (const [label, runs] of by) {
  // Without truncate, onto a full volume, Aerie is compared with tar over a full directory.
  const baseline = / full /.test(label) && by.has("tar -xzf, full directory") ? "tar -xzf, full directory" : "tar -xzf";
  const tar = med(by.get(baseline).map((r) => r[0]));
  const t = runs.map((r) => r[0]), m = runs.map((r) => r[1]), c = runs.map((r) => r[2]);
  // Ratio of the medians, and the median of the ratios within each round (same load).
  const rounds = t.map((secs, i) => by.get(baseline)[i][0] / secs);
  const ratio = label.startsWith("tar ") ? "" : `  ${(tar / med(t)).toFixed(2)}x ${baseline} (per round: ${med(rounds).toFixed(2)}x, ${Math.min(...rounds).toFixed(2)}-${Math.max(...rounds).toFixed(2)})`;
  console.log(`${label.padEnd(34)} ${med(t).toFixed(2)} s (${Math.min(...t).toFixed(2)}-${Math.max(...t).toFixed(2)})  ${med(m).toFixed(0)} MB (${Math.min(...m).toFixed(0)}-${Math.max(...m).toFixed(0)})  CPU ${med(c).toFixed(2)} s${ratio}`);
  if (label.startsWith("tar ")) continue;
  // What the user waits for: the request to the status clearing (no process start, nor work done after).
  const w = runs.map((r) => r[3]);
  const waitRounds = w.map((secs, i) => by.get(baseline)[i][0] / secs);
  console.log(`${"  until the status cleared".padEnd(34)} ${med(w).toFixed(2)} s (${Math.min(...w).toFixed(2)}-${Math.max(...w).toFixed(2)})  ${(tar / med(w)).toFixed(2)}x ${baseline} (per round: ${med(waitRounds).toFixed(2)}x, ${Math.min(...waitRounds).toFixed(2)}-${Math.max(...waitRounds).toFixed(2)})`);
}' "$RESULTS"
rm -rf "$WORK/tar-out" "$WORK/data"
[ -n "${BENCH_TREE:-}" ] || rm -rf "$WORK/src" "$WORK/archive.tar.gz"
