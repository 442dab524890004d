#!/bin/sh
# SPDX-License-Identifier: MIT
# startup-median.sh — bench-startup the snmalloc #639 way: one sample per
# process, medians of many processes, allocators interleaved (process i of
# every allocator runs before process i+1 of any), so load that comes and
# goes on a shared machine falls on all of them alike.
#
#   sh bench/workloads/startup-median.sh [-t T] [-n PROCS] [-b BUILD] [-s] [NAME=LIB ...]
#
# T threads per process (default 2), PROCS processes per allocator
# (default 45); -s: bench-startup --serial (each process's figure is then
# the median of its threads' own first pairs).  Without NAME=LIB words: glibc, the installed Debian peers
# and BUILD/liblithe.so (allocators.sh); LIB "none" runs with nothing
# preloaded.  Prints, per allocator, the median, quartiles and minimum of
# the ticks from the barrier to the last free, and the median's ratio to
# the first allocator's (tcmalloc first to compare with it).
# floor=BUILD/libbench-floor.so adds a malloc that costs nothing (a bump
# pointer, free does nothing): what is left is the benchmark's own work and
# its threads' scheduling.
set -eu
here=$(dirname "$0")
T=2 N=45 BUILD=build SERIAL=
while getopts t:n:b:s o; do
  case $o in
    t) T=$OPTARG ;; n) N=$OPTARG ;; b) BUILD=$OPTARG ;; s) SERIAL=--serial ;;
    *) echo "usage: $0 [-t T] [-n PROCS] [-b BUILD] [-s] [NAME=LIB ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
prog=$BUILD/bench-startup
[ -x "$prog" ] || { echo "# skip: $prog not built (make)" >&2; exit 0; }
if [ $# -eq 0 ]; then
  . "$here/allocators.sh"
  set -- $(default_allocators "$BUILD")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ $i -lt "$N" ]; do
  for spec in "$@"; do
    name=${spec%%=*} lib=${spec#*=}
    [ "$lib" = none ] && lib=
    LD_PRELOAD=$lib "$prog" --threads "$T" $SERIAL --format=gobench |
      awk '/^Benchmarkstartup/ {print $3}' >>"$tmp/$name"
  done
  i=$((i + 1))
done
if [ -n "$SERIAL" ]; then what="median of the threads' own first pairs"; else what="from the barrier to the last free"; fi
echo "# note: bench-startup --threads $T $SERIAL, $N processes per allocator, interleaved; ticks $what"
printf '%-12s %10s %10s %10s %10s %8s\n' allocator median q1 q3 min ratio
base=
for spec in "$@"; do
  name=${spec%%=*}
  sort -n "$tmp/$name" | awk -v name="$name" -v base="${base:-0}" '
    { v[NR] = $1 }
    END {
      m = v[int((NR + 1) / 2)]
      r = base > 0 ? sprintf("%.2f", m / base) : "1.00"
      printf "%-12s %10d %10d %10d %10d %8s\n", name, m, v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)], v[1], r
    }'
  [ -z "$base" ] && base=$(sort -n "$tmp/$name" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
done
