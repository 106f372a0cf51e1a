#!/usr/bin/env bash
# A throwaway PostgreSQL for tests and benches: `.ci/run`, local runs and the database-restart
# test all start servers this one way.
#
#   .ci/pg.sh start DIR    initdb into DIR (once), start the server, print its URL on stdout
#   .ci/pg.sh stop DIR     stop it (fast shutdown) and keep DIR
#   .ci/pg.sh kill DIR     stop it the way a crash would (`-m immediate`: no checkpoint)
#   .ci/pg.sh url DIR      print the URL of the server in DIR
#
# The server listens only on a unix socket inside DIR (no TCP port, so parallel servers never
# clash), trusts local connections, and runs with fsync off: the data is disposable and the
# tests measure our code, not the disk. `synchronous_commit` stays on: with it off a commit is
# acknowledged before its WAL is written, and a crash-restart test would rightly lose rows.
# PG_FSYNC=on starts a server with production durability (the benches' second figure).
# As root it runs as the `postgres` user (initdb refuses root). Needs PostgreSQL 15+ binaries: PG_BIN, else /usr/lib/postgresql/*/bin, else PATH.
set -euo pipefail

usage() { echo "usage: $0 start|stop|kill|url DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)

pg_bin=${PG_BIN:-}
if [ -z "$pg_bin" ]; then
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && pg_bin=$d
  done
fi
if [ -z "$pg_bin" ] && command -v initdb >/dev/null; then
  pg_bin=$(dirname "$(command -v initdb)")
fi
[ -n "$pg_bin" ] || { echo "$0: no PostgreSQL binaries (set PG_BIN)" >&2; exit 1; }

# Run a PostgreSQL binary as a user it accepts.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

url() {
  local user
  if [ "$(id -u)" = 0 ]; then user=postgres; else user=$(id -un); fi
  echo "postgres://$user@localhost/postgres?host=$dir/sock"
}

case $action in
  start)
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      mkdir -p "$dir/data" "$dir/sock"
      [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
      as_pg "$pg_bin/initdb" -D "$dir/data" --auth=trust --no-sync -E UTF8 --locale=C \
        -U "$( [ "$(id -u)" = 0 ] && echo postgres || id -un )" >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_pg "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c fsync=${PG_FSYNC:-off} \
          -c full_page_writes=${PG_FSYNC:-off} -c max_connections=200" \
      start >/dev/null || { tail -20 "$dir/server.log" >&2; exit 1; }
    url
    ;;
  stop)
    as_pg "$pg_bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
  kill)
    as_pg "$pg_bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    ;;
  url)
    url
    ;;
  *)
    usage
    ;;
esac
