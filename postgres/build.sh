#!/usr/bin/env bash
# Builds PostgreSQL 18.6 twice from Debian's source package, side by side, each with pgvector:
#   vanilla  the pristine sources;
#   calico   the same sources with postgres/patches/*.patch (Calico's buffer mapping) and
#            pgvector with postgres/pgvector-patches/*.patch (optimistic reads, group prefetch).
#
# Sources, pinned by SHA-256 below and verified before anything is unpacked:
#   postgresql-18 18.6-3  Debian sid's source package: `apt-get source postgresql-18=18.6-3`
#                         with a deb-src entry for sid (added if missing, in its own file,
#                         refreshed on its own); if the index has moved on, the same files
#                         straight from the pool (pool/main/p/postgresql-18/).
#   pgvector 0.8.6-1      straight from the pool (pool/main/p/pgvector/) of the Debian mirror
#                         apt uses: sid's index lists 0.8.7-1, whose files answer 404, so
#                         `apt-get source pgvector` cannot be trusted to find these.
# Pool downloads go through apt's own downloader (apt-helper download-file), which checks the
# pinned hash. Both builds use the upstream tarball as Debian ships it (Debian's packaging
# patches are not applied: they change paths and packaging, not the server). The tarball has
# no generated parser files, so bison and flex are build dependencies (scripts/setup.sh).
#
# Results are cached under $CALICO_PG_CACHE (default /var/tmp/calico-postgres), in a directory
# build-18-<key>, keyed by the hash of the source tarballs, the patches and this script, so a second run with
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

PG_SOURCE=postgresql-18 PG_DEBIAN_VERSION=18.6-3 PG_UPSTREAM=18.6
VEC_SOURCE=pgvector VEC_DEBIAN_VERSION=0.8.6-1 VEC_UPSTREAM=0.8.6
PG_TAR_NAME=${PG_SOURCE}_$PG_UPSTREAM.orig.tar.bz2
VEC_TAR_NAME=${VEC_SOURCE}_$VEC_UPSTREAM.orig.tar.gz
declare -A SHA256=(
  [${PG_SOURCE}_$PG_DEBIAN_VERSION.dsc]=a4254c4548ebeea683832de193460ee8a9f1271418e884803b44ded1aead1776
  [$PG_TAR_NAME]=555610c24d53e4316da5b7d3fc25c279d96856d5e0e23ee308c328c5fa881d9f
  [${PG_SOURCE}_$PG_DEBIAN_VERSION.debian.tar.xz]=5efd00aa59930757931d13e3b2a343b5ac983fdf646a54a3b96caa30cb40512b
  [${VEC_SOURCE}_$VEC_DEBIAN_VERSION.dsc]=d08de2aa48b7cb70319cc896aa3d95514690d1009f96579dbe6b23c59634f4e6
  [$VEC_TAR_NAME]=25c9b78cfdaa43c66788d7490246ac24e4fe1c86f19c4b60c089b723f84a4a0d
  [${VEC_SOURCE}_$VEC_DEBIAN_VERSION.debian.tar.xz]=3bbb17a5352900ea6534363399f519967d8c8bb0907f31e29af9ce03d2ed95c4
)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# verified FILE: the file is in $DL and has its pinned hash.
verified() {
  [ -f "$DL/$1" ] && echo "${SHA256[$1]}  $DL/$1" | sha256sum --check --quiet --status -
}

# package_files SOURCE DEBIAN_VERSION UPSTREAM: the .dsc, orig and debian tarball names.
package_files() {
  local orig
  case "$1" in
    "$PG_SOURCE") orig=$PG_TAR_NAME ;;
    *) orig=$VEC_TAR_NAME ;;
  esac
  echo "$1_$2.dsc $orig $1_$2.debian.tar.xz"
}

all_verified() {
  local f
  for f in $(package_files "$@"); do verified "$f" || return 1; done
}

# mirror: the Debian archive apt uses (the first deb.debian.org-style URI of a main archive in
# its sources), or $CALICO_DEBIAN_MIRROR.
mirror() {
  if [ -n "${CALICO_DEBIAN_MIRROR:-}" ]; then echo "${CALICO_DEBIAN_MIRROR%/}"; return; fi
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
          2>/dev/null | grep -Eo 'https?://[^ ]+/debian/?( |$)' | grep -v security | sed -n 1p | tr -d ' ')
  echo "${uri:-http://deb.debian.org/debian}" | sed 's:/*$::'
}

# pool_fetch SOURCE FILE: downloads FILE from the mirror's pool, checking its pinned hash.
pool_fetch() {
  local src=$1 file=$2 url
  url=$(mirror)/pool/main/${src:0:1}/$src/$file
  log "downloading $url"
  rm -f "$DL/$file.part"
  /usr/lib/apt/apt-helper download-file "$url" "$DL/$file.part" "SHA256:${SHA256[$file]}" \
    >> "$DL/fetch-$src.log" 2>&1 || { rm -f "$DL/$file.part"; return 1; }
  mv "$DL/$file.part" "$DL/$file"
}

# ensure_sid_src: a deb-src entry for sid in its own file, and that file's index fresh.
SID_LIST=/etc/apt/sources.list.d/calico-src-sid.sources
ensure_sid_src() {
  if [ ! -f "$SID_LIST" ]; then
    log "adding a deb-src entry for sid in $SID_LIST"
    $SUDO tee "$SID_LIST" > /dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $SUDO apt-get update -qq -o Dir::Etc::sourcelist="$SID_LIST" -o Dir::Etc::sourceparts=- \
    -o APT::Get::List-Cleanup=0 >> "$DL/fetch-sid-index.log" 2>&1
}

# fetch_package SOURCE DEBIAN_VERSION UPSTREAM APT_FIRST: the package's .dsc, orig and debian
# tarballs in $DL, each with its pinned hash; with APT_FIRST, `apt-get source` is tried before
# the pool.
fetch_package() {
  local src=$1 ver=$2 apt_first=$4 f
  all_verified "$src" "$ver" "$3" && return 0
  if [ "$apt_first" = yes ]; then
    ensure_sid_src || log "could not refresh the sid source index (see $DL/fetch-sid-index.log)"
    log "apt-get source $src=$ver"
    (cd "$DL" && apt-get source --download-only "$src=$ver" >> "$DL/fetch-$src.log" 2>&1) ||
      log "apt-get source $src=$ver failed; trying the pool"
  fi
  for f in $(package_files "$src" "$ver" "$3"); do
    verified "$f" && continue
    rm -f "$DL/$f"
    pool_fetch "$src" "$f" || log "could not download $f (log: $DL/fetch-$src.log)"
  done
  for f in $(package_files "$src" "$ver" "$3"); do
    verified "$f" || {
      log "error: $f is missing or does not have its pinned SHA-256 ${SHA256[$f]}"
      [ -f "$DL/$f" ] && log "  it has $(sha256sum "$DL/$f" | cut -d' ' -f1)"
      exit 1
    }
  done
}

fetch_package "$PG_SOURCE" "$PG_DEBIAN_VERSION" "$PG_UPSTREAM" yes
fetch_package "$VEC_SOURCE" "$VEC_DEBIAN_VERSION" "$VEC_UPSTREAM" no
PG_TAR=$DL/$PG_TAR_NAME
VEC_TAR=$DL/$VEC_TAR_NAME

shopt -s nullglob
PG_PATCHES=("$HERE"/patches/*.patch)
VEC_PATCHES=("$HERE"/pgvector-patches/*.patch)
shopt -u nullglob
key=$(cat "$PG_TAR" "$VEC_TAR" "$HERE/build.sh" ${PG_PATCHES[@]+"${PG_PATCHES[@]}"} \
        ${VEC_PATCHES[@]+"${VEC_PATCHES[@]}"} | sha256sum | cut -c1-16)
OUT=$CACHE/build-18-$key
if [ "${1:-}" = "--print" ]; then echo "$OUT"; exit 0; fi
# One build at a time: a second caller (a test suite, a benchmark) waits for the first and
# then finds its result cached.
exec 9> "$CACHE/.build.lock"
flock 9
if [ -f "$OUT/done" ]; then
  log "cached build $OUT"
  echo "$OUT"
  exit 0
fi

for tool in bison flex; do
  command -v "$tool" > /dev/null || { log "error: $tool is needed (scripts/setup.sh installs it)"; exit 1; }
done

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
  # io_uring for io_method=io_uring (bookworm's liburing 2.3 is enough: PostgreSQL checks no
  # minimum version); TAP tests (IPC::Run, libipc-run-perl) for the recovery and pgvector suites.
  log "$flavor: configure"
  (cd "$src" && ./configure --prefix="$prefix" --without-icu --with-liburing --enable-tap-tests \
      CC="$CC_CMD" > "$OUT/$flavor-configure.log" 2>&1) \
    || { log "$flavor: configure failed:"; tail -20 "$OUT/$flavor-configure.log" >&2; exit 1; }
  log "$flavor: make (-j$jobs; log in $OUT/$flavor-make.log)"
  (make -C "$src" -j"$jobs" > "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src" install >> "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src/contrib/amcheck" -j"$jobs" install >> "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src/contrib/pg_prewarm" -j"$jobs" install >> "$OUT/$flavor-make.log" 2>&1 &&
   make -C "$src/contrib/pg_buffercache" -j"$jobs" install >> "$OUT/$flavor-make.log" 2>&1) \
    || { log "$flavor: build failed:"; grep -E "error|Error" "$OUT/$flavor-make.log" | sed -n 1,20p >&2; exit 1; }
  log "$flavor: pgvector"
  (make -C "$vec" -j"$jobs" PG_CONFIG="$prefix/bin/pg_config" OPTFLAGS="-march=native" \
      > "$OUT/$flavor-pgvector.log" 2>&1 &&
   make -C "$vec" install PG_CONFIG="$prefix/bin/pg_config" >> "$OUT/$flavor-pgvector.log" 2>&1) \
    || { log "$flavor: pgvector build failed:"; grep -E "error" "$OUT/$flavor-pgvector.log" | sed -n 1,20p >&2; exit 1; }
}

build vanilla "" ""
build calico "${PG_PATCHES[*]-}" "${VEC_PATCHES[*]-}"
# The suites run from the build trees as the PostgreSQL user: the trees are its.
ensure_pg_user
give_to_pg "$OUT"
touch "$OUT/done"
log "built in $(( $(date +%s) - start )) s: $OUT/{vanilla,calico}/install"
# Older builds of other keys are dead weight: keep only this one. (Only PostgreSQL 18 builds,
# build-18-*: a checkout of another major version may share the cache.)
find "$CACHE" -maxdepth 1 -name 'build-18-*' ! -path "$OUT" -exec rm -rf {} + 2>/dev/null || true
echo "$OUT"
