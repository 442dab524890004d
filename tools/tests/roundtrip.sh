#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Records the multithreaded test program with the tracer, replays the trace
# (one thread per recorded thread, then serially) and checks that the replay
# performed every recorded operation and that the program's own operation
# count, peak live bytes and live bytes at end (objects >= 5000 bytes, which
# are all the program's and none of libc's) equal the trace's.
# usage: roundtrip.sh liblithe-trace.so lithe-replay test-program
set -u
TRACER=$1 REPLAY=$2 PROG=$3
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
want=$(LITHE_TRACE="$d/mt.ltrace" LD_PRELOAD="$TRACER" "$PROG") || { echo "FAIL: traced program failed"; exit 1; }
echo "program: $want"
read -r _ ops _ peak _ end <<<"$want"
[ -s "$d/mt.ltrace" ] || { echo "FAIL: no trace written"; exit 1; }
fail=0
# version 2: the program's 4 worker threads are created and joined, so the
# trace holds 4 thread_start and 4 thread_exit records, and the replay
# creates those 4 threads at their start (5 replay threads in all)
info=$("$REPLAY" "$d/mt.ltrace" --info) || { echo "FAIL: --info"; exit 1; }
echo "$info" | sed 's/^/info: /'
echo "$info" | grep -q 'version 2,' || { echo "FAIL: not a version-2 trace"; fail=1; }
for op in thread_start thread_exit; do
  n=$(echo "$info" | awk -v o=$op '$1 == o {print $2}')
  [ "${n:-0}" = 4 ] || { echo "FAIL: $op records: ${n:-0}, want 4"; fail=1; }
done
for mode in --threads --serial; do
  out=$("$REPLAY" "$d/mt.ltrace" $mode --runs 2 --verify-min-size 5000) || { echo "FAIL: replay $mode"; echo "$out"; exit 1; }
  echo "$out" | sed "s/^/replay $mode: /"
  rec=$(echo "$out" | sed -n 's/^# verify: records \([0-9]*\) replayed \([0-9]*\).*/\1 \2/p')
  read -r nrec nrep <<<"$rec"
  [ -n "$nrec" ] && [ "$nrec" = "$nrep" ] || { echo "FAIL: $mode: replayed $nrep of $nrec records"; fail=1; }
  thr=$(echo "$out" | sed -n 's/^# verify: .* threads \([0-9]*\) .*/\1/p')
  want_thr=5; [ $mode = --serial ] && want_thr=1
  [ "$thr" = "$want_thr" ] || { echo "FAIL: $mode: $thr replay threads, want $want_thr"; fail=1; }
  cross=$(echo "$out" | sed -n 's/^# verify: .* cross-thread-ops \([0-9]*\) .*/\1/p')
  [ "${cross:-0}" -gt 0 ] || { echo "FAIL: $mode: no cross-thread frees in the trace"; fail=1; }
  line=$(echo "$out" | grep '^# verify: min-size 5000 ')
  got_ops=$(echo "$line" | sed -n 's/.* ops \([0-9]*\) .*/\1/p')
  got_peak=$(echo "$line" | sed -n 's/.* ops [0-9]* peak-live-bytes \([0-9]*\) .*/\1/p')
  got_end=$(echo "$line" | sed -n 's/.* end-live-bytes \([0-9]*\) .*/\1/p')
  got_rend=$(echo "$line" | sed -n 's/.* replay-end-live-bytes \([0-9]*\).*/\1/p')
  [ "$got_ops" = "$ops" ] || { echo "FAIL: $mode: ops $got_ops, program says $ops"; fail=1; }
  [ "$got_peak" = "$peak" ] || { echo "FAIL: $mode: peak $got_peak, program says $peak"; fail=1; }
  [ "$got_end" = "$end" ] || { echo "FAIL: $mode: end $got_end, program says $end"; fail=1; }
  [ "$got_rend" = "$end" ] || { echo "FAIL: $mode: replay left $got_rend live bytes, program $end"; fail=1; }
  echo "$out" | grep -q '^Time:' || { echo "FAIL: no MallocBench report"; fail=1; }
done
g=$("$REPLAY" "$d/mt.ltrace" --runs 1 --format=gobench | grep '^Benchmark')
echo "$g" | grep -Eq '^Benchmarkreplay_mt 1 [0-9]+ ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ unassisted-end-kB$' ||
  { echo "FAIL: gobench line: '$g'"; fail=1; }
[ $fail -eq 0 ] && echo PASS
exit $fail
