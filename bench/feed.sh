#!/usr/bin/env bash
# The activity feed under load: `aerie serve` (compiled, rate limits off, logs silent) against
# two baselines measured in the same run — bare node:http sending the same bytes, and a minimal
# node:http + driver server running the ideal queries — with autocannon, for each engine and
# table size. Each size is seeded afresh (bench/seed-activity.ts: one user with FEED_ENTRIES
# entries among N rows) into a scratch database that is dropped afterwards.
#
#   bash bench/feed.sh                      # SQLite and PostgreSQL, 100k and 1M rows
#   FEED_SIZES="100000 1000000 5000000" FEED_ENGINES="sqlite postgres mysql" bash bench/feed.sh
#
# Other knobs: FEED_ENTRIES (10000), FEED_RUNS (3), FEED_DURATION (seconds a run, 3),
# FEED_POSTGRES_URL, FEED_MYSQL_URL (a server and a database to connect to first).
# Prints the machine, then one table per engine and size (medians, min–max, ratios against the
# baselines), then p50 by table size. Raw figures: $FEED_OUT (default: a temporary file).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${FEED_SIZES:-"100000 1000000"}
ENGINES=${FEED_ENGINES:-"sqlite postgres"}
ENTRIES=${FEED_ENTRIES:-10000}
RUNS=${FEED_RUNS:-3}
DURATION=${FEED_DURATION:-3}
PG=${FEED_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
MY=${FEED_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}
WORK=$(mktemp -d /tmp/aerie-feed-bench-XXXXXX)
OUT=${FEED_OUT:-$WORK/results.jsonl}
DB_NAME=aerie_bench_feed_$$

scratch() { # scratch create|drop postgres|mysql
  node -e '
    const [action, kind, url, name] = process.argv.slice(1);
    const statement = action === "create" ? `create database ${name}` : `drop database if exists ${name}`;
    (kind === "postgres"
      ? (async () => { const c = new (require("pg").Client)({ connectionString: url }); await c.connect(); await c.query(statement); await c.end(); })()
      : (async () => { const c = await require("mysql2/promise").createConnection(url); await c.query(statement); await c.end(); })()
    ).catch((e) => { console.error(e.message); process.exit(1); });
  ' "$1" "$2" "$([ "$2" = postgres ] && echo "$PG" || echo "$MY")" "$DB_NAME"
}
cleanup() {
  for kind in $ENGINES; do [ "$kind" = sqlite ] || scratch drop "$kind" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

[ "${FEED_SKIP_BUILD:-}" = 1 ] || npm run build >/dev/null
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  node: $(node -v)  nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
free -h | head -2
echo "entries in the user's feed: $ENTRIES; runs: $RUNS of ${DURATION}s each; autocannon $(node -p 'require("autocannon/package.json").version')"

for kind in $ENGINES; do
  for size in $SIZES; do
    dir=$WORK/$kind-$size
    mkdir -p "$dir"
    case $kind in
      sqlite) url=sqlite:$dir/aerie.db ;;
      postgres) scratch drop postgres; scratch create postgres; url=${PG%/*}/$DB_NAME ;;
      mysql) scratch drop mysql; scratch create mysql; url=${MY%/*}/$DB_NAME ;;
    esac
    AERIE_DATA_DIR=$dir DATABASE_URL=$url node --import tsx bench/seed-activity.ts \
      --total "$size" --user bench --entries "$ENTRIES" >"$dir/env" 2>"$dir/seed.log"
    echo "seeded $kind $size: $(tail -1 "$dir/seed.log")"
    (
      set -a; . "$dir/env"; set +a
      AERIE_DATA_DIR=$dir DATABASE_URL=$url node --import tsx bench/feed-run.ts \
        --label "$kind, $size rows" --out "$OUT" --runs "$RUNS" --duration "$DURATION"
    )
    [ "$kind" = sqlite ] && rm -rf "$dir" || scratch drop "$kind"
  done
done
node --import tsx bench/feed-summary.ts "$OUT"
