#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program that exits (exit and _exit) while its threads allocate must still
# leave a complete, valid trace that replays every record, with the threads'
# starts recorded and no exits.
# usage: exitrace.sh liblithe-trace.so lithe-replay exitrace-program
set -u
TRACER=$1 REPLAY=$2 PROG=$3
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail=0
for mode in exit _exit; do
  for i in 1 2 3; do
    arg=; [ $mode = _exit ] && arg=q
    LITHE_TRACE="$d/x.ltrace" LD_PRELOAD="$TRACER" "$PROG" $arg || { echo "FAIL: $mode: program failed"; fail=1; continue; }
    out=$("$REPLAY" "$d/x.ltrace" --runs 1 --no-warmup --verify 2>&1) || { echo "FAIL: $mode: replay: $out"; fail=1; continue; }
    line=$(echo "$out" | grep '^# verify: records')
    echo "$mode: $line"
    echo "$line" | grep -Eq 'records ([0-9]+) replayed \1 ' || { echo "FAIL: $mode: $line"; fail=1; }
    # the 4 threads were created and never exited: 4 thread_start records,
    # no thread_exit, and the replay keeps them until the end of the run
    info=$("$REPLAY" "$d/x.ltrace" --info)
    ns=$(echo "$info" | awk '$1 == "thread_start" {print $2}')
    ne=$(echo "$info" | awk '$1 == "thread_exit" {print $2}')
    [ "${ns:-0}" = 4 ] && [ -z "$ne" ] || { echo "FAIL: $mode: thread_start ${ns:-0} (want 4), thread_exit ${ne:-0} (want 0)"; fail=1; }
    ls "$d" | grep -q spool && { echo "FAIL: spool left behind"; fail=1; }
  done
done
[ $fail -eq 0 ] && echo PASS
exit $fail
