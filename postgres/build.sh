#!/usr/bin/env bash
# Builds PostgreSQL 15 twice from Debian's source package, side by side, each with pgvector:
#   vanilla  the pristine sources;
#   calico   the same sources with postgres/patches/*.patch (Calico's buffer mapping) and
#            pgvector with postgres/pgvector-patches/*.patch (optimistic reads, group prefetch).
# Sources come from `apt-get source` (postgresql-15 from bookworm, pgvector from trixie); the
# deb-src entries are added if missing. Both builds use the upstream tarball as Debian ships it
# (Debian's packaging patches are not applied: they change paths and packaging, not the server).
#
# Results are cached under $CALICO_PG_CACHE (default /var/tmp/calico-postgres), in a directory
# keyed by the hash of the source tarballs, the patches and this script, so a second run with
# nothing changed returns at once, and a clean clone on the same machine reuses the build.
# The build trees stay in the cache: the test suites (`make check`) run from them.
#
# Usage: postgres/build.sh            builds if needed, prints the cache directory last
#        postgres/build.sh --print    prints the cache directory without building
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
CACHE=$CALICO_PG_CACHE
DL=$CACHE/download
mkdir -p "$DL"
chmod 755 "$CACHE"

log() { echo "postgres/build: $*" >&2; }

ensure_deb_src() {
  local list=/etc/apt/sources.list.d/calico-src.sources
  [ -f "$list" ] && return 0
  log "adding deb-src entries (bookworm, trixie) in $list"
  local SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO tee "$list" > /dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  $SUDO apt-get update -qq
}

# fetch PACKAGE[/SUITE] GLOB: downloads the source package into $DL unless a file matching
# GLOB is there already; prints the orig tarball's path.
fetch() {
  local pkg=$1 glob=$2 found
  found=$(ls "$DL"/$glob 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$found" ]; then
    ensure_deb_src
    log "apt-get source $pkg"
    (cd "$DL" && apt-get source --download-only "$pkg" > "$DL/fetch-${pkg%%/*}.log" 2>&1) || {
      log "apt-get source $pkg failed:"; tail -5 "$DL/fetch-${pkg%%/*}.log" >&2; exit 1; }
    found=$(ls "$DL"/$glob 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$found" ] || { log "no $glob after apt-get source $pkg"; exit 1; }
  fi
  echo "$found"
}

PG_TAR=$(fetch postgresql-15 'postgresql-15_15.*.orig.tar.bz2')
VEC_TAR=$(fetch pgvector/trixie 'pgvector_0.8.*.orig.tar.gz')

shopt -s nullglob
PG_PATCHES=("$HERE"/patches/*.patch)
VEC_PATCHES=("$HERE"/pgvector-patches/*.patch)
shopt -u nullglob
key=$(cat "$PG_TAR" "$VEC_TAR" "$HERE/build.sh" ${PG_PATCHES[@]+"${PG_PATCHES[@]}"} \
        ${VEC_PATCHES[@]+"${VEC_PATCHES[@]}"} | sha256sum | cut -c1-16)
OUT=$CACHE/build-$key
if [ "${1:-}" = "--print" ]; then echo "$OUT"; exit 0; fi
if [ -f "$OUT/done" ]; then
  log "cached build $OUT"
  echo "$OUT"
  exit 0
fi

jobs=$(nproc)
CC_CMD=gcc
command -v ccache > /dev/null && CC_CMD="ccache gcc"
export CCACHE_BASEDIR=$OUT CCACHE_NOHASHDIR=1
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)

# build FLAVOR PATCHDIR VECPATCHDIR
build() {
  local flavor=$1 patches=$2 vecpatches=$3
  local src=$OUT/$flavor/src vec=$OUT/$flavor/pgvector prefix=$OUT/$flavor/install
  mkdir -p "$src" "$vec"
  tar -xjf "$PG_TAR" -C "$src" --strip-components=1
  tar -xzf "$VEC_TAR" -C "$vec" --strip-components=1
  local p
  for p in $patches; do
    log "$flavor: applying $(basename "$p")"
    patch -d "$src" -p1 --quiet --no-backup-if-mismatch < "$p" || { log "patch $p does not apply"; exit 1; }
  done
  for p in $vecpatches; do
    log "$flavor: applying $(basename "$p") to pgvector"
    patch -d "$vec" -p1 --quiet --no-backup-if-mismatch < "$p" || { log "patch $p does not apply"; exit 1; }
  done
  log "$flavor: configure"
  (cd "$src" && ./configure --prefix="$prefix" --without-icu CC="$CC_CMD" \
      > "$OUT/$flavor-configure.log" 2>&1) \
    || { log "$flavor: configure failed:"; tail -20 "$OUT/$flavor-configure.log" >&2; exit 1; }
  log "$flavor: make (-j$jobs; log in $OUT/$flavor-make.log)"
  (make -C "$src" -j"$jobs" > "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src" install >> "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src/contrib/amcheck" -j"$jobs" install >> "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src/contrib/pg_prewarm" -j"$jobs" install >> "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src/contrib/pg_buffercache" -j"$jobs" install >> "$OUT/$flavor-make.log" 2>&1) \
    || { log "$flavor: build failed:"; grep -E "error|Error" "$OUT/$flavor-make.log" | head -20 >&2; exit 1; }
  log "$flavor: pgvector"
  (make -C "$vec" -j"$jobs" PG_CONFIG="$prefix/bin/pg_config" OPTFLAGS="-march=native" \
      > "$OUT/$flavor-pgvector.log" 2>&1 &&
   make -C "$vec" install PG_CONFIG="$prefix/bin/pg_config" >> "$OUT/$flavor-pgvector.log" 2>&1) \
    || { log "$flavor: pgvector build failed:"; grep -E "error" "$OUT/$flavor-pgvector.log" | head -20 >&2; exit 1; }
}

build vanilla "" ""
build calico "${PG_PATCHES[*]-}" "${VEC_PATCHES[*]-}"
# The suites run from the build trees as the PostgreSQL user: the trees are its.
ensure_pg_user
give_to_pg "$OUT"
touch "$OUT/done"
log "built in $(( $(date +%s) - start )) s: $OUT/{vanilla,calico}/install"
# Older builds of other keys are dead weight: keep only this one.
find "$CACHE" -maxdepth 1 -name 'build-*' ! -path "$OUT" -exec rm -rf {} + 2>/dev/null || true
echo "$OUT"
