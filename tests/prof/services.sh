#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# prof_services: profiles of a running program (src/prof.c, prof_triggers).
#   bash tests/prof/services.sh build/liblithe.so build/tests/prof/test-prof_services
# 1. LITHE_PROF_INTERVAL=8m, 60 MiB allocated: exactly 7 numbered dumps
#    (the samples' estimate of the bytes is within 1.5 % here: 3 sd)
# 2. LITHE_PROF_TIME=200ms, 1.1 s of allocation: 3 to 6 dumps
# 3. LITHE_PROF_SIGNAL=usr2: raise() and a child's kill give one dump each
# 4. with it, SIGTERM writes the exit profile and still ends the process
#    by SIGTERM; the program's own SIGTERM handler takes precedence
# 5. LITHE_PROF=1 LITHE_LEAKS=1: the leak report, PREFIX.pid.leaks.heap and
#    the exit profile of what is live, unsampled ("heapprofile")
set -eu -o pipefail
LIB=$(realpath "$1"); PROG=$(realpath "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/lithe-services.XXXXXX")
trap 'rm -rf "$T"' EXIT
numbered() { ls "$T" | grep -c "^$1\.[0-9]*\.[0-9]*\.heap$" || true; }
run() { env LD_PRELOAD="$LIB" LITHE_PROF=1 LITHE_PROF_SAMPLE=4k "$@"; }

run LITHE_PROF_PREFIX="$T/iv" LITHE_PROF_INTERVAL=8m "$PROG" volume 60
n=$(numbered iv); echo "interval 8m, 60 MiB: $n dumps"
[ "$n" = 7 ] || fail "LITHE_PROF_INTERVAL=8m over 60 MiB wrote $n dumps, not 7"
ls "$T"/iv.*.heap | grep -q '/iv\.[0-9]*\.heap$' || fail "no exit profile besides the interval dumps"
f=$(ls "$T"/iv.*.6.heap); head -1 "$f" | grep -q "@ heap_v2/4096" || fail "dump $f: $(head -1 "$f")"

run LITHE_PROF_PREFIX="$T/tm" LITHE_PROF_TIME=200ms "$PROG" time 1100
n=$(numbered tm); echo "time 200ms, 1.1 s: $n dumps"
[ "$n" -ge 3 ] && [ "$n" -le 6 ] || fail "LITHE_PROF_TIME=200ms over 1.1 s wrote $n dumps"

run LITHE_PROF_PREFIX="$T/sg" LITHE_PROF_SIGNAL=usr2 "$PROG" signal
n=$(numbered sg); echo "signal usr2, sent twice: $n dumps"
[ "$n" = 2 ] || fail "two SIGUSR2 wrote $n dumps"
run LITHE_PROF_PREFIX="$T/ns" "$PROG" volume 4
[ "$(numbered ns)" = 0 ] || fail "dumps without any trigger"

rc=0; run LITHE_PROF_PREFIX="$T/te" LITHE_PROF_SIGNAL=usr2 "$PROG" term || rc=$?
[ "$rc" = 143 ] || fail "SIGTERM: exit status $rc, not 143 (killed by SIGTERM)"
f=$(ls "$T"/te.*.heap 2>/dev/null | head -1); [ -n "$f" ] || fail "SIGTERM: no exit profile"
echo "SIGTERM: status $rc, $(head -1 "$f")"
rc=0; run LITHE_PROF_PREFIX="$T/to" LITHE_PROF_SIGNAL=usr2 "$PROG" term_own 2>"$T/err" || rc=$?
[ "$rc" = 3 ] && grep -q "own SIGTERM handler" "$T/err" || fail "the program's own SIGTERM handler did not run (status $rc)"
[ -z "$(ls "$T" | grep '^to\.')" ] || fail "a profile written though the program handles SIGTERM itself"
rc=0; run LITHE_PROF_PREFIX="$T/t0" "$PROG" term || rc=$?
[ "$rc" = 143 ] && [ -z "$(ls "$T" | grep '^t0\.')" ] || fail "without LITHE_PROF_SIGNAL SIGTERM changed (status $rc)"

LD_PRELOAD="$LIB" LITHE_PROF=1 LITHE_LEAKS=1 LITHE_PROF_PREFIX="$T/lk" "$PROG" leak 2>"$T/err"
cat "$T/err"
grep -q "refused" "$T/err" && fail "LITHE_PROF=1 with LITHE_LEAKS=1 refused"
grep -q "^lithe: leak site 1: 100000 bytes in 100 allocations" "$T/err" || fail "no leak report"
leaks=$(ls "$T"/lk.*.leaks.heap) || fail "no PREFIX.pid.leaks.heap"
prof=$(ls "$T"/lk.*.heap | grep -v leaks) || fail "no exit profile with LITHE_LEAKS=1"
head -1 "$leaks"; head -1 "$prof"
head -1 "$prof" | grep -q "@ heapprofile" || fail "the exit profile is not unsampled"
# in use: at least the 100 leaked blocks; allocated: 100 x 5000 freed as well
awk 'NR == 1 { gsub(/[\[\]:]/, " "); exit !($4 >= 100000 && $6 >= 600000) }' "$prof" || fail "exit profile figures: $(head -1 "$prof")"
awk 'NR == 1 { gsub(/[\[\]:]/, " "); exit !($4 >= 100000 && $4 == $6) }' "$leaks" || fail "leak profile figures: $(head -1 "$leaks")"
echo "prof_services: OK"
