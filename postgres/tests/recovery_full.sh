#!/usr/bin/env bash
# PostgreSQL's whole recovery TAP suite (src/test/recovery: crash recovery, archiving, PITR,
# streaming and logical replication, hot standby, 50 files) on the calico build. CI runs a
# subset (postgres/tests/run.sh tap, $RECOVERY_CI there); this runs all of it, or the tests
# named (e.g. t/027_stream_regress.pl, which runs the whole regression suite against a
# primary and checks the standby's dump matches). 2026-11-28 on 2 shared cores: 527 tests
# passed in 277 s; 5 files skip themselves (035, 041, 044, 046, 047: they need a build
# with --enable-injection-points, and ours is the build we measure).
# Usage: postgres/tests/recovery_full.sh [t/NNN_name.pl ...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/postgres/common.sh"
OUT=$(bash "$ROOT/postgres/build.sh")
ensure_pg_user
give_to_pg "$OUT"
start=$(date +%s)
args=()
[ $# -eq 0 ] || args=(PROVE_TESTS="$*")
as_pg make -C "$OUT/calico/src/src/test/recovery" check ${args[@]+"${args[@]}"} 2>&1 |
  tee /tmp/calico-recovery-full.log | grep -E "^t/|^Files=|^Result:"
rc=${PIPESTATUS[0]}
echo "=== postgres: recovery suite (calico) $([ "$rc" -eq 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - start )) s (log: /tmp/calico-recovery-full.log, $OUT/calico/src/src/test/recovery/tmp_check/log)"
exit "$rc"
