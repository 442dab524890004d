#!/bin/sh
# SPDX-License-Identifier: MIT
# Smoke test of the workload programs: every program, --quick, output checked
# against bench/PROTOCOL.md. Exit status 0 = all good.
#
#   bench/workloads/smoke-test.sh [BUILD_DIR] [ALLOCATOR.so]
#
# ALLOCATOR.so (optional) is put in LD_PRELOAD for every program.
set -u
BUILD=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}
PRELOAD=${2:-}
fail=0
# a hang is a failure too: every program gets at most TIMEOUT seconds
TIMEOUT=${TIMEOUT:-120}
to=""
command -v timeout >/dev/null 2>&1 && to="timeout $TIMEOUT"
num='[0-9]+(\.[0-9]+)?'

# check NAME REGEX CMD... : run CMD, require rc 0 and a line matching REGEX
check() {
  name=$1 re=$2
  shift 2
  if [ -n "$PRELOAD" ]; then
    out=$($to env LD_PRELOAD="$PRELOAD" "$@" 2>&1)
  else
    out=$($to "$@" 2>&1)
  fi
  rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && echo "FAIL $name: timed out after ${TIMEOUT}s" || echo "FAIL $name: exit $rc"
    echo "$out" | tail -n 5; fail=1; return
  fi
  if echo "$out" | grep -q '^# skip:'; then
    echo "skip $name: $(echo "$out" | grep '^# skip:')"; return
  fi
  if ! echo "$out" | grep -Eq "$re"; then
    echo "FAIL $name: no line matching $re"; echo "$out" | tail -n 5; fail=1; return
  fi
  echo "ok   $name"
}

mb="$BUILD/bench-mallocbench"
for b in churn list_allocate tree_allocate tree_churn fragment fragment_iterate medium big balloon \
         list_traverse tree_traverse alloc_free stress stress_aligned memalign realloc thread_churn; do
  check "$b" "^Benchmark${b} 2 $num ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ unassisted-end-kB\$" \
    "$mb" --benchmark $b --quick --runs 2 --format=gobench
  check "${b}_parallel" "^Benchmark${b}_parallel 2 $num ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ unassisted-end-kB\$" \
    "$mb" --benchmark $b --parallel --threads 2 --quick --runs 2 --format=gobench
done
for b in message_one message_many; do
  check "$b" "^Benchmark${b} 2 $num ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ unassisted-end-kB\$" \
    "$mb" --benchmark $b --threads 2 --quick --runs 2 --format=gobench
done
check "retention" "^Benchmarkretention 2 $num ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ unassisted-end-kB [0-9]+ live-kB $num end-per-live $num unassisted-end-per-live\$" \
  "$mb" --benchmark retention --quick --runs 2 --format=gobench
check "message_one per-call" "^Benchmarkmessage_one 1 " "$mb" --benchmark message_one --quick --runs 1 --format=gobench --persistent-consumers
check "churn_memory_warning" "^# scavenge: " "$mb" --benchmark churn --quick --runs 1 --memory-warning --format=gobench
check "churn heap text" "^Memory at End:	[0-9]+kB\$" "$mb" --benchmark churn --quick --runs 1 --heap 2
check "tree_churn scale" "^# note: --scale 0.01" "$mb" --benchmark tree_churn --scale 0.01 --runs 1
check "stress churn faults" "^# churn 0: [0-9]+ kB in [0-9]+ new objects \([0-9]+ pages of 4 KiB\), [0-9]+ faults writing them\$" "$mb" --benchmark stress --quick --runs 1 --churn-faults
check "churn runs 0" "^Benchmarkchurn 1 [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ unassisted-end-kB\$" "$mb" --benchmark churn --quick --runs 0 --format=gobench
check "message_one --parallel" "^# skip:" "$mb" --benchmark message_one --parallel --quick
check "startup" "^Benchmarkstartup-8 1 [0-9]+ (cycles|ns) $num ns/op\$" "$BUILD/bench-startup" --threads 8 --format=gobench
check "startup cold" "^Taken: [0-9]+\$" "$BUILD/bench-startup" --threads 4 --cold
check "startup serial" "^Benchmarkstartup_serial-4 1 [0-9]+ (cycles|ns) [0-9]+ min-(cycles|ns) $num faults/thread\$" "$BUILD/bench-startup" --threads 4 --serial
check "scaling" "^Benchmarkfixed_block_scaling-2 [0-9]+ $num ns/op $num cpu-ns/op\$" "$BUILD/bench-scaling" --quick --cpu 1,2
check "scaling batches" "^# batches: [0-9]+ of 1000 ops, fastest $num median $num ns/op of a thread\$" "$BUILD/bench-scaling" --quick --cpu 2
check "scaling deep loop" "^Benchmarkfixed_block_scaling_deep [0-9]+ $num ns/op $num cpu-ns/op\$" "$BUILD/bench-scaling" --deep --mode loop --benchtime 20x --cpu 1
check "commit" "^Benchmarkcommit 1 -?[0-9]+ vmdata-kB -?[0-9]+ rss-kB" "$BUILD/bench-commit"
check "fastpath" "^Benchmarkfastpath_remote_32768 [0-9]+ $num ns/op\$" "$BUILD/bench-fastpath" --quick --runs 1 --n 10000
check "cgloop" "" "$BUILD/bench-cgloop" b 1000
check "bigchurn" "^Benchmarkbigchurn 1 [0-9]+ ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ cpu-ns/op$" "$BUILD/bench-bigchurn" --quick --max 4
check "mtrandom" "^Benchmarkmtrandom 1 [0-9]+ ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults$" "$BUILD/bench-mtrandom" --quick --threads 2
check "cgloop size" "" "$BUILD/bench-cgloop" b 1000 4096
check "cgloop remote" "" "$BUILD/bench-cgloop" r 1000
check "limitcycle" "^Benchmarklimitcycle 1 [0-9]+ ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults$" "$BUILD/bench-limitcycle" --quick
check "limitcycle --limit" "^Benchmarklimitcycle_limit80m 1 [0-9]+ ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults$" "$BUILD/bench-limitcycle" --quick --limit 80m
exit $fail
