#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fork/exec rules: the traced root process writes LITHE_TRACE itself; a child
# that only forks writes nothing; programs it execs write LITHE_TRACE.<pid>.
# Every file written must be a valid trace.
# usage: forkexec.sh liblithe-trace.so lithe-replay
set -u
TRACER=$1 REPLAY=$2
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
for p in sh ls cat; do command -v $p >/dev/null || { echo "SKIP: needs $p (apt-get install coreutils dash)"; exit 77; }; done
LITHE_TRACE="$d/sh.ltrace" LD_PRELOAD="$TRACER" sh -c 'ls / > /dev/null; cat /proc/self/status > /dev/null; (true); true' ||
  { echo "FAIL: traced shell failed"; exit 1; }
ls "$d"
fail=0
[ -s "$d/sh.ltrace" ] || { echo "FAIL: root trace missing"; fail=1; }
n=$(ls "$d"/sh.ltrace.* 2>/dev/null | grep -vc spool)
[ "$n" -ge 2 ] || { echo "FAIL: expected >= 2 child traces (ls, cat), found $n"; fail=1; }
ls "$d" | grep -q spool && { echo "FAIL: spool file left behind"; fail=1; }
for f in "$d"/sh.ltrace*; do
  "$REPLAY" "$f" --runs 1 --verify >/dev/null || { echo "FAIL: $f does not replay"; fail=1; }
done
[ $fail -eq 0 ] && echo PASS
exit $fail
