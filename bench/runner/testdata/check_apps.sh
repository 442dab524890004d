#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_apps_quick: the real-application rows (app_*) of lithe-bench in
# --quick mode under glibc and lithe: every row that can run must give its
# time, peak and end figures under both (no FAIL; malloc resolved to the
# library asked for, in the application's own processes), and the report
# must have its "Real applications" table with its own means. A row whose
# program is missing skips itself, naming the Debian package; the test
# prints that and passes, and is reported skipped (exit 77) only when no
# application at all could run.
#   check_apps.sh LITHE-BENCH LIBLITHE OUTDIR
set -u
RUNNER=$1 LIB=$2 OUT=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$OUT"
"$RUNNER" --quick --runs 1 --check --only 'app_*' --out "$OUT" glibc lithe="$LIB" \
  >"$OUT.log" 2>&1 || { cat "$OUT.log"; fail "lithe-bench --check failed"; }
tsv=$OUT/results.tsv md=$OUT/report.md
[ -f "$tsv" ] && [ -f "$md" ] || fail "no results.tsv / report.md in $OUT"
ran=0 skipped=0
for app in gxx python sqlite redis z3; do
  row=app_$app
  if grep -q "^skip	$row	" "$tsv"; then
    why=$(grep -m1 "^skip	$row	" "$tsv" | cut -f5)
    case $why in *"apt-get install"*) ;; *) fail "$row skipped without naming a package: $why" ;; esac
    echo "SKIP: $row: $why"
    skipped=$((skipped + 1))
    continue
  fi
  for alloc in glibc lithe; do
    for unit in ns/op peak-kB end-kB; do
      grep -q "^sample	$row	$alloc	0	$row	$unit	" "$tsv" || fail "$row under $alloc: no $unit figure"
    done
  done
  ran=$((ran + 1))
done
grep -q "^## Real applications" "$md" || fail "report.md has no Real applications section"
# its own means, apart from the MallocBench table's
sec=$(sed -n '/^## Real applications/,/^## MallocBench comparison/p' "$md")
[ "$ran" -eq 0 ] || grep -q "<geometric mean>" <<<"$sec" || fail "the Real applications table has no geometric mean"
grep -q "app_" <<<"$(sed -n '/^## MallocBench comparison/,/^## benchstat/p' "$md")" &&
  fail "an app_ row is in the MallocBench table"
# lithe's cells resolved malloc to liblithe (the runner FAILs them otherwise)
grep -q "| lithe | .*liblithe" "$md" || fail "the Allocators table does not show lithe's library"
echo "bench_apps_quick: $ran application(s) ran under glibc and lithe, $skipped skipped"
[ "$ran" -gt 0 ] || exit 77
exit 0
