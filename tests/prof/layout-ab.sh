#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# layout-ab.sh [LIB [N ROUNDS OFFSET...]] — build tests/prof/layout_ab.c and
# run it against LIB (default build/liblithe.so) with LITHE_PROF=1: churn's
# loop with sampling off and the hot block forced to each page offset, and
# with sampling on, interleaved in one process (docs/profiling.md, costs).
# Default offsets: 0x1f0 (the heap's prof_left), 0x010 (the accumulator's
# line), 0x100, 0x140 (bin_room), 0x800.  Prints times: not a ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$(realpath "${1:-build/liblithe.so}")
shift || true
[ $# -gt 0 ] || set -- 40000 120 1f0 010 100 140 800
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -fno-builtin -I"$here/../../src" -I"$here/../../include" -o "$out/layout_ab" "$here/layout_ab.c"
off=$(nm "$lib" | awk '$3 == "_lithe_prof_mode" { print $1 }')
[ -n "$off" ] || { echo "layout-ab.sh: no _lithe_prof_mode symbol (src/names.h) in $lib (stripped?)"; exit 1; }
PROF_MODE_OFF=$off LITHE_PROF=1 LITHE_PROF_PREFIX="$out/p" LD_PRELOAD="$lib" "$out/layout_ab" "$@"
