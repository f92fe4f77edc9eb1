#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS_PER_TARGET]
#
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc: one per index page reader) with clang,
# ASan and UBSan in build-fuzz (-DCALICO_FUZZ=ON), then runs each for SECONDS_PER_TARGET
# seconds (default 60; libFuzzer -max_total_time) starting from its seed corpus
# (tests/fuzz/corpus/<target>/, copied: the repository's corpus is never written), with a
# per-input limit of FUZZ_INPUT_TIMEOUT seconds (default 10; a slower input is a hang).
# Targets run nproc at a time.
# Prints per target the executions (libFuzzer's stat::number_of_executed_units), then a
# final line "fuzz: N passed, M failed". Any crash, hang, sanitizer report, escaped
# exception, or error that a corrupt page may not raise (anything but kCorruptPage naming a
# page of the index, with the exceptions tests/fuzz/fuzz_harness.h lists; for the catalog,
# anything but kCorruptCatalog naming the file) fails the run (exit 1) and keeps the input in
# build-fuzz/findings/<target>/ (replay: build-fuzz/<target> <file>). CALICO_FUZZ_SURVEY=1
# counts the errors per code instead of stopping at the first finding.
set -euo pipefail

cd "$(dirname "$0")/.."
secs="${1:-60}"
input_timeout="${FUZZ_INPUT_TIMEOUT:-10}"
build=build-fuzz
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [[ "$secs" -lt 1 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2
  exit 2
fi
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/setup.sh installs clang)" >&2; exit 2; }

start=$(date +%s)
mkdir -p "$build"
echo "fuzz: configuring and building $build (clang, ASan+UBSan, libFuzzer)"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCALICO_CHECKS_LEVEL=2 -DCALICO_FUZZ=ON -DCALICO_BUILD_TESTS=OFF -DCALICO_BUILD_BENCH=OFF \
  >"$build/configure.log" 2>&1 || { tail -20 "$build/configure.log"; exit 1; }
cmake --build "$build" --target calico_fuzz -j "$(nproc)" >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log"; exit 1; }
built=$(date +%s)
echo "fuzz: built in $((built - start)) s; $secs s per target"

# fuzz_one TARGET: one libFuzzer run; its verdict goes to $build/run/TARGET/verdict
fuzz_one() {
  local target=$1 work="$build/run/$1" findings="$build/findings/$1" rc execs
  local log="$work/fuzz.log"
  set +e
  ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$build/$target" "$work/corpus" -max_total_time="$secs" -timeout="$input_timeout" \
    -print_final_stats=1 -artifact_prefix="$findings/" -max_len=4096 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  if [[ $rc -eq 0 && -n "$execs" ]]; then
    echo "ok ${execs}" >"$work/verdict"
  else
    echo "failed $rc ${execs:-?}" >"$work/verdict"
  fi
}

# The targets run $(nproc) at a time (each is one process on one core), each for the full
# $secs: the same fuzzing per target in less wall time.
targets=()
for src in tests/fuzz/*_fuzz.cc; do
  target=$(basename "$src" .cc)
  targets+=("$target")
  rm -rf "$build/run/$target"
  mkdir -p "$build/run/$target/corpus" "$build/findings/$target"
  if [[ -d "tests/fuzz/corpus/$target" ]]; then cp "tests/fuzz/corpus/$target"/* "$build/run/$target/corpus/" 2>/dev/null || true; fi
done
running=0
for target in "${targets[@]}"; do
  if [[ $running -ge $(nproc) ]]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

passed=0
failed=0
for target in "${targets[@]}"; do
  verdict=missing a='' b=''
  if [[ -f "$build/run/$target/verdict" ]]; then read -r verdict a b <"$build/run/$target/verdict" || true; fi
  if [[ $verdict == ok ]]; then
    passed=$((passed + 1))
    echo "fuzz: $target: ok, $a executions in ${secs} s"
  else
    failed=$((failed + 1))
    echo "fuzz: $target: FAILED (exit ${a:-?}, ${b:-?} executions); log $build/run/$target/fuzz.log; inputs kept in $build/findings/$target/:"
    ls -1 "$build/findings/$target" | sed 's/^/  /'
    grep -m 5 -E "ERROR|runtime error|invariant violated|terminate|deadly signal|Timeout|fuzz finding" "$build/run/$target/fuzz.log" | sed 's/^/  /' || true
  fi
done
echo "fuzz: total $(($(date +%s) - start)) s (build $((built - start)) s)"
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
