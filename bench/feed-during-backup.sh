#!/usr/bin/env bash
# The feed's p50/p99 at 16 connections, idle and while a backup of the bench tree (about
# 1.1 GiB, bench/make-tree.ts) is being made through the API, on SQLite with 100,000 activity
# rows, 10,000 of them in the user's feed. The target: p99 during the backup within 2x idle p99.
#
#   bash bench/feed-during-backup.sh [RUNS] [WORK DIR]    (default 5 runs, /tmp/aerie-bench-busy)
#
# Set TREE to an existing tree (from bench/make-tree.ts) to skip generating one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
WORK=${2:-/tmp/aerie-bench-busy}
[ "${FEED_SKIP_BUILD:-}" = 1 ] || npm run build --silent
rm -rf "$WORK" && mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
export AERIE_DATA_DIR=$WORK/data DATABASE_URL=sqlite:$WORK/data/aerie.db LOG_LEVEL=silent
node --import tsx bench/seed-activity.ts --total 100000 --user bench --entries 10000 >"$WORK/env" 2>"$WORK/seed.log"
SERVER_JSON=$(node bin/aerie.js server create --owner bench --name bench --json)
SERVER=$(node -e 'console.log(JSON.parse(process.argv[1]).identifier)' "$SERVER_JSON")
VOLUME=$(node -e 'console.log(JSON.parse(process.argv[1]).volume)' "$SERVER_JSON")
if [ -n "${TREE:-}" ]; then cp -a "$TREE/." "$VOLUME/"; else node --import tsx bench/make-tree.ts "$VOLUME"; fi
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  node: $(node -v)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
echo "tree: $(find "$VOLUME" -type f | wc -l) files, $(du -sb "$VOLUME" | cut -f1) bytes"
set -a; . "$WORK/env"; set +a
SERVER=$SERVER node --import tsx bench/feed-during-backup.ts --runs "$RUNS"
