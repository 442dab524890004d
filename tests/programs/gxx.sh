#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# program_gxx: g++ (driver, cc1plus, as, ld) compiles an STL program under
# lithe, and the program then runs under lithe; its output is checked.
source "$(dirname "$0")/common.sh" || { echo "FAIL: cannot load common.sh"; exit 1; }
need g++ g++

lithe g++ -O1 -std=c++17 -pthread -o "$TMP/stl" "$HERE/stl.cpp"
[ -x "$TMP/stl" ] || fail "g++ produced no program"
n=$(grep -c "lithe stats" "$LAST_ERR" || true)
echo "g++: $n processes of the compiler printed lithe's statistics"
[ -z "$LIB" ] || [ "$n" -ge 2 ] || fail "expected the driver and cc1plus under lithe, got $n"

lithe "$TMP/stl" >"$TMP/out"
cat "$TMP/out"
cat >"$TMP/want" <<'WANT'
vector 1000000 48 16777210 9179199051756760535
map 100000 450000 key0 key99999
unordered_map 1009 200000 string 288890 25000
list 2450000 deque 4999950000 set 5000 shared 1000
threads 955560
stl OK
WANT
diff -u "$TMP/want" "$TMP/out" || fail "the STL program's output differs from the expected lines"
grep -m1 -A3 "lithe stats" "$LAST_ERR" || true
echo "program_gxx: OK ($RUNS runs under lithe)"
