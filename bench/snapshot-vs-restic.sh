#!/usr/bin/env bash
# Day-after-day backups of one game-server volume: `aerie backup create` (the compiled build, as
# users run it) against restic, borg, `tar -czf` and tar piped through pigz. Each run makes a
# fresh ~326 MB volume (bench/days-of-play.ts init), backs it up with every contender, then
# applies days of play 1 to 5 (bench/days-of-play.ts day), each followed by a backup with every
# contender, so that all of them back up the same bytes at each step, with the mtimes a real
# server leaves (only the changed files get new ones). Then it measures the storage each
# contender used for its 6 backups and the time to restore the last one into an empty directory
# (checked against the volume with diff -r, untimed).
#
#   bash bench/snapshot-vs-restic.sh [RUNS] [WORK DIR]   (default 3 runs, /tmp/aerie-bench-snapshot)
#
# Prints a line per step (wall time, CPU time of all threads and children, peak RSS, from GNU
# time), then per contender the median, minimum and maximum over runs of: the first backup, the
# later backups (each run's median of its 5), the storage after 6 backups, the restore, the peak
# RSS; and the ratios against restic (speed: restic's time / the contender's; storage: the
# contender's / restic's). The results stay in WORK/results.txt; bench/snapshot-summary.ts prints
# the summary again from it.
#
# Installs restic, borgbackup, pigz and GNU time with apt-get when one is missing. Needs about
# 3 GiB free in the work directory; one run takes about 5 minutes on 2 cores. The contenders
# take turns in an order rotated run by run, so that neither the machine's other work nor a warm
# page cache favours one of them; the page cache is dropped before every timed step where the
# kernel allows it (in a container it usually does not: every contender then reads a warm cache).
#
# Aerie's restore: `aerie backup extract --server S --backup UUID --to DIR` when the CLI has that
# command; otherwise `tar -xzf` of the last backup's archive, labelled so in the summary.
set -euo pipefail
shopt -s inherit_errexit # a failing timed command fails the script, even inside $(...)
cd "$(dirname "$0")/.."
RUNS=${1:-3}
WORK=${2:-/tmp/aerie-bench-snapshot}

missing=
for tool in restic borg pigz; do command -v "$tool" >/dev/null || missing=1; done
[ -x /usr/bin/time ] || missing=1
if [ -n "$missing" ]; then
  echo "== installing restic, borgbackup, pigz and GNU time"
  apt-get update && apt-get install -y restic borgbackup pigz time
fi
npm run build --silent
rm -rf "$WORK" && mkdir -p "$WORK"
RUN=$WORK/run
trap 'rm -rf "$RUN" "$WORK/data" "$WORK/time" "$WORK/out"' EXIT
RESULTS=$WORK/results.txt
: > "$RESULTS"

# One timed step: prints "<wall s> <cpu s> <max RSS KiB>"; the command's output goes to $WORK/out.
measure() { # command...
  sync
  { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null || true
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" > "$WORK/out"
  awk '{ printf "%.2f %.2f %d\n", $1, $2 + $3, $4 }' "$WORK/time"
}

# The backup of day $2 by contender $1.
backup() {
  case $1 in
    restic) measure restic backup --quiet "$VOLUME" ;;
    borg) measure borg create --compression lz4 "$RUN/borg::day$2" "$VOLUME" ;;
    tar-czf) measure tar -czf "$RUN/tar-czf/day$2.tar.gz" -C "$VOLUME" . ;;
    tar-pigz) measure tar -I pigz -cf "$RUN/tar-pigz/day$2.tar.gz" -C "$VOLUME" . ;;
    aerie)
      measure node bin/aerie.js backup create --server "$SERVER" --name "day$2" --json
      node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).uuid)' \
        "$WORK/out" > "$RUN/aerie-last"
      ;;
  esac
}

# The bytes contender $1's 6 backups take.
stored() {
  case $1 in
    restic | borg | tar-czf | tar-pigz) du -sb "$RUN/$1" | cut -f1 ;;
    aerie) du -sb "$AERIE_DATA_DIR/backups" | cut -f1 ;;
  esac
}

# Restores contender $1's last backup into the empty directory $2.
restore() {
  case $1 in
    restic) measure restic restore latest --target "$2" ;;
    borg) measure env -C "$2" borg extract "$RUN/borg::day5" ;;
    tar-czf) measure tar -xzf "$RUN/tar-czf/day5.tar.gz" -C "$2" ;;
    tar-pigz) measure tar -I pigz -xf "$RUN/tar-pigz/day5.tar.gz" -C "$2" ;;
    aerie)
      local uuid
      uuid=$(cat "$RUN/aerie-last")
      if [ -n "$AERIE_EXTRACT" ]; then
        measure node bin/aerie.js backup extract --server "$SERVER" --backup "$uuid" --to "$2"
      else
        local archive
        archive=$(find "$AERIE_DATA_DIR/backups" -name "$uuid.tar.gz" | head -1)
        # Backups that are not one .tar.gz cannot be restored without the CLI: no figure.
        [ -n "$archive" ] || { echo "skipped"; return; }
        measure tar -xzf "$archive" -C "$2"
      fi
      ;;
  esac
}

CONTENDERS=(restic borg tar-czf tar-pigz aerie)
for run in $(seq 1 "$RUNS"); do
  rm -rf "$RUN" "$WORK/data" && mkdir -p "$RUN/tar-czf" "$RUN/tar-pigz"
  . bench/bench-server.sh # a fresh data directory: SERVER, VOLUME, AERIE_DATA_DIR
  if [ "$run" = 1 ]; then
    # An unknown subcommand makes the CLI print the group's help and succeed: look for its usage.
    AERIE_EXTRACT=
    if node bin/aerie.js backup extract --help 2>/dev/null | grep -q 'Usage: aerie backup extract'; then
      AERIE_EXTRACT=1
      echo "note aerie restore: aerie backup extract" >> "$RESULTS"
    else
      echo "note aerie restore: tar -xzf of its archive (the CLI has no backup extract)" >> "$RESULTS"
    fi
    if node bin/aerie.js backup create --help | grep -q -- '--full'; then
      echo "note aerie backup create has --full (not given: the default is measured)" >> "$RESULTS"
    fi
  fi
  node --import tsx bench/days-of-play.ts init "$VOLUME" > /dev/null
  export RESTIC_REPOSITORY=$RUN/restic RESTIC_PASSWORD=bench RESTIC_CACHE_DIR=$RUN/restic-cache
  restic init --repository-version 2 --quiet > /dev/null
  export BORG_BASE_DIR=$RUN/borg-base BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes \
    BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
  borg init -e none "$RUN/borg"
  # This run's order: the contenders rotated by one place per run.
  shift_by=$(( (run - 1) % ${#CONTENDERS[@]} ))
  order=("${CONTENDERS[@]:shift_by}" "${CONTENDERS[@]:0:shift_by}")
  echo "== run $run: $(find "$VOLUME" -type f | wc -l) files, $(du -sb "$VOLUME" | cut -f1) bytes;" \
    "order ${order[*]}; load average $(cut -d' ' -f1-3 /proc/loadavg)"

  for day in 0 1 2 3 4 5; do
    [ "$day" = 0 ] || echo "   $(node --import tsx bench/days-of-play.ts day "$VOLUME" "$day")"
    for c in "${order[@]}"; do
      r=$(backup "$c" "$day")
      echo "backup $run $c $day $r" >> "$RESULTS"
      read -r wall cpu kib <<< "$r"
      printf 'run %d day %d %-9s backup  %7.2f s wall %7.2f s CPU %6d MiB max RSS\n' \
        "$run" "$day" "$c" "$wall" "$cpu" $((kib / 1024))
    done
  done

  for c in "${order[@]}"; do
    bytes=$(stored "$c")
    echo "stored $run $c $bytes" >> "$RESULTS"
    target=$RUN/restore-$c
    mkdir "$target"
    r=$(restore "$c" "$target")
    if [ "$r" = skipped ]; then
      echo "note aerie restore: none (no backup extract, and no .tar.gz archive)" >> "$RESULTS"
      printf 'run %d       %-9s restore skipped; stored %d MB after 6 backups\n' "$run" "$c" $((bytes / 1000000))
      rm -rf "$target"
      continue
    fi
    echo "restore $run $c $r" >> "$RESULTS"
    read -r wall cpu kib <<< "$r"
    # restic and borg restore the volume's absolute path under the target; the others, its contents.
    root=$target
    [ -d "$target$VOLUME" ] && root=$target$VOLUME
    diff -r "$VOLUME" "$root" > /dev/null || { echo "$c: the restored tree differs from the volume" >&2; exit 1; }
    printf 'run %d       %-9s restore %7.2f s wall %7.2f s CPU %6d MiB max RSS; stored %d MB after 6 backups (restore checked)\n' \
      "$run" "$c" "$wall" "$cpu" $((kib / 1024)) $((bytes / 1000000))
    rm -rf "$target"
  done
done

echo
echo "== medians (min–max) of $RUNS runs"
node --import tsx bench/snapshot-summary.ts "$RESULTS"
echo
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -h | awk '/Mem:/ {print $2}') RAM;" \
  "node $(node --version); $(restic version | cut -d' ' -f1-2); $(borg --version);" \
  "$(tar --version | head -1); pigz $(pigz --version 2>&1 | cut -d' ' -f2);" \
  "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
