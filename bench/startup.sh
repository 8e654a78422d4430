#!/usr/bin/env bash
# Start-up time and memory: the TypeScript sources run through tsx (how `npm start` ran before
# the build) against the compiled build in dist/ (how it runs now).
#
#   bash bench/startup.sh [RUNS]      # default 10 runs of each; needs GNU time and curl
#
# - migrate: `aerie migrate` on an up-to-date SQLite database (so nearly all of it is start-up):
#   wall time; peak RSS and CPU time (user + system) from GNU time.
# - serve: `aerie serve` on a fresh data directory, from launch to the first 200 from
#   GET /api/openapi.json (polled every 10 ms); the process's peak RSS (VmHWM) and CPU time
#   (utime + stime, all threads) at that moment.
# CPU time depends less than wall time on what else the machine is doing. The two variants
# alternate run by run. Medians, minima and maxima are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10}
[ -f dist/main.js ] || npm run build
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PORT=18600

tsx=(node --import tsx src/main.ts)
compiled=(node bin/aerie.js)

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# migrate <variant>: prints "<ms> <peak RSS KiB> <CPU ms>"
migrate() {
  local -n cmd=$1
  local start end
  start=$(now_ms)
  AERIE_DATA_DIR=$WORK/m DATABASE_URL=sqlite:$WORK/m/aerie.db LOG_LEVEL=silent \
    /usr/bin/time -f '%M %U %S' -o "$WORK/time" "${cmd[@]}" migrate >/dev/null
  end=$(now_ms)
  awk -v ms=$((end - start)) '{ printf "%d %d %d\n", ms, $1, ($2 + $3) * 1000 }' "$WORK/time"
}

# serve <variant>: prints "<ms to first response> <peak RSS KiB> <CPU ms>", both as of then
serve() {
  local -n cmd=$1
  local dir start pid end hwm cpu
  dir=$(mktemp -d -p "$WORK")
  start=$(now_ms)
  AERIE_DATA_DIR=$dir DATABASE_URL=sqlite:$dir/aerie.db LOG_LEVEL=silent PORT=$PORT \
    "${cmd[@]}" serve >/dev/null 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/openapi.json"; do sleep 0.01; done
  end=$(now_ms)
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$pid/stat")
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$((end - start)) $hwm $cpu"
}

mkdir -p "$WORK/m"
"${compiled[@]}" migrate >/dev/null 2>&1 # create the database once; every measured run is a no-op
for variant in tsx compiled; do
  migrate $variant >/dev/null # warm the page cache for both
done
for i in $(seq 1 "$RUNS"); do
  for variant in tsx compiled; do
    echo "migrate $variant $(migrate $variant)" | tee -a "$WORK/results"
    echo "serve $variant $(serve $variant)" | tee -a "$WORK/results"
  done
done

echo
echo "median (min-max) of $RUNS runs: wall time and CPU time in ms, peak RSS in MB"
node -e '
  const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split(" "));
  const stat = (xs) => { xs = xs.slice().sort((a, b) => a - b); const m = xs.length >> 1;
    return { med: xs.length % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2, min: xs[0], max: xs[xs.length - 1] }; };
  const fmt = (s, f = (x) => x) => `${f(s.med)} (${f(s.min)}-${f(s.max)})`;
  const mb = (kib) => (kib / 1024).toFixed(1);
  for (const what of ["migrate", "serve"]) {
    const of = (v) => rows.filter((r) => r[0] === what && r[1] === v);
    const t = {}, r = {}, c = {};
    for (const v of ["tsx", "compiled"]) {
      t[v] = stat(of(v).map((x) => +x[2])); r[v] = stat(of(v).map((x) => +x[3])); c[v] = stat(of(v).map((x) => +x[4]));
      console.log(`${what} ${v}: wall ${fmt(t[v])} ms, CPU ${fmt(c[v])} ms, RSS ${fmt(r[v], mb)} MB`);
    }
    const ratio = (s) => (s.compiled.med / s.tsx.med).toFixed(2);
    console.log(`${what} compiled/tsx: wall ${ratio(t)}, CPU ${ratio(c)}, RSS ${ratio(r)}`);
  }
' "$WORK/results"
