# Sourced by scripts that fetch Debian source packages (scripts/wheel.sh).
#
# ensure_deb_src SUITE PACKAGE LOGFILE: makes `apt-get source PACKAGE/SUITE` work. When apt
# knows no source of PACKAGE in SUITE (a fresh Debian 12 machine lists binary packages
# only), adds a deb-src entry for SUITE (main) in its own file under
# /etc/apt/sources.list.d/ and refreshes that file's index. apt verifies what it then
# fetches against the archive's signed index.
# (postgres/build.sh keeps its own copy for sid: its text is part of the PostgreSQL build's
# cache key.)
ensure_deb_src() {
  local suite=$1 package=$2 logfile=$3 list=/etc/apt/sources.list.d/calico-src-$1.sources sudo=""
  apt-get source --print-uris "$package/$suite" > /dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ ! -f "$list" ]; then
    echo "adding a deb-src entry for $suite in $list" >&2
    $sudo tee "$list" > /dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $sudo apt-get update -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- \
    -o APT::Get::List-Cleanup=0 >> "$logfile" 2>&1
}
