#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# prof_pprof: heap profiles of lithe read by Debian's google-pprof.
#   bash tests/prof/pprof.sh build/liblithe.so build/tests/prof/test-prof_sites
# 1. prof_sites shares under LD_PRELOAD with LITHE_PROF=1: google-pprof
#    --text (--alloc_space and the default in-use space) shows site_sixty,
#    site_thirty, site_ten within 5 points of 60 / 30 / 10 %, and their
#    total within 10 % of the bytes really allocated; --svg writes an SVG.
# 2. python3 under profiling: the profile is read, its total is not zero.
# Skipped (77) without google-pprof (apt-get install google-perftools).
set -eu -o pipefail
LIB=$(realpath "$1"); PROG=$(realpath "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v google-pprof >/dev/null || { echo "SKIP: needs google-pprof (apt-get install google-perftools)"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lithe-pprof.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# 2 KiB mean interval: ~48,000 samples of the 100 MB, ~3,700 of the 8 MB
# live at exit.  At 8 KiB (~930 live samples) the in-use total spread
# 0.94-1.10 of the truth and site_sixty 58.7-63.5 % over 9 runs: one run in
# ten or so failed the 10 % bound.  A quarter of the interval halves that.
LD_PRELOAD=$LIB LITHE_PROF=1 LITHE_PROF_SAMPLE=2k LITHE_PROF_PREFIX=$TMP/shares "$PROG" shares
prof=$(ls "$TMP"/shares.*.heap)
head -2 "$prof"

# check_shares MODE TOTAL_MB: the three sites' percentages and total
check_shares() {
  local mode=$1 want_mb=$2 out="$TMP/text$1"
  google-pprof --text $mode "$PROG" "$prof" >"$out" 2>"$TMP/err" || { cat "$TMP/err"; fail "google-pprof --text $mode failed"; }
  echo "--- google-pprof --text $mode"
  cat "$out"
  awk -v want="$want_mb" -v mode="$mode" '
    /^Total:/ { total = $2 }
    $6 == "site_sixty" { s60 = $2 } $6 == "site_thirty" { s30 = $2 } $6 == "site_ten" { s10 = $2 }
    END {
      bad = 0
      if (s60 == "" || s30 == "" || s10 == "") { print "FAIL: a site is missing" mode; exit 1 }
      sub("%", "", s60); sub("%", "", s30); sub("%", "", s10)
      printf("%s: site_sixty %.1f %%, site_thirty %.1f %%, site_ten %.1f %%, total %.1f MB (true %.1f)\n",
             mode, s60, s30, s10, total, want)
      d = s60 - 60; if (d < 0) d = -d; if (d > 5) bad = 1
      d = s30 - 30; if (d < 0) d = -d; if (d > 5) bad = 1
      d = s10 - 10; if (d < 0) d = -d; if (d > 5) bad = 1
      r = total / want; if (r < 0.9 || r > 1.1) bad = 1
      if (bad) { print "FAIL: shares or total off" ; exit 1 }
    }' "$out"
}
# pprof's MB are MiB: 100,000 x 1000 bytes; 8,000 x 1000 bytes live
check_shares --alloc_space 95.37
check_shares --inuse_space 7.63

google-pprof --svg --alloc_space "$PROG" "$prof" >"$TMP/shares.svg" 2>"$TMP/err" || true
if grep -q "dot: not found\|dot.*No such file" "$TMP/err"; then
  fail "google-pprof --svg needs graphviz (apt-get install graphviz)"
fi
grep -q "<svg" "$TMP/shares.svg" || { cat "$TMP/err"; fail "google-pprof --svg wrote no SVG"; }
grep -q "site_sixty" "$TMP/shares.svg" || fail "the SVG does not name site_sixty"
echo "ok: --svg ($(wc -c <"$TMP/shares.svg") bytes, names site_sixty)"

PY=/usr/bin/python3
if [ -x "$PY" ]; then
  LD_PRELOAD=$LIB LITHE_PROF=1 LITHE_PROF_SAMPLE=64k LITHE_PROF_PREFIX=$TMP/py "$PY" -c '
import json
d = [json.dumps({"k%d" % i: list(range(i % 50))}) for i in range(100000)]
print("python", len(d))'
  pyprof=$(ls "$TMP"/py.*.heap | head -1)
  google-pprof --text --alloc_space "$PY" "$pyprof" >"$TMP/py.txt" 2>"$TMP/err" || { cat "$TMP/err"; fail "google-pprof on python3's profile failed"; }
  head -12 "$TMP/py.txt"
  total=$(awk '/^Total:/ { print $2 }' "$TMP/py.txt")
  awk -v t="${total:-0}" 'BEGIN { exit !(t > 1) }' || fail "python3 profile: total ${total:-?} MB"
  echo "ok: python3 profile read, $total MB allocated"
fi
echo "prof_pprof: OK"
