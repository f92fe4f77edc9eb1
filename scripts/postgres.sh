#!/usr/bin/env bash
# PostgreSQL with Calico inside: build, start and stop private servers, run workloads, test.
#
#   scripts/postgres.sh build                      build vanilla, calico and ext (cached; postgres/build.sh,
#                                                  postgres/extension/build.sh)
#   scripts/postgres.sh start FLAVOR [SETTING...]  start a private server (initdb on first use)
#   scripts/postgres.sh stop FLAVOR
#   scripts/postgres.sh psql FLAVOR [PSQL ARGS]
#   scripts/postgres.sh run FLAVOR [SETTING...] -- CMD [ARGS]
#                                                  start, run CMD against it, stop (also on failure)
#   scripts/postgres.sh test                       the suites CI runs (postgres/tests/run.sh)
#
# FLAVOR is vanilla, calico (the patched server) or ext (the vanilla server with the calico
# extension and the patched pgvector installed; started with shared_preload_libraries=calico
# unless a SETTING says otherwise). SETTING is name=value, passed as -c to the server, e.g.
# shared_buffers=1MB calico_optimistic_reads=off. The servers listen only on a Unix socket in
# $CALICO_SCRATCH/postgres/FLAVOR (default scratch: <repo>/.scratch, or a directory in
# /var/tmp/calico-postgres when the checkout is private), on port 55431 (vanilla),
# 55432 (calico) or 55433 (ext) (CALICO_PG_PORT_BASE moves them: vanilla on it, calico one
# above, ext two above), with their data directory there too (CALICO_PGDATA names another:
# vanilla and ext can open the same one): a system-wide PostgreSQL is never
# touched. As root, they run as the user calicopg (PostgreSQL refuses root).
# CMD sees PATH (the flavor's bin first), PGHOST, PGPORT, PGDATABASE=postgres, PGUSER and
# CALICO_PG_FLAVOR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/postgres/common.sh"
SCRATCH=${CALICO_SCRATCH:-$ROOT/.scratch}
# As root the servers run as $CALICO_PG_USER, who must reach the scratch directory: a
# checkout under a private home cannot be, so its scratch moves to the cache's volume.
if [ -z "${CALICO_SCRATCH:-}" ] && [ "$(id -u)" -eq 0 ] && id "$CALICO_PG_USER" > /dev/null 2>&1 &&
   ! runuser -u "$CALICO_PG_USER" -- test -x "$ROOT"; then
  SCRATCH=$CALICO_PG_CACHE/scratch-$(echo "$ROOT" | sha256sum | cut -c1-8)
fi

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

install_dir() {
  local out
  out=$(bash "$ROOT/postgres/build.sh" --print)
  [ -f "$out/done" ] || pg_die "no build for these sources and patches: run 'scripts/postgres.sh build'"
  if [ "$1" = ext ]; then
    out=$(bash "$ROOT/postgres/extension/build.sh" 2>/dev/null) ||
      pg_die "the ext tree did not build: run 'bash postgres/extension/build.sh'"
    echo "$out/install"
    return
  fi
  echo "$out/$1/install"
}

flavor_env() {
  local flavor=$1
  case "$flavor" in
    vanilla) PGPORT=$((${CALICO_PG_PORT_BASE:-55431})) ;;
    calico) PGPORT=$((${CALICO_PG_PORT_BASE:-55431} + 1)) ;;
    ext) PGPORT=$((${CALICO_PG_PORT_BASE:-55431} + 2)) ;;
    *) pg_die "unknown flavor '$flavor' (vanilla, calico or ext)" ;;
  esac
  PGBIN=$(install_dir "$flavor")/bin
  PGBASE=$SCRATCH/postgres/$flavor
  PGDATA=${CALICO_PGDATA:-$PGBASE/data}
  PGHOST=$PGBASE
  PGUSER=$CALICO_PG_USER
  [ "$(id -u)" -eq 0 ] || PGUSER=$(id -un)
  export PGPORT PGHOST PGDATA PGUSER PGDATABASE=postgres CALICO_PG_FLAVOR=$flavor
  export PATH=$PGBIN:$PATH
}

pg_running() { [ -f "$PGDATA/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status > /dev/null 2>&1; }

start() {
  local flavor=$1
  shift
  flavor_env "$flavor"
  ensure_pg_user
  mkdir -p "$PGBASE"
  give_to_pg "$SCRATCH/postgres"
  if [ -n "${CALICO_PGDATA:-}" ] && [ ! -d "$PGDATA" ]; then
    mkdir -p "$PGDATA"
    give_to_pg "$PGDATA"
  fi
  as_pg test -w "$PGBASE" ||
    pg_die "$CALICO_PG_USER cannot write $PGBASE (set CALICO_SCRATCH to a directory it can reach)"
  if pg_running; then
    pg_log "$flavor is running already: stopping it first"
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop > /dev/null
  fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    pg_log "initdb $PGDATA"
    as_pg "$PGBIN/initdb" -D "$PGDATA" -U "$PGUSER" --no-sync > "$PGBASE/initdb.log" 2>&1 ||
      { tail -20 "$PGBASE/initdb.log" >&2; pg_die "initdb failed"; }
  fi
  local opts="-c listen_addresses='' -c port=$PGPORT -c unix_socket_directories='$PGBASE'"
  # Later -c settings win: a SETTING may name other preloaded libraries, or none.
  [ "$flavor" != ext ] || opts+=" -c shared_preload_libraries=calico"
  local s
  for s in "$@"; do
    [[ "$s" == *=* ]] || pg_die "setting '$s' is not name=value"
    opts+=" -c $s"
  done
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGBASE/server.log" -o "$opts" -w -t 120 start > /dev/null ||
    { tail -20 "$PGBASE/server.log" >&2; pg_die "$flavor did not start"; }
  pg_log "$flavor up: port $PGPORT, socket $PGBASE, log $PGBASE/server.log"
}

stop() {
  flavor_env "$1"
  if pg_running; then
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop > /dev/null
    pg_log "$1 stopped"
  fi
}

cmd=${1:-}
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  build) bash "$ROOT/postgres/build.sh" > /dev/null && bash "$ROOT/postgres/extension/build.sh" > /dev/null ;;
  start) [ $# -ge 1 ] || usage; start "$@" ;;
  stop) [ $# -ge 1 ] || usage; stop "$1" ;;
  psql) [ $# -ge 1 ] || usage; flavor_env "$1"; shift; exec psql "$@" ;;
  run)
    [ $# -ge 1 ] || usage
    flavor=$1
    shift
    settings=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do settings+=("$1"); shift; done
    [ "${1:-}" = "--" ] && [ $# -ge 2 ] || usage
    shift
    start "$flavor" ${settings[@]+"${settings[@]}"}
    trap 'stop "$flavor"' EXIT
    "$@"
    ;;
  test) exec bash "$ROOT/postgres/tests/run.sh" "$@" ;;
  -h|--help|help) usage ;;
  *) echo "unknown command '$cmd'" >&2; usage ;;
esac
