#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures the tracer's overhead on the python workload: wall and CPU time
# (user+sys) without and with liblithe-trace.so, alternating, N runs each
# (default 5), medians. Both runs use PYTHONMALLOC=malloc (the recording
# setting), so the difference is the tracer alone.
#   tools/measure-overhead.sh [N] [SCALE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tracer=$here/../build/liblithe-trace.so
n=${1:-5} scale=${2:-0.25}
[ -x /usr/bin/python3 ] || { echo "missing /usr/bin/python3: apt-get install python3" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export PYTHONMALLOC=malloc PYTHONHASHSEED=0
run() { # label env...
  local label=$1; shift
  /usr/bin/time -f "$label %e %U %S" -a -o "$tmp/times" env "$@" /usr/bin/python3 -s "$here/workloads/pywork.py" "$scale" >/dev/null
}
for ((i = 0; i < n; i++)); do
  run plain
  run traced LITHE_TRACE="$tmp/t.ltrace" LD_PRELOAD="$tracer"
done
awk '{ wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " ($3 + $4) }
function med(s,   a, k, i, j, t) { k = split(s, a, " "); for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
END { for (l in wall) printf "%-7s wall median %.3f s  cpu median %.3f s   (wall:%s)\n", l, med(wall[l]), med(cpu[l]), wall[l]
      printf "overhead: wall x%.2f, cpu x%.2f\n", med(wall["traced"]) / med(wall["plain"]), med(cpu["traced"]) / med(cpu["plain"]) }' "$tmp/times"
ls -la "$tmp/t.ltrace" | awk '{ print "trace size", $5, "bytes" }'
