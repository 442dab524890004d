#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# prof_unwind: every sampled stack of prof_unwind.c taken by the cached
# unwinder and by libgcc, compared (LITHE_PROF_UNWIND=check aborts on a
# difference); then the counts at exit: stacks checked, and some left to
# libgcc (the 2 MiB frame, the signal handler).  Then the default
# (LITHE_PROF_UNWIND=fast, libgcc_s not loaded, as in a C program): the
# same two stacks are cut at those frames, the rest walked.
#   bash tests/prof/unwind.sh build/liblithe.so build/tests/prof/test-prof_unwind DIR
set -eu -o pipefail
LIB=$(realpath "$1"); PROG=$(realpath "$2"); DIR=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$DIR" && mkdir -p "$DIR"
# field N of the summary line "lithe: LITHE_PROF_UNWIND=MODE: W stacks by
# the cached unwinder (C checked ...), G by libgcc (...), S cut at ..."
counts() {
  LD_PRELOAD=$LIB LITHE_PROF=1 LITHE_PROF_SAMPLE=1 LITHE_PROF_UNWIND=$1 LITHE_PROF_PREFIX=$DIR/p \
    "$PROG" >/dev/null 2>"$DIR/err.$1" || { cat "$DIR/err.$1"; fail "prof_unwind failed (LITHE_PROF_UNWIND=$1)"; }
  cat "$DIR/err.$1" >&2
  grep "^lithe: LITHE_PROF_UNWIND=$1:" "$DIR/err.$1" | sed 's/[^0-9 ]//g' | awk '{print $1, $2, $3, $4}'
}
read -r walked checked gcc stuck < <(counts check)
[ "$checked" -ge 400 ] || fail "only $checked stacks compared with libgcc's (expected >= 400: 448 seen)"
[ "$gcc" -ge 2 ] || fail "$gcc stacks left to libgcc (the 2 MiB frame and the signal handler should be)"
echo "check: $walked walked, $checked the same as libgcc's, $gcc left to libgcc, $stuck cut"
read -r walked2 checked2 gcc2 stuck2 < <(counts fast)
[ "$walked2" -ge 400 ] || fail "only $walked2 stacks walked by the cached unwinder"
[ $((gcc2 + stuck2)) -ge 2 ] || fail "the 2 MiB frame and the signal handler neither cut nor left to libgcc"
echo "fast: $walked2 walked, $gcc2 left to libgcc, $stuck2 cut"
echo "prof_unwind: OK"
