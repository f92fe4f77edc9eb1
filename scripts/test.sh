#!/usr/bin/env bash
# Sets up a fresh Debian machine, then builds and runs every test suite:
#   release   first the docs data check (scripts/check_docs_data.py: every data file that
#             README.md or a docs/ page cites is committed; and its own tests) and the
#             pipefail check (scripts/check_pipefail.py: no pipeline into a reader that stops
#             early, which fails at random with SIGPIPE; and its tests), then a release
#             build with debug checks (CALICO_CHECKS_LEVEL=2: asserts on, evicted frames
#             poisoned), plus a short demo run that verifies every page it reads;
#   python    pip installs the calico package (python/) into .venv, incrementally (its build
#             directory build-python/ persists), and runs the two tests of the source tree
#             (one install from a clean clone into a fresh virtualenv; the vector report
#             script); then the self-contained wheel (scripts/wheel.sh test: static
#             dependencies, auditwheel, the module needs only the C and C++ runtime) and the
#             rest of the pytest suite once, against that wheel in a fresh virtualenv: the
#             package as users install it;
#   postgres  PostgreSQL 18 with Calico inside, built from Debian's sources (cached after the
#             first run, ~15 min cold on 2 shared cores): its regression and isolation
#             suites (default and 1 MB shared_buffers), pgvector's tests, a vanilla-vs-calico
#             differential test, a stress run with amcheck, the races between backends
#             forced with the patch's test-only pause points (postgres/tests/interleavings.sh),
#             and TAP suites: pgvector's, PostgreSQL's test_aio and a recovery subset, a
#             SIGKILL crash test and a hot standby (scripts/postgres.sh test);
#   tsan      ThreadSanitizer build (stress tests shortened to 4 s);
#   asan      AddressSanitizer + UndefinedBehaviorSanitizer build (likewise), at the highest
#             checks level (CALICO_CHECKS_LEVEL=3: paranoid whole-structure checks on);
#   fuzz      the libFuzzer targets (catalog parser, index page readers), ~60 s each
#             (scripts/fuzz.sh).
# Usage: scripts/test.sh [release|python|postgres|tsan|asan|fuzz ...]   (default: all six)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

suites=("$@")
[ "${#suites[@]}" -gt 0 ] || suites=(release python postgres tsan asan fuzz)
jobs=$(nproc)

run_suite() {
  local name=$1
  shift
  local dir=build-test-$name
  echo "=== $name: configure and build ($dir)"
  cmake -S . -B "$dir" -G Ninja "$@" > /dev/null
  cmake --build "$dir" -j "$jobs"
  echo "=== $name: tests"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900
}

timings=()
for suite in "${suites[@]}"; do
  suite_start=$SECONDS
  case "$suite" in
    release)
      echo "=== release: docs data check (scripts/check_docs_data.py)"
      python3 scripts/check_docs_data_test.py
      python3 scripts/check_docs_data.py
      echo "=== release: shell pipelines under pipefail (scripts/check_pipefail.py)"
      python3 scripts/check_pipefail_test.py
      python3 scripts/check_pipefail.py
      run_suite release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_CHECKS_LEVEL=2
      echo "=== release: demo smoke run"
      demo_dir=$(mktemp -d /tmp/calico-demo-XXXXXX)
      ./build-test-release/calico_bench demo --data-mb 64 --pool-mb 16 --seconds 2 \
        --data-dir "$demo_dir/data" --prefetch-group 4
      rm -rf "$demo_dir"
      ;;
    python)
      echo "=== python: pip install . into .venv, then the source tree's tests (install from a clean clone, vector report)"
      .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-build-isolation .
      .venv/bin/python -m pytest -q python/tests/test_install.py python/tests/test_vector_report.py
      echo "=== python: the self-contained wheel and the rest of the pytest suite from it (scripts/wheel.sh test)"
      bash scripts/wheel.sh test build-wheel/dist
      ;;
    tsan)
      run_suite tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_SANITIZE=thread \
        -DCALICO_STRESS_SECONDS=4 -DCALICO_BUILD_BENCH=OFF
      ;;
    asan)
      run_suite asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_SANITIZE=address \
        -DCALICO_CHECKS_LEVEL=3 -DCALICO_STRESS_SECONDS=4 -DCALICO_BUILD_BENCH=OFF
      ;;
    fuzz)
      echo "=== fuzz: build and run (build-fuzz)"
      bash scripts/fuzz.sh 60
      ;;
    postgres)
      echo "=== postgres: build (cached) and test"
      bash scripts/postgres.sh test
      ;;
    *)
      echo "unknown suite '$suite' (release, python, postgres, tsan, asan, fuzz)" >&2
      exit 2
      ;;
  esac
  timings+=("$suite $((SECONDS - suite_start)) s")
  echo "=== $suite: done in $((SECONDS - suite_start)) s"
done
echo "=== all suites passed: ${suites[*]} (${timings[*]/%/;} total $SECONDS s)"
