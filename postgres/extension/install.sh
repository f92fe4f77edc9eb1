#!/usr/bin/env bash
# Builds and installs Calico for an unmodified PostgreSQL 18 into the server that PG_CONFIG
# belongs to, with PGXS (make && make install):
#   1. the calico library and extension (postgres/extension/calico): translation of index
#      blocks through shared-memory block -> buffer hints, group prefetch through AIO, and
#      calico_api.h for pgvector;
#   2. pgvector 0.8.6 with postgres/extension/pgvector-patches/*.patch: its index page reads
#      go through calico when the server preloads it (same SQL, same on-disk format).
# Then: shared_preload_libraries = 'calico' in postgresql.conf, restart, and
# CREATE EXTENSION vector; CREATE EXTENSION calico (the latter only for calico_stats()).
#
# Usage: postgres/extension/install.sh PG_CONFIG [--pgvector-source TARBALL|DIR] [--build-dir DIR]
#   --pgvector-source  pristine pgvector 0.8.6 sources: the upstream tarball (checked against
#                      its SHA-256 pin) or an unpacked tree (default: the tarball
#                      postgres/build.sh downloads into $CALICO_PG_CACHE/download)
#   --build-dir        where to build (kept: pgvector's installcheck runs from DIR/pgvector);
#                      default a temporary directory, removed afterwards
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"

VEC_TAR_SHA256=25c9b78cfdaa43c66788d7490246ac24e4fe1c86f19c4b60c089b723f84a4a0d
log() { echo "postgres/extension/install: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ $# -ge 1 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
PG_CONFIG=$1
shift
VEC_SRC=$CALICO_PG_CACHE/download/pgvector_0.8.6.orig.tar.gz
BUILD=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pgvector-source) VEC_SRC=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ -x "$PG_CONFIG" ] || PG_CONFIG=$(command -v "$PG_CONFIG" || true)
[ -n "$PG_CONFIG" ] && [ -x "$PG_CONFIG" ] || die "pg_config not found"
version=$("$PG_CONFIG" --version)
case "$version" in
  "PostgreSQL 18"*) ;;
  *) die "$PG_CONFIG is $version: calico needs PostgreSQL 18 (StartReadBuffer, AIO)" ;;
esac

if [ -z "$BUILD" ]; then
  BUILD=$(mktemp -d /tmp/calico-ext-build-XXXXXX)
  trap 'rm -rf "$BUILD"' EXIT
fi
rm -rf "$BUILD/calico" "$BUILD/pgvector"
mkdir -p "$BUILD/calico" "$BUILD/pgvector"
jobs=$(nproc)
[ "$jobs" -le 2 ] || jobs=2

# 1. calico (first: pgvector's build finds calico_api.h among the server's headers).
cp "$HERE"/calico/Makefile "$HERE"/calico/*.c "$HERE"/calico/*.h "$HERE"/calico/*.control \
   "$HERE"/calico/*.sql "$BUILD/calico/"
log "calico: make && make install ($version)"
(make -C "$BUILD/calico" -j"$jobs" PG_CONFIG="$PG_CONFIG" > "$BUILD/calico.log" 2>&1 &&
 make -C "$BUILD/calico" install PG_CONFIG="$PG_CONFIG" >> "$BUILD/calico.log" 2>&1) ||
  { tail -30 "$BUILD/calico.log" >&2; die "calico build failed (log: $BUILD/calico.log)"; }
! grep -q "warning:" "$BUILD/calico.log" || { grep "warning:" "$BUILD/calico.log" >&2; die "calico: compiler warnings"; }

# 2. pgvector, patched.
if [ -d "$VEC_SRC" ]; then
  cp -a "$VEC_SRC"/. "$BUILD/pgvector/"
  make -C "$BUILD/pgvector" clean PG_CONFIG="$PG_CONFIG" > /dev/null 2>&1 || true
else
  [ -f "$VEC_SRC" ] || die "no pgvector sources at $VEC_SRC (run postgres/build.sh, or pass --pgvector-source)"
  echo "$VEC_TAR_SHA256  $VEC_SRC" | sha256sum --check --quiet --status - ||
    die "$VEC_SRC does not have pgvector 0.8.6's pinned SHA-256 $VEC_TAR_SHA256"
  tar -xzf "$VEC_SRC" -C "$BUILD/pgvector" --strip-components=1
fi
grep -q "default_version = '0.8.6'" "$BUILD/pgvector/vector.control" || die "the pgvector sources are not 0.8.6"
for p in "$HERE"/pgvector-patches/*.patch; do
  log "pgvector: applying $(basename "$p")"
  patch -d "$BUILD/pgvector" -p1 --quiet --no-backup-if-mismatch < "$p" || die "$p does not apply"
done
log "pgvector: make && make install"
(make -C "$BUILD/pgvector" -j"$jobs" PG_CONFIG="$PG_CONFIG" OPTFLAGS="-march=native" > "$BUILD/pgvector.log" 2>&1 &&
 make -C "$BUILD/pgvector" install PG_CONFIG="$PG_CONFIG" >> "$BUILD/pgvector.log" 2>&1) ||
  { grep -E "error" "$BUILD/pgvector.log" | sed -n 1,20p >&2; die "pgvector build failed (log: $BUILD/pgvector.log)"; }
# The search's CPU prefetches through calico's hints are inlined helpers whose only effect is a
# prefetch; a compiler that drops them leaves a pgvector that is correct and slow, which no
# test of answers notices. Check the x86-64 build for them (on other machines, skip saying so).
if [ "$(uname -m)" = x86_64 ] && command -v objdump > /dev/null; then
  n=$(objdump -d "$BUILD/pgvector/vector.so" | grep -c prefetcht0 || true)
  [ "$n" -gt 0 ] || die "vector.so has no CPU prefetch instructions: the compiler dropped calicoreads.h's prefetches"
else
  log "pgvector: not checking for CPU prefetch instructions on $(uname -m)"
fi
log "installed into $("$PG_CONFIG" --pkglibdir): calico.so, vector.so (pgvector 0.8.6 + calico reads)"
log "now: shared_preload_libraries = 'calico', restart, CREATE EXTENSION vector; CREATE EXTENSION calico"
