#!/usr/bin/env bash
# Peak RSS of `aerie serve` and `aerie worker` while they make a backup of the bench tree through
# the API (bench/backup-memory.ts), on SQLite. The target: under 200 MB in every process.
#
#   bash bench/backup-memory.sh [RUNS] [WORK DIR]    (default 3 runs, /tmp/aerie-bench-memory)
#
# Set TREE to an existing tree (from bench/make-tree.ts) to skip generating one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
WORK=${2:-/tmp/aerie-bench-memory}
npm run build --silent
rm -rf "$WORK" && mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
. bench/bench-server.sh
KEY_JSON=$(aerie key create --user bench --description bench --json)
TOKEN=$(node -e 'console.log(JSON.parse(process.argv[1]).token)' "$KEY_JSON")
export SERVER TOKEN
if [ -n "${TREE:-}" ]; then cp -a "$TREE/." "$VOLUME/"; else node --import tsx bench/make-tree.ts "$VOLUME"; fi
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  node: $(node -v)  nproc: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tree: $(find "$VOLUME" -type f | wc -l) files, $(du -sb "$VOLUME" | cut -f1) bytes"
node --import tsx bench/backup-memory.ts --runs "$RUNS"
