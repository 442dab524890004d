#!/bin/sh
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
}

echo "# note: instructions per malloc(64)+free pair under callgrind, (Ir($LARGE) - Ir($SMALL)) / $((LARGE - SMALL))"
printf '%-12s %16s %16s\n' allocator "a:malloc/free" "b:100x+100x"
for spec in "$@"; do
  name=${spec%%=*}
  lib=${spec#*=}
  [ -z "$lib" ] && lib=none
  if [ "$lib" != none ] && [ ! -e "$lib" ]; then
    echo "# skip: $name: $lib not found"
    continue
  fi
  res=""
  for mode in a b; do
    s=$(ir "$lib" $mode $SMALL)
    l=$(ir "$lib" $mode $LARGE)
    if [ "$s" = FAIL ] || [ "$l" = FAIL ]; then
      res="$res FAIL"
      echo "# note: $name mode $mode failed under valgrind:" >&2
      tail -n 5 "$tmp/log" >&2 || true
    else
      res="$res $(awk -v s="$s" -v l="$l" -v n=$((LARGE - SMALL)) 'BEGIN {printf "%.1f", (l - s) / n}')"
    fi
  done
  set -- $res
  printf '%-12s %16s %16s\n' "$name" "$1" "$2"
  [ "$1" != FAIL ] && echo "Benchmarkcallgrind_pair_$name $((LARGE - SMALL)) $1 instr/op"
  [ "$2" != FAIL ] && echo "Benchmarkcallgrind_batch_$name $((LARGE - SMALL)) $2 instr/op"
done
