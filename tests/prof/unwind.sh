#!/usr/bin/env bash
# prof_unwind: every sampled stack of prof_unwind.c taken by the cached
# unwinder and by libgcc, compared (LITHE_PROF_UNWIND=check aborts on a
# difference); then the counts at exit: stacks checked, and some left to
# libgcc (the 2 MiB frame, the signal handler).
#   bash tests/prof/unwind.sh build/liblithe.so build/tests/prof/test-prof_unwind DIR
set -eu -o pipefail
LIB=$(realpath "$1"); PROG=$(realpath "$2"); DIR=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$DIR" && mkdir -p "$DIR"
LD_PRELOAD=$LIB LITHE_PROF=1 LITHE_PROF_SAMPLE=1 LITHE_PROF_UNWIND=check LITHE_PROF_PREFIX=$DIR/p \
  "$PROG" 2>"$DIR/err" || { cat "$DIR/err"; fail "prof_unwind failed"; }
cat "$DIR/err"
line=$(grep "^lithe: LITHE_PROF_UNWIND=check:" "$DIR/err") || fail "no check summary at exit"
same=$(echo "$line" | awk '{print $3}'); gcc=$(echo "$line" | awk '{print $9}')
[ "$same" -ge 400 ] || fail "only $same stacks compared with libgcc's (expected >= 400: 448 seen)"
[ "$gcc" -ge 2 ] || fail "$gcc stacks left to libgcc (the 2 MiB frame and the signal handler should be)"
echo "prof_unwind: OK ($same stacks the same as libgcc's, $gcc left to libgcc)"
