#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcheck.sh TARGET LIB: run TARGET (memcheck_target) under valgrind's
# memcheck with LD_PRELOAD=LIB (build/liblithe-valgrind.so) and check that
# memcheck reports exactly the target's five known errors, each as it
# would under glibc's malloc and with the function at fault in its stack,
# and that lithe, not valgrind's own malloc, served the blocks.  Block sizes
# in memcheck's reports are lithe's usable sizes (the request rounded up to
# its class, less 32 bytes), so they are matched as ranges.
#
# --soname-synonyms=somalloc=NONE: by default memcheck replaces the malloc
# of every loaded library that defines one (the preloaded lithe's too,
# which then serves nothing); naming no library keeps its replacement to
# the main program, which has no malloc of its own.
set -u
target=$1 lib=$2
command -v valgrind >/dev/null || { echo "SKIP: needs valgrind (apt-get install valgrind)"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_PRELOAD=$lib valgrind --soname-synonyms=somalloc=NONE --leak-check=full \
  --log-file="$log" "$target" >"$log.out" 2>&1
rc=$?
out=$(cat "$log.out"); rm -f "$log.out"
echo "target: rc $rc, output: $out"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# one record per memcheck error: the lines up to the next blank one
records=$(awk '/^==[0-9]+== $/ { if (r != "") print r; r = ""; next }
               { sub(/^==[0-9]+== /, ""); r = r (r == "" ? "" : " | ") $0 }
               END { if (r != "") print r }' "$log")
# a frame in lithe: "(in .../liblithe-valgrind.so)", or with the Debug
# build's line information "(file.c:N)"
LITHE='(in [^)]*liblithe-valgrind\.so[^)]*|[a-z]+\.[ch]:[0-9]+)'
has() { # has WHAT REGEX: one record matches
  if grep -Eq -- "$2" <<<"$records"; then echo "ok: $1"
  else bad "$1: no record matching /$2/"; fi
}
# valgrind's own malloc says 100; lithe says its class size less the 16
# bytes its valgrind build keeps free at the end of each block (128 today)
usable=$(sed -n 's/^malloc_usable_size(100) = \([0-9]*\)$/\1/p' <<<"$out")
if [ -n "$usable" ] && [ "$usable" -gt 100 ]; then echo "ok: lithe served them: malloc_usable_size(100) = $usable"
else bad "malloc_usable_size(100) = '$usable': not lithe's"; fi
has "use after free" \
  "^Invalid read of size 4 \| +at 0x[0-9A-F]+: uaf_here .*Address 0x[0-9a-f]+ is 12 bytes inside a block of size 1[6-9][0-9] free.d \| +at 0x[0-9A-F]+: lithe_vg_freeing \($LITHE\) \| .*by 0x[0-9A-F]+: free \($LITHE\) .*by 0x[0-9A-F]+: uaf_here .*Block was alloc.d at .*malloc \($LITHE\)"
has "double free" \
  '^Invalid free\(\) / delete / delete\[\] / realloc\(\) .*by 0x[0-9A-F]+: double_free_here .*Address 0x[0-9a-f]+ is 0 bytes inside a block of size 48 free.d'
has "uninitialised read" \
  '^Conditional jump or move depends on uninitialised value\(s\) \| +at 0x[0-9A-F]+: uninit_here'
has "small leak" \
  "^1[0-9][0-9] bytes in 1 blocks are definitely lost in loss record [0-9]+ of [0-9]+ \| .*malloc \($LITHE\).*by 0x[0-9A-F]+: leak_small"
has "large leak" \
  "^20[0-9],[0-9]{3} bytes in 1 blocks are definitely lost in loss record [0-9]+ of [0-9]+ \| .*malloc \($LITHE\).*by 0x[0-9A-F]+: leak_large"
summary=$(grep -E '^==[0-9]+== ERROR SUMMARY' "$log")
# 5 errors: the 3 above plus the 2 leaks; anything more came from lithe or
# from the clean work (a false report)
grep -q 'ERROR SUMMARY: 5 errors from 5 contexts' <<<"$summary" || bad "expected exactly 5 errors: $summary"
grep -Eq 'definitely lost: 20[0-9],[0-9]{3} bytes in 2 blocks' "$log" || bad "leak summary: $(grep -E 'definitely lost:' "$log")"
grep -Eq 'possibly lost: 0 bytes in 0 blocks' "$log" || bad "possibly lost: $(grep -E 'possibly lost:' "$log")"
if [ $fail = 1 ]; then echo "--- valgrind log:"; cat "$log"; exit 1; fi
echo "$summary"
echo "memcheck: OK"
