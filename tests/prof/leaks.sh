#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# prof_leaks: LITHE_LEAKS=1 names the function that leaked, with the exact
# bytes and count, at exit on stderr; a thread's first block is reported too.
#   bash tests/prof/leaks.sh build/liblithe.so build/tests/prof/test-prof_sites
set -eu -o pipefail
LIB=$(realpath "$1"); PROG=$(realpath "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/lithe-leaks.XXXXXX")
trap 'rm -rf "$T"' EXIT
err=$T/err
export LITHE_PROF_PREFIX=$T/leaks # (the leak profile, PREFIX.pid.leaks.heap)
LD_PRELOAD=$LIB LITHE_LEAKS=1 "$PROG" leak 2>"$err"
cat "$err"
site=$(grep -A1 "^lithe: leak site 1:" "$err" | tail -1)
grep -q "^lithe: leak site 1: 100000 bytes in 100 allocations" "$err" || fail "site 1 is not 100000 bytes in 100 allocations"
case "$site" in *leaky_function*) ;; *) fail "site 1's first frame is not leaky_function: $site" ;; esac
grep -q "tidy_function" "$err" && fail "tidy_function freed everything but is reported"
# a thread's first block (the one that makes its heap) is tracked too
LD_PRELOAD=$LIB LITHE_LEAKS=1 "$PROG" thread_leak 2>"$err"
cat "$err"
grep -A1 "^lithe: leak site [0-9]*: [0-9]* bytes in 1 allocations" "$err" | grep -q thread_first_leak \
  || fail "thread_first_leak's block (a thread's first) is not reported"
echo "prof_leaks: OK"
