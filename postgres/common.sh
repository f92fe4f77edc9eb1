# Shared by postgres/*.sh and scripts/postgres.sh (sourced, not run).
# PostgreSQL refuses to run as root: when we are root, the servers, initdb and the test
# suites run as the system user $CALICO_PG_USER (created here if missing), which owns the
# build trees and the scratch directories.
CALICO_PG_CACHE=${CALICO_PG_CACHE:-/var/tmp/calico-postgres}
CALICO_PG_USER=${CALICO_PG_USER:-calicopg}

pg_log() { echo "postgres: $*" >&2; }
pg_die() { echo "postgres: error: $*" >&2; exit 1; }

# as_pg CMD...: runs CMD as the PostgreSQL user (as ourselves when not root).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$CALICO_PG_USER" -- "$@"
  else
    "$@"
  fi
}

ensure_pg_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  id "$CALICO_PG_USER" > /dev/null 2>&1 ||
    useradd --system --create-home --shell /bin/bash "$CALICO_PG_USER"
}

# give_to_pg DIR...: makes DIR (recursively) the PostgreSQL user's.
give_to_pg() {
  [ "$(id -u)" -eq 0 ] || return 0
  chown -R "$CALICO_PG_USER" "$@"
}
