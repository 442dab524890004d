#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per malloc+free pair, counted by callgrind (no timing noise).
#
#   bench/workloads/callgrind-fastpath.sh [NAME=PATH ...]
#
# With no arguments: glibc (no preload), the Debian peers that are installed
# (jemalloc, mimalloc, tcmalloc_minimal) and lithe=build/liblithe.so if it
# exists. NAME=PATH runs exactly the allocators named; NAME=none or
# glibc= means the C library's own malloc.
#
# For each allocator and each loop of bench-cgloop (a: malloc(64)/free,
# b: 100 x malloc(64) then 100 x free) the program runs under
# valgrind --tool=callgrind twice, with 1,000 and 1,001,000 pairs, and
#   instructions per pair = (Ir(1,001,000) - Ir(1,000)) / 1,000,000
# so start-up, the allocator's initialisation and the first-touch work cancel
# out. Ir is the "summary:" (or "totals:") figure of the callgrind output.
# The "less loop" columns are the same difference less what callgrind
# counts in bench-cgloop itself (callgrind_annotate's per-function figures
# of its object: the loop and its PLT jumps, which every allocator pays
# alike, 10 instructions a pair in a and 14.1 in b): what the allocator's
# malloc and free cost.  (Not the allocator's object: callgrind names no
# object for tcmalloc's malloc and free.)
# Environment: BUILD (default: <repo>/build), where bench-cgloop lives;
# VALGRIND (default: valgrind).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$repo/build}
VALGRIND=${VALGRIND:-valgrind}
prog=$BUILD/bench-cgloop
[ -x "$prog" ] || { echo "callgrind-fastpath: $prog not built" >&2; exit 2; }
command -v "$VALGRIND" >/dev/null 2>&1 || { echo "# skip: valgrind not installed"; exit 0; }

. "$here/allocators.sh"
[ $# -gt 0 ] || set -- $(default_allocators "$BUILD")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

SMALL=1000
LARGE=1001000

# ir LIB MODE ITERS -> prints total Ir, or FAIL
ir() {
  out=$tmp/cg.out
  rm -f "$out"
  if [ "$1" = none ]; then
    "$VALGRIND" --tool=callgrind --callgrind-out-file="$out" "$prog" "$2" "$3" >"$tmp/log" 2>&1 || { echo FAIL; return; }
  else
    LD_PRELOAD="$1" "$VALGRIND" --tool=callgrind --callgrind-out-file="$out" "$prog" "$2" "$3" >"$tmp/log" 2>&1 || { echo FAIL; return; }
  fi
  v=$(awk '/^summary:/ {print $2; exit} /^totals:/ {t=$2} END {if (t != "") print t}' "$out" | head -n 1)
  [ -n "$v" ] && echo "$v" || echo FAIL
  # the loop's own share, into $tmp/inlib
  obj=$(readlink -f "$prog")
  callgrind_annotate --threshold=100 "$out" 2>/dev/null |
    awk -v obj="[$obj]" '
      # "Ir (pct) file:function [object]"; a function met again (another
      # file: inlined code) is printed without its object
      /^ *[0-9,]+ \(/ {
        line = $0
        o = ""
        if (match(line, / \[[^]]*\]$/)) { o = substr(line, RSTART + 1); line = substr(line, 1, RSTART - 1) }
        fn = line
        sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, "", fn)
        sub(/^.*:/, "", fn)
        if (o != "") seen[fn] = o
        else o = seen[fn]
        if (o == obj) { gsub(",", "", $1); t += $1 }
      }
      END {print t + 0}' >"$tmp/inlib"
}

command -v callgrind_annotate >/dev/null 2>&1 || echo "# note: callgrind_annotate not installed: the less-loop figures are the pair's"

echo "# note: instructions per malloc(64)+free pair under callgrind, (Ir($LARGE) - Ir($SMALL)) / $((LARGE - SMALL))"
printf '%-12s %16s %16s %12s %12s\n' allocator "a:malloc/free" "b:100x+100x" "a:less loop" "b:less loop"
for spec in "$@"; do
  name=${spec%%=*}
  lib=${spec#*=}
  [ -z "$lib" ] && lib=none
  if [ "$lib" != none ] && [ ! -e "$lib" ]; then
    echo "# skip: $name: $lib not found"
    continue
  fi
  res=""
  inlib=""
  for mode in a b; do
    s=$(ir "$lib" $mode $SMALL)
    si=$(cat "$tmp/inlib")
    l=$(ir "$lib" $mode $LARGE)
    li=$(cat "$tmp/inlib")
    if [ "$s" = FAIL ] || [ "$l" = FAIL ]; then
      res="$res FAIL"
      inlib="$inlib FAIL"
      echo "# note: $name mode $mode failed under valgrind:" >&2
      tail -n 5 "$tmp/log" >&2 || true
    else
      res="$res $(awk -v s="$s" -v l="$l" -v n=$((LARGE - SMALL)) 'BEGIN {printf "%.1f", (l - s) / n}')"
      inlib="$inlib $(awk -v s="$s" -v l="$l" -v si="$si" -v li="$li" -v n=$((LARGE - SMALL)) 'BEGIN {printf "%.1f", (l - li - s + si) / n}')"
    fi
  done
  set -- $res $inlib
  printf '%-12s %16s %16s %12s %12s\n' "$name" "$1" "$2" "$3" "$4"
  [ "$1" != FAIL ] && echo "Benchmarkcallgrind_pair_$name $((LARGE - SMALL)) $1 instr/op"
  [ "$2" != FAIL ] && echo "Benchmarkcallgrind_batch_$name $((LARGE - SMALL)) $2 instr/op"
  [ "$3" != FAIL ] && echo "Benchmarkcallgrind_pair_lessloop_$name $((LARGE - SMALL)) $3 instr/op"
  [ "$4" != FAIL ] && echo "Benchmarkcallgrind_batch_lessloop_$name $((LARGE - SMALL)) $4 instr/op"
done
