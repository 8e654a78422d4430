#!/usr/bin/env bash
# Restores a ~1 GiB archive of mixed files with Aerie's restore job and with `tar -xzf`, and
# prints wall time and peak memory (max RSS) of each. Needs GNU time (/usr/bin/time).
#
#   bash bench/restore.sh [work dir]      (default /tmp/aerie-bench; needs ~4 GiB free)
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/aerie-bench}
npm run build --silent # the restore runs Aerie's compiled build, as `aerie worker` does
rm -rf "$WORK" && mkdir -p "$WORK/src"

echo "== generating the tree (mixed: many small text files, medium and large binary files)"
node --import tsx bench/make-tree.ts "$WORK/src"
tar -czf "$WORK/archive.tar.gz" -C "$WORK/src" .
ARCHIVE_BYTES=$(stat -c %s "$WORK/archive.tar.gz")
FILES=$(find "$WORK/src" -type f | wc -l)
echo "archive: $ARCHIVE_BYTES bytes, $FILES files, $(du -sb "$WORK/src" | cut -f1) bytes unpacked"

measure() { # label, command...
  local label=$1; shift
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" > "$WORK/out.txt"
  read -r secs kib < "$WORK/time.txt"
  printf '%-44s %8.2f s %10d KiB max RSS\n' "$label" "$secs" "$kib"
}

for run in 1 2 3; do
  rm -rf "$WORK/tar-out" && mkdir "$WORK/tar-out"
  measure "tar -xzf (run $run)" tar -xzf "$WORK/archive.tar.gz" -C "$WORK/tar-out"

  rm -rf "$WORK/data"
  node --import tsx bench/restore-setup.ts "$WORK/data" "$WORK/archive.tar.gz" true > /dev/null
  measure "aerie restore, truncate (run $run)" node --import tsx bench/restore-run.ts "$WORK/data"

  # Without truncate, onto a volume that already holds the same tree (the merge path).
  rm -rf "$WORK/data"
  VOLUME=$(node --import tsx bench/restore-setup.ts "$WORK/data" "$WORK/archive.tar.gz" false)
  cp -a "$WORK/src/." "$VOLUME/"
  measure "aerie restore, no truncate, full volume (run $run)" node --import tsx bench/restore-run.ts "$WORK/data"
done
rm -rf "$WORK"
