#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_launcher: `lithe run python3 -c ...` of the scratch install.  Proof
# that lithe served the interpreter: the dynamic linker binds python's
# malloc/free to the installed liblithe.so.0 (LD_DEBUG=bindings), and lithe's
# own statistics at exit (`lithe stats`) count heaps and spans.  Then the
# other builds: `lithe run --secure` maps lib/lithe/liblithe-secure.so,
# `lithe run --valgrind` runs the program under memcheck with
# lib/lithe/liblithe-valgrind.so (skipped, named, without valgrind).
# usage: launcher.sh PREFIX
source "$(dirname "$0")/common.sh"
prefix=$1
PY=/usr/bin/python3                 # Debian's interpreter, not a shim script
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "needs python3 (apt-get install python3)"
lib=$prefix/lib/liblithe.so.$SOVERSION
[ "$("$prefix/bin/lithe" lib)" = "$lib" ] || fail "lithe lib says '$("$prefix/bin/lithe" lib)', want $lib"
code='d = {i: str(i) * (i % 9) for i in range(100000)}; print("python", len(d), sum(map(len, d.values())))'
want="python 100000 1955556"
out=$(LD_DEBUG=bindings LD_DEBUG_OUTPUT=$TMP/ld "$prefix/bin/lithe" run "$PY" -c "$code") || fail "lithe run python3 exited $?"
[ "$out" = "$want" ] || fail "python printed '$out', want '$want'"
cat "$TMP"/ld.* >"$TMP/bindings"
grep -m3 -E "to $lib \[0\]: normal symbol \`(malloc|free)'" "$TMP/bindings" || true
n=$(grep -cE "to $lib \[0\]: normal symbol \`(malloc|free|realloc|calloc)'" "$TMP/bindings" || true)
echo "bindings of malloc/free/realloc/calloc to $lib: $n"
[ "$n" -gt 0 ] || fail "no malloc binding to $lib (LD_DEBUG=bindings)"
grep -qE "binding file $PY \[0\] to $lib \[0\]: normal symbol \`malloc'" "$TMP/bindings" ||
  fail "python3's own malloc does not bind to $lib"
out=$("$prefix/bin/lithe" stats "$PY" -c "$code" 2>"$TMP/err") || fail "lithe stats python3 exited $?"
[ "$out" = "$want" ] || fail "python printed '$out' under lithe stats"
grep -A20 "lithe stats (pid" "$TMP/err" || fail "no lithe statistics on stderr: $(head -5 "$TMP/err")"
spans=$(awk '/small spans/ { print $NF; exit }' "$TMP/err")
[ "${spans:-0}" -gt 0 ] || fail "lithe counted no small spans for python ('${spans:-}')"
# coreutils close stderr in an atexit handler, before lithe's report at exit:
# the report must still come (it goes to a copy of stderr taken at load)
"$prefix/bin/lithe" stats ls / >/dev/null 2>"$TMP/err-ls" || fail "lithe stats ls exited $?"
grep -q "lithe stats (pid" "$TMP/err-ls" || fail "no lithe statistics from ls (it closes stderr at exit)"
echo "ok: statistics of ls, which closes stderr at exit"
# `lithe stats CMD` reports CMD only (LITHE_STATS_PID); --children every
# process it starts, each under its program's name.  bash, not dash: dash
# leaves with _exit, so no destructor of its runs.
if command -v bash >/dev/null; then
  sh_c='ls / >/dev/null; ls / >/dev/null; true'
  "$prefix/bin/lithe" stats bash -c "$sh_c" 2>"$TMP/err-one" || fail "lithe stats bash -c exited $?"
  n=$(grep -c "^lithe stats (pid " "$TMP/err-one" || true)
  [ "$n" = 1 ] && grep -q "^lithe stats (pid [0-9]*): bash$" "$TMP/err-one" ||
    fail "lithe stats bash -c '...': want one report, of bash; got $n: $(grep "^lithe stats" "$TMP/err-one")"
  "$prefix/bin/lithe" stats --children bash -c "$sh_c" 2>"$TMP/err-all" || fail "lithe stats --children exited $?"
  n=$(grep -c "^lithe stats (pid " "$TMP/err-all" || true)
  [ "$n" = 3 ] && [ "$(grep -c "^lithe stats (pid [0-9]*): ls$" "$TMP/err-all")" = 2 ] ||
    fail "lithe stats --children bash -c '...': want 3 reports (bash, ls, ls); got $n: $(grep "^lithe stats" "$TMP/err-all")"
  echo "ok: lithe stats reports the command only; --children its children too, by name"
fi
# the hardened and valgrind builds
sec=$prefix/lib/lithe/liblithe-secure.so
[ "$("$prefix/bin/lithe" lib --secure)" = "$sec" ] || fail "lithe lib --secure says '$("$prefix/bin/lithe" lib --secure)', want $sec"
"$prefix/bin/lithe" run --secure cat /proc/self/maps >"$TMP/maps" || fail "lithe run --secure cat exited $?"
grep -q " $sec\$" "$TMP/maps" || fail "lithe run --secure did not map $sec"
out=$("$prefix/bin/lithe" run --secure "$PY" -c "$code") || fail "lithe run --secure python3 exited $?"
[ "$out" = "$want" ] || fail "python printed '$out' under lithe run --secure"
echo "ok: lithe run --secure (python3 on $sec)"
if "$prefix/bin/lithe" lib --bogus >/dev/null 2>&1; then fail "lithe lib --bogus did not fail"; fi
vg=$prefix/lib/lithe/liblithe-valgrind.so
if [ ! -f "$vg" ]; then
  echo "SKIP: lithe run --valgrind: liblithe-valgrind.so not built (apt-get install valgrind, then rebuild)"
elif ! command -v valgrind >/dev/null; then
  echo "SKIP: lithe run --valgrind: needs valgrind (apt-get install valgrind)"
else
  VALGRIND_OPTS="-q --log-file=$TMP/vg.log" "$prefix/bin/lithe" run --valgrind cat /proc/self/maps >"$TMP/maps" ||
    fail "lithe run --valgrind cat exited $?"
  grep -q " $vg\$" "$TMP/maps" || fail "lithe run --valgrind did not map $vg"
  grep -q "valgrind" "$TMP/maps" || fail "lithe run --valgrind: cat did not run under valgrind"
  echo "ok: lithe run --valgrind (cat under memcheck on $vg)"
fi
echo "install_launcher: OK (python3 served by $lib, $spans small spans live at exit)"
