# Sourced by the bench scripts: a SQLite data directory in $WORK/data with a user "bench" and one
# server. Exports AERIE_DATA_DIR, DATABASE_URL and LOG_LEVEL; sets SERVER (its identifier) and
# VOLUME (its directory), and defines `aerie` (the compiled CLI).
export AERIE_DATA_DIR=$WORK/data DATABASE_URL=sqlite:$WORK/data/aerie.db LOG_LEVEL=silent
aerie() { node bin/aerie.js "$@"; }
aerie migrate >/dev/null
aerie user create --username bench --email bench@example.com --password bench-password-1 >/dev/null
SERVER_JSON=$(aerie server create --owner bench --name bench --json)
SERVER=$(node -e 'console.log(JSON.parse(process.argv[1]).identifier)' "$SERVER_JSON")
VOLUME=$(node -e 'console.log(JSON.parse(process.argv[1]).volume)' "$SERVER_JSON")
