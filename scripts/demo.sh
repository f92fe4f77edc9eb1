#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds Calico (release), and runs the demo: a 1 GB space on
# a 256 MB pool, 2 threads of random reads and writes for 10 s. Extra arguments go to
# `calico_bench demo` (see --help), e.g. scripts/demo.sh --data-mb 4096 --threads 4.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_BUILD_TESTS=OFF > /dev/null
cmake --build build --target calico_bench
exec ./build/calico_bench demo "$@"
