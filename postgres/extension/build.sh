#!/usr/bin/env bash
# The third PostgreSQL install tree, "ext": the vanilla server (pristine 18.6 sources, built by
# postgres/build.sh) copied, with calico and the patched pgvector installed into the copy by
# install.sh, so that "vanilla" keeps stock pgvector for comparisons. Same binaries as vanilla:
# both servers open the same data directory.
#
# Cached in <build dir of postgres/build.sh>/ext, stamped with the hash of this directory's
# sources (calico/, pgvector-patches/, install.sh, this script): a second run with nothing
# changed returns at once; a change rebuilds only this tree (seconds), not the servers.
# Usage: postgres/extension/build.sh [--print]   prints the tree's directory last
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common.sh"
OUT=$(bash "$HERE/../build.sh" "${1:-}")
key=$(cd "$HERE" && find calico pgvector-patches install.sh build.sh -type f ! -name '*.o' ! -name '*.so' \
        -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -c1-16)
EXT=$OUT/ext
if [ "${1:-}" = "--print" ] || [ -f "$EXT/done-$key" ]; then
  echo "$EXT"
  exit 0
fi
[ -f "$OUT/done" ] || { echo "postgres/extension/build: no server build in $OUT" >&2; exit 1; }
# One build at a time (a second caller waits, then finds the stamp)
exec 9> "$OUT/.ext-build.lock"
flock 9
if [ -f "$EXT/done-$key" ]; then echo "$EXT"; exit 0; fi
echo "postgres/extension/build: building $EXT" >&2
# Built beside, then moved into place: a failed build leaves the previous tree (and no stamp).
# The install tree is relocatable (pg_config and the server find their files relative to
# their own location), so it works from its final place.
NEW=$EXT.new
rm -rf "$NEW"
mkdir -p "$NEW"
cp -a "$OUT/vanilla/install" "$NEW/install"
bash "$HERE/install.sh" "$NEW/install/bin/pg_config" --build-dir "$NEW" \
  --pgvector-source "$CALICO_PG_CACHE/download/pgvector_0.8.6.orig.tar.gz"
rm -rf "$EXT"
mv "$NEW" "$EXT"
ensure_pg_user
give_to_pg "$EXT"
touch "$EXT/done-$key"
echo "$EXT"
