#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# program_sqlite: sqlite3 builds a 200,000-row table (recursive CTE), indexes,
# updates, deletes, vacuums and queries it under lithe; the figures are checked
# against closed formulas (see sqlite.sql).
source "$(dirname "$0")/common.sh" || { echo "FAIL: cannot load common.sh"; exit 1; }
need sqlite3 sqlite3
echo "sqlite3 $(sqlite3 --version | cut -d' ' -f1)"

lithe sqlite3 -bail "$TMP/t.db" <"$HERE/sqlite.sql" >"$TMP/out"
cat "$TMP/out"
line() { grep "^$1|" "$TMP/out" || echo "(no $1 line)"; }
# ids 1..200000, k = 7x mod 1000 (7 is invertible mod 1000: each k 200 times)
expect "rows"     "$(line rows)"     "rows|200000|20000100000|99900000|row-000001|row-200000"
# 7x = 3 (mod 1000) <=> x = 429 (mod 1000): 200 ids, sum 200*429 + 1000*(0+..+199)
expect "k=3"      "$(line k=3)"      "k=3|200|19985800"
expect "distinct" "$(line distinct)" "distinct|1000"
expect "range"    "$(line range)"    "range|20000|1998970000"
# ids not divisible by 3: 133334, sum 20000100000 - 3*(1+..+66666)
expect "after"    "$(line after)"    "after|133334|1360008|13333466667"
expect "groups"   "$(line groups)"   "groups|10|133334|13333466667"
grep -q "INDEX t_k" "$TMP/out" || fail "the k = 3 query does not use the index t_k"
grep -qx "ok" "$TMP/out" || fail "integrity_check did not say ok"

# a second process opens the file and joins it with itself
lithe sqlite3 -bail "$TMP/t.db" \
  "SELECT count(*), sum(a.id) FROM t a JOIN t b ON b.id = a.id + 1 WHERE a.k < 10;" >"$TMP/out2"
# pairs (x, x+1) both kept (x mod 3 = 1) with 7x mod 1000 < 10
want=$(awk 'BEGIN { n = 0; s = 0; for (x = 1; x < 200000; x++) if (x % 3 == 1 && (x * 7) % 1000 < 10) { n++; s += x }; printf "%d|%d", n, s }')
expect "join" "$(cat "$TMP/out2")" "$want"
grep -m1 -A3 "lithe stats" "$LAST_ERR" || true
echo "program_sqlite: OK ($RUNS runs under lithe)"
