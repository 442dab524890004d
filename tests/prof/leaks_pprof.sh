#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# prof_leaks_pprof: the leak report as a heap profile (LITHE_LEAKS=1 writes
# PREFIX.pid.leaks.heap) names a PIE program's static function through
# google-pprof's symbolisation, where the text report (dladdr, no
# -rdynamic) shows a bare address.
#   bash tests/prof/leaks_pprof.sh build/liblithe.so build/tests/prof/test-prof_services
# Skipped (77) without google-pprof (apt-get install google-perftools).
set -eu -o pipefail
LIB=$(realpath "$1"); PROG=$(realpath "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v google-pprof >/dev/null || { echo "SKIP: needs google-pprof (apt-get install google-perftools)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/lithe-leakpprof.XXXXXX")
trap 'rm -rf "$T"' EXIT
readelf -h "$PROG" | grep -q "DYN" || fail "$PROG is not a PIE"
LD_PRELOAD="$LIB" LITHE_LEAKS=1 LITHE_PROF_PREFIX="$T/lk" "$PROG" leak 2>"$T/err"
cat "$T/err"
f=$(ls "$T"/lk.*.leaks.heap) || fail "no leak profile"
google-pprof --text "$PROG" "$f" >"$T/text" 2>"$T/perr" || { cat "$T/perr"; fail "google-pprof failed"; }
cat "$T/text"
awk '$6 ~ /^leaky_static/ { found = 1; exit !($1 + 0 >= 0.09 && $1 + 0 <= 0.1) } END { exit !found }' "$T/text" \
  || fail "google-pprof does not put 0.1 MB (100,000 bytes) on leaky_static (a static function of a PIE without -rdynamic)"
echo "prof_leaks_pprof: OK"
