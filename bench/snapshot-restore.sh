#!/usr/bin/env bash
# Restoring and downloading a snapshot backup of the days-of-play volume (bench/days-of-play.ts:
# 326 MB, 3,115 files), against `tar -xzf` and `tar -czf` of the same tree. Per round, in turn:
#   - tar -xzf of a tar -czf of the volume, into an empty directory;
#   - the API restore end to end (bench/restore-run.ts: a process with a running worker asks for
#     the restore and waits until the server's status clears), truncating, without and with the
#     undo backup it takes by default;
#   - `aerie backup extract` into an empty directory;
#   - a download through the signed link from `aerie serve` (curl to /dev/null), against
#     `tar -czf` of the volume to /dev/null.
# Prints each run (wall s, CPU s, max RSS KiB from GNU time), then medians (min–max) and ratios,
# and the peak RSS of `aerie serve` and of the process it makes each download in (VmHWM, read
# from /proc every 20 ms while the downloads run).
#
#   bash bench/snapshot-restore.sh [RUNS] [WORK DIR]    (default 3 runs, /tmp/aerie-bench-restore)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
WORK=${2:-/tmp/aerie-bench-restore}
[ -x /usr/bin/time ] || { echo "GNU time is missing (apt-get install time)" >&2; exit 1; }
npm run build --silent
rm -rf "$WORK" && mkdir -p "$WORK"
trap 'kill "${SERVE:-0}" "${WATCH:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
# The API restore's process: bench/restore-run.ts bundled with the program, as dist/ is.
RUN_BUILD=$PWD/.bench-dist/restore-run
rm -rf "$RUN_BUILD"
node --import tsx scripts/bundle.ts --out "$RUN_BUILD" bench/restore-run.ts
. bench/bench-server.sh
node --import tsx bench/days-of-play.ts init "$WORK/tree" > /dev/null
cp -a "$WORK/tree/." "$VOLUME/"
BACKUP=$(node bin/aerie.js backup create --server "$SERVER" --name bench --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).uuid))')
tar -czf "$WORK/tree.tar.gz" -C "$WORK/tree" .
UUID=$(node -e 'const [s]=process.argv.slice(1);console.log(s)' "$(ls "$AERIE_DATA_DIR/volumes")")

measure() { # name, command...
  local name=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" > "$WORK/out" 2>&1 || { cat "$WORK/out"; exit 1; }
  awk -v n="$name" '{ printf "%s %.2f %.2f %d\n", n, $1, $2 + $3, $4 }' "$WORK/time" | tee -a "$WORK/results"
}

# The API: a key for the bench user, and a server answering on a free port.
TOKEN=$(node bin/aerie.js key create --user bench --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')
PORT=18093
node bin/aerie.js serve --port $PORT > "$WORK/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health/live" > /dev/null 2>&1 && break; sleep 0.1; done
# The download processes' peak RSS: each child of the server, read every 20 ms while a download
# runs (only then: the polling would take CPU from the other steps).
echo 0 > "$WORK/child-peak"
watch_downloads() {
  local peak rss
  peak=$(cat "$WORK/child-peak")
  while :; do
    for child in $(pgrep -P "$SERVE" || true); do
      rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$child/status" 2>/dev/null || true)
      if [ -n "$rss" ] && [ "$rss" -gt "$peak" ]; then peak=$rss; echo "$peak" > "$WORK/child-peak"; fi
    done
    sleep 0.02
  done
}
download() {
  local url
  url=$(curl -sf -H "Authorization: Bearer $TOKEN" -H 'Accept: application/json' \
    "http://127.0.0.1:$PORT/api/client/servers/$SERVER/backups/$BACKUP/download" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).attributes.url))')
  curl -sf -o /dev/null "$url"
}

: > "$WORK/results"
for run in $(seq 1 "$RUNS"); do
  rm -rf "$WORK/x" && mkdir "$WORK/x"
  measure tar-xzf tar -xzf "$WORK/tree.tar.gz" -C "$WORK/x"
  measure api-restore-no-undo env BENCH_UNDO=false \
    node "$RUN_BUILD/restore-run.js" "$AERIE_DATA_DIR" "$UUID" "$BACKUP" true
  measure api-restore-undo node "$RUN_BUILD/restore-run.js" "$AERIE_DATA_DIR" "$UUID" "$BACKUP" true
  rm -rf "$WORK/x"
  measure aerie-extract node bin/aerie.js backup extract --server "$SERVER" --backup "$BACKUP" --to "$WORK/x"
  [ "$run" != 1 ] || diff -r "$WORK/tree" "$WORK/x" > /dev/null
  measure tar-czf sh -c "tar -czf - -C '$WORK/tree' . > /dev/null"
  watch_downloads &
  WATCH=$!
  measure aerie-download sh -c "$(declare -f download); TOKEN=$TOKEN PORT=$PORT SERVER=$SERVER BACKUP=$BACKUP download"
  kill "$WATCH" 2>/dev/null || true
  wait "$WATCH" 2>/dev/null || true
done
SERVE_PEAK=$(awk '/^VmHWM/ { print $2 }' "/proc/$SERVE/status")
kill "$SERVE" 2>/dev/null || true
echo "aerie serve peak RSS: $((SERVE_PEAK / 1024)) MiB; a download process's: $(($(cat "$WORK/child-peak") / 1024)) MiB"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split(" "));
const by = {};
for (const [n, wall, cpu, rss] of lines) (by[n] ??= []).push({ wall: +wall, cpu: +cpu, rss: +rss });
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const row = (n) => { const w = by[n].map((r) => r.wall); return { med: med(w), min: Math.min(...w), max: Math.max(...w), rss: Math.max(...by[n].map((r) => r.rss)) }; };
for (const n of Object.keys(by)) { const r = row(n); console.log(`${n.padEnd(22)} ${r.med.toFixed(2)} s (${r.min.toFixed(2)}–${r.max.toFixed(2)}), peak ${(r.rss / 1024).toFixed(0)} MiB`); }
const ratio = (base, n) => (row(base).med / row(n).med).toFixed(2);
console.log(`API restore (no undo) speed vs tar -xzf: ${ratio("tar-xzf", "api-restore-no-undo")}x`);
console.log(`API restore (undo) speed vs tar -xzf: ${ratio("tar-xzf", "api-restore-undo")}x`);
console.log(`extract speed vs tar -xzf: ${ratio("tar-xzf", "aerie-extract")}x`);
console.log(`download speed vs tar -czf: ${ratio("tar-czf", "aerie-download")}x`);
' "$WORK/results"
