#!/usr/bin/env bash
# Browsing a snapshot backup of 1,000,000 files over HTTP (bench/backup-browse.ts: the first
# listing, which builds the catalog, then listing latency against a bare node:http floor, the
# catalog's size and the server's peak RSS). Options are passed through:
#
#   bash bench/backup-browse.sh [--runs 3] [--backup-runs 1] [--requests 200] [--tree DIR] …
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx bench/backup-browse.ts "$@"
