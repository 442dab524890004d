#!/bin/sh
# SPDX-License-Identifier: MIT
# The fast path across the small size range: instructions per malloc+free
# pair at each size from 16 B to 32 KiB, in both loops of bench-cgloop
# (a: one malloc then its free; b: 100 mallocs then their 100 frees).
#
#   bench/workloads/fastpath-sweep.sh [NAME=PATH ...]
#
# Allocators as in callgrind-fastpath.sh (none given: glibc, the installed
# Debian peers, lithe=build/liblithe.so). Under valgrind --tool=callgrind
# each point is (Ir(ITERS + 1,000) - Ir(1,000)) / ITERS, so start-up and the
# first touch of the memory cancel out; ITERS is 100,000 (the figure is
# exact to the instruction for a loop that does the same work every time).
# Without valgrind it prints nanoseconds per pair instead, from
# bench-cgloop's own clock (median of 5 runs of 2,000,000 pairs): noisy on a
# shared machine, compare only within one run.
# Environment: BUILD (default <repo>/build), VALGRIND (default valgrind),
# SIZES (default "16 32 64 128 256 512 1024 2048 4096 8192 16384 32768").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$repo/build}
VALGRIND=${VALGRIND:-valgrind}
SIZES=${SIZES:-"16 32 64 128 256 512 1024 2048 4096 8192 16384 32768"}
prog=$BUILD/bench-cgloop
[ -x "$prog" ] || { echo "fastpath-sweep: $prog not built" >&2; exit 2; }

. "$here/allocators.sh"
[ $# -gt 0 ] || set -- $(default_allocators "$BUILD")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

if command -v "$VALGRIND" >/dev/null 2>&1; then
  unit=instr
  SMALL=1000
  LARGE=101000
else
  unit=ns
  echo "# note: valgrind not installed: nanoseconds per pair (noisy), not instructions"
fi

# run LIB ARGS... : the program, preloaded with LIB unless LIB is none
run() {
  lib=$1
  shift
  if [ "$lib" = none ]; then "$@"; else LD_PRELOAD="$lib" "$@"; fi
}

# ir LIB MODE ITERS SIZE -> total Ir, or FAIL
ir() {
  out=$tmp/cg.out
  rm -f "$out"
  run "$1" "$VALGRIND" --tool=callgrind --callgrind-out-file="$out" "$prog" "$2" "$3" "$4" \
    >"$tmp/log" 2>&1 || { echo FAIL; return; }
  v=$(awk '/^summary:/ {print $2; exit} /^totals:/ {t=$2} END {if (t != "") print t}' "$out" | head -n 1)
  [ -n "$v" ] && echo "$v" || echo FAIL
}

# point LIB MODE SIZE -> instructions (or ns) per pair, or FAIL
point() {
  if [ $unit = instr ]; then
    s=$(ir "$1" "$2" $SMALL "$3")
    l=$(ir "$1" "$2" $LARGE "$3")
    if [ "$s" = FAIL ] || [ "$l" = FAIL ]; then echo FAIL; return; fi
    awk -v s="$s" -v l="$l" -v n=$((LARGE - SMALL)) 'BEGIN {printf "%.1f", (l - s) / n}'
  else
    for i in 1 2 3 4 5; do
      run "$1" "$prog" "$2" 2000000 "$3" ns 2>/dev/null || echo FAIL
    done | sort -n | sed -n 3p
  fi
}

echo "# note: $unit per malloc+free pair; a: malloc then free, b: 100 mallocs then 100 frees"
printf '%-10s %6s' allocator size
for sz in $SIZES; do printf ' %11s' "$sz"; done
echo
for spec in "$@"; do
  name=${spec%%=*}
  lib=${spec#*=}
  [ -z "$lib" ] && lib=none
  if [ "$lib" != none ] && [ ! -e "$lib" ]; then
    echo "# skip: $name: $lib not found"
    continue
  fi
  line=""
  rows=""
  for sz in $SIZES; do
    a=$(point "$lib" a "$sz")
    b=$(point "$lib" b "$sz")
    line="$line $(printf '%11s' "$a/$b")"
    [ "$a" != FAIL ] && rows="$rows
Benchmarksweep_pair_${sz}_$name 1 $a $unit/op"
    [ "$b" != FAIL ] && rows="$rows
Benchmarksweep_batch_${sz}_$name 1 $b $unit/op"
  done
  printf '%-10s %6s%s\n' "$name" "a/b" "$line"
  [ -n "$rows" ] && printf '%s\n' "$rows" | sed '/^$/d'
done
