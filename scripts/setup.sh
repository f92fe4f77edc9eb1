#!/usr/bin/env bash
# Installs everything a fresh Debian 12 machine needs to build, test and run Calico.
# Idempotent: installs only what is missing. Run as root (or with sudo available).
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  liburing-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev
  liblmdb-dev librocksdb-dev libwiredtiger-dev
  python3-matplotlib fio
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
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
