#!/usr/bin/env bash
# Creating a backup: `aerie backup create` (the compiled build, as users run it) against
# `tar -czf` and against tar piped through pigz, on the same tree. Prints each run's wall time,
# CPU time (user + system, all threads and children) and peak RSS from GNU time, then the median,
# minimum and maximum of each contender and the ratios of the medians.
#
#   bash bench/backup.sh [RUNS] [WORK DIR]     (default 5 runs, /tmp/aerie-bench-backup)
#
# Needs GNU time (/usr/bin/time), pigz, and about 5 GiB free in the work directory. Set TREE to
# an existing tree (from bench/make-tree.ts) to skip generating one. The contenders alternate
# run by run, so that whatever else the machine does falls on all of them alike; each output
# file is deleted before the next run, and the page cache is dropped where the kernel allows it.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
WORK=${2:-/tmp/aerie-bench-backup}
command -v pigz >/dev/null || { echo "pigz is missing (apt-get install pigz)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is missing (apt-get install time)" >&2; exit 1; }
npm run build --silent
rm -rf "$WORK" && mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

. bench/bench-server.sh

if [ -n "${TREE:-}" ]; then
  cp -a "$TREE/." "$VOLUME/"
else
  echo "== generating the tree"
  node --import tsx bench/make-tree.ts "$VOLUME"
fi
echo "tree: $(find "$VOLUME" -type f | wc -l) files, $(du -sb "$VOLUME" | cut -f1) bytes"

# One run: prints "<wall s> <cpu s> <max RSS KiB> <output bytes>".
measure() { # output file, command...
  local out=$1; shift
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" > /dev/null
  local bytes
  bytes=$(stat -c %s "$out")
  awk -v bytes="$bytes" '{ printf "%.2f %.2f %d %d\n", $1, $2 + $3, $4, bytes }' "$WORK/time"
}

BACKUPS=$WORK/data/backups
: > "$WORK/results"
for run in $(seq 1 "$RUNS"); do
  r=$(measure "$WORK/tar.tgz" tar -czf "$WORK/tar.tgz" -C "$VOLUME" .)
  echo "tar-czf $r" | tee -a "$WORK/results"
  rm -f "$WORK/tar.tgz"

  r=$(measure "$WORK/pigz.tgz" tar -I pigz -cf "$WORK/pigz.tgz" -C "$VOLUME" .)
  echo "pigz $r" | tee -a "$WORK/results"
  rm -f "$WORK/pigz.tgz"

  r=$(measure "$WORK/aerie.json" sh -c \
    "node bin/aerie.js backup create --server $SERVER --name run-$run --json > '$WORK/aerie.json'")
  archive=$(ls "$BACKUPS"/*/*.tar.gz)
  r="${r% *} $(stat -c %s "$archive")" # the archive's size, not that of the printed record
  echo "aerie $r" | tee -a "$WORK/results"
  if [ "$run" = 1 ]; then # not timed: the archive is one that gzip and GNU tar read
    gzip -t "$archive"
    echo "  (checked: gzip -t passes; tar -tzf lists $(tar -tzf "$archive" | wc -l) entries)"
  fi
  rm -f "$archive"
done

echo
echo "== medians (min–max) of $RUNS runs"
node - "$WORK/results" <<'EOF'
const fs = require('node:fs');
const rows = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => l.split(' '));
const by = {};
for (const [name, wall, cpu, rss, bytes] of rows)
  (by[name] ??= []).push({ wall: +wall, cpu: +cpu, rss: +rss / 1024, bytes: +bytes });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stat = (xs, digits) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
const med = {};
for (const [name, runs] of Object.entries(by)) {
  med[name] = median(runs.map((r) => r.wall));
  console.log(
    `${name.padEnd(8)} wall ${stat(runs.map((r) => r.wall), 2)} s  cpu ${stat(runs.map((r) => r.cpu), 2)} s` +
      `  max RSS ${stat(runs.map((r) => r.rss), 0)} MiB  output ${runs[0].bytes} bytes`,
  );
}
console.log(`\naerie is ${(med['tar-czf'] / med.aerie).toFixed(2)}x as fast as tar -czf (median wall time)`);
console.log(`aerie is ${(med.pigz / med.aerie).toFixed(2)}x as fast as tar | pigz`);
console.log(`pigz is ${(med['tar-czf'] / med.pigz).toFixed(2)}x as fast as tar -czf`);
EOF
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -h | awk '/Mem:/ {print $2}') RAM;" \
  "node $(node --version); $(tar --version | head -1); pigz $(pigz --version 2>&1 | cut -d' ' -f2);" \
  "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
