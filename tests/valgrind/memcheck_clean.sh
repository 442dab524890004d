#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcheck_clean.sh PROG LIB: PROG (a test that passes on its own) run under
# memcheck with LD_PRELOAD=LIB (build/liblithe-valgrind.so) must pass with
# no memcheck error and no leak: lithe's own accesses to its free lists and
# metadata are invisible to memcheck, and every block it hands out is one
# memcheck knows.  The test prints which malloc served it: lithe's must.
set -u
prog=$1 lib=$2
command -v valgrind >/dev/null || { echo "SKIP: needs valgrind (apt-get install valgrind)"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_PRELOAD=$lib valgrind --soname-synonyms=somalloc=NONE --leak-check=full --error-exitcode=99 \
  --log-file="$log" "$prog"
rc=$?
summary=$(grep -E '^==[0-9]+== ERROR SUMMARY' "$log")
echo "$summary"
if [ $rc != 0 ] || ! grep -q 'ERROR SUMMARY: 0 errors' <<<"$summary"; then
  echo "FAIL: rc $rc under memcheck"; cat "$log"; exit 1
fi
echo "memcheck_clean: OK"
