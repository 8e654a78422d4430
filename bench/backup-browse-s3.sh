#!/usr/bin/env bash
# Bytes read from S3 (s3rver) to download or restore one 1 MiB file of a 1 GB snapshot backup
# (bench/backup-browse-s3.ts), against the file's stored size and the index; with the times of
# that download, that restore and a download of the whole backup. Options are passed through:
#
#   bash bench/backup-browse-s3.sh [--runs 3] [--files 1000] [--mib 1]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx bench/backup-browse-s3.ts "$@"
