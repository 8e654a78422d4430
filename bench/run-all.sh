#!/usr/bin/env bash
# Every benchmark scenario, one after the other: each bench/<scenario>.sh that exists.
# Each also runs alone (bash bench/feed.sh, …); none is part of `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
for scenario in feed feed-during-backup backup backup-memory restore startup; do
  if [ -f "bench/$scenario.sh" ]; then
    echo "## bench/$scenario.sh"
    bash "bench/$scenario.sh"
  fi
done
