#!/usr/bin/env bash
# Start a private, throwaway PostgreSQL on loopback for the store tests and print the line
# that points the tests at it:
#
#   eval "$(bash scripts/start-postgres.sh)"     # then: python -m pytest tests/core
#
# Idempotent: a cluster already running on the port is reused. Installs the Debian
# `postgresql` package when no server binaries are found. Everything but the final
# `export` line goes to stderr. Settings: SPADE_PG_PORT (54329), SPADE_PG_DIR
# (a folder under $TMPDIR), SPADE_PG_DB (spade_test). Stop it with
#   pg_ctl -D "$SPADE_PG_DIR/data" stop     (as the postgres user when run as root)
set -euo pipefail

PORT=${SPADE_PG_PORT:-54329}
DIR=${SPADE_PG_DIR:-${TMPDIR:-/tmp}/spade-postgres-$PORT}
DB=${SPADE_PG_DB:-spade_test}

log() { echo "start-postgres: $*" >&2; }

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

BIN=$(find_bin)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
  log "installing the postgresql package"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  BIN=$(find_bin)
fi
[ -x "$BIN/pg_ctl" ] || { log "no PostgreSQL server binaries found"; exit 1; }

# The server refuses to run as root: as root, run it as the postgres user.
if [ "$(id -u)" = 0 ]; then
  as_owner() { runuser -u postgres -- "$@"; }
  mkdir -p "$DIR"
  chown postgres: "$DIR"
else
  as_owner() { "$@"; }
  mkdir -p "$DIR"
fi

if [ ! -f "$DIR/data/PG_VERSION" ]; then
  log "creating a cluster in $DIR/data"
  # trust: only loopback connections are accepted (listen_addresses below) and the data
  # is throwaway test data.
  as_owner "$BIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --no-sync >&2
fi

if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
  log "starting PostgreSQL on 127.0.0.1:$PORT"
  # fsync off: a test cluster trades durability across power loss for speed.
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c max_connections=200" start >&2
fi

if ! as_owner "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
  log "creating database $DB"
  as_owner "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB" >&2
fi

echo "export SPADE_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:$PORT/$DB"
