#!/bin/sh
# The memory limit's price and effect: bench-limitcycle (a 48 MiB working
# set cycled through sizes) with lithe without a limit and with
# LITHE_MEMORY_LIMIT=80m (soft: purge at once from 72 MiB), interleaved,
# RUNS times each (default 5); prints every run, then the median time and
# peak VmRSS of each.  glibc for reference.
#   bench/workloads/limit-bench.sh [RUNS]     (BUILD: default <repo>/build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$here/../.." && pwd)/build}
RUNS=${1:-5}
prog=$BUILD/bench-limitcycle
lib=$BUILD/liblithe.so
[ -x "$prog" ] && [ -f "$lib" ] || { echo "limit-bench: build first (make)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
i=0
while [ $i -lt "$RUNS" ]; do
  "$prog" | awk '/^Benchmark/ { print $3, $5 }' >>"$tmp/glibc"
  env LD_PRELOAD="$lib" "$prog" | awk '/^Benchmark/ { print $3, $5 }' >>"$tmp/lithe"
  env LD_PRELOAD="$lib" LITHE_MEMORY_LIMIT=80m "$prog" | awk '/^Benchmark/ { print $3, $5 }' >>"$tmp/lithe-limit80m"
  i=$((i + 1))
done
printf '%-16s %12s %14s   (median of %s runs)\n' allocator "time ms" "peak VmRSS kB" "$RUNS"
for a in glibc lithe lithe-limit80m; do
  t=$(awk '{ print $1 }' "$tmp/$a" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] / 1e6 }')
  r=$(awk '{ print $2 }' "$tmp/$a" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  printf '%-16s %12.1f %14s   runs: %s\n' "$a" "$t" "$r" "$(awk '{ printf "%.0fms/%skB ", $1 / 1e6, $2 }' "$tmp/$a")"
done
