#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tracer's cost per call and per thread: lithe-trace-bench (THREADS
# threads, each PAIRS malloc(64)+free pairs) plain and under
# liblithe-trace.so at 1, 2 and 4 threads, alternating, N runs each
# (default 5), medians of the wall time per call of one thread.
#   tools/measure-thread-overhead.sh [N] [PAIRS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
tracer=$build/liblithe-trace.so prog=$build/tools/lithe-trace-bench
n=${1:-5} pairs=${2:-1000000}
[ -x "$prog" ] && [ -e "$tracer" ] || { echo "build first: $prog, $tracer" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for t in 1 2 4; do
  for ((i = 0; i < n; i++)); do
    "$prog" "$t" "$pairs" | awk -v l=plain '{print l, $2, $10}' >>"$tmp/r"
    LITHE_TRACE="$tmp/t.ltrace" LD_PRELOAD="$tracer" "$prog" "$t" "$pairs" |
      awk -v l=traced '{print l, $2, $10}' >>"$tmp/r"
  done
done
awk 'function med(s,   a, k, i, j, x) { k = split(s, a, " "); for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { x = a[i]; a[i] = a[j]; a[j] = x }
       return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
     { v[$1 " " $2] = v[$1 " " $2] " " $3 }
     END { for (t = 1; t <= 4; t *= 2) { p = med(v["plain " t]); q = med(v["traced " t]);
             printf "threads %d: ns per call of one thread: plain %.1f, traced %.1f (x%.1f, +%.1f ns per call)\n", t, p, q, q / p, q - p } }' "$tmp/r"
