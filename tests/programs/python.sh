#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# program_python: a Python workload (objects, dicts, json, regex) under lithe.
source "$(dirname "$0")/common.sh" || { echo "FAIL: cannot load common.sh"; exit 1; }

# Debian's interpreter, not a version manager's shim
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] && [ -x "$PY" ] || skip "needs python3 (apt-get install python3)"
echo "python: $PY ($("$PY" --version 2>&1))"

lithe "$PY" "$HERE/workload.py" >"$TMP/out"
cat "$TMP/out"
cat >"$TMP/want" <<'WANT'
objects 200000 19999900000 100000 10000000000
json 50000 1249975000 600000 16667
regex 40000 2000040000 1168889
misc 588890 3093 w99999 w00000 20000
python workload OK 3
WANT
diff -u "$TMP/want" "$TMP/out" || fail "python output differs from the expected lines"

# again with small arenas and pages purged at once
LITHE_PURGE_DELAY_MS=0 LITHE_ARENA_SIZE=4m lithe "$PY" "$HERE/workload.py" >"$TMP/out3"
diff -u "$TMP/want" "$TMP/out3" || fail "python output differs with LITHE_PURGE_DELAY_MS=0 LITHE_ARENA_SIZE=4m"
echo "ok: same output with LITHE_PURGE_DELAY_MS=0 LITHE_ARENA_SIZE=4m"
if [ -n "$LIB" ]; then
  arenas=$(awk '$1 == "arenas" { print $2; exit }' "$LAST_ERR")
  echo "arenas of 4 MiB: ${arenas:-?}"
  [ "${arenas:-0}" -ge 2 ] || fail "LITHE_ARENA_SIZE=4m: expected several arenas, stats say '${arenas:-}'"
fi

# many short interpreters too: start-up and exit paths, imports, threads
lithe "$PY" -c '
import threading, json, hashlib
res = []
def work(k):
    d = {str(i): [i] * (i % 7) for i in range(20000)}
    res.append(hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12])
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
assert len(set(res)) == 1, res
print("threads", len(res))
' >"$TMP/out2"
expect "python threads" "$(cat "$TMP/out2")" "threads 4"
grep -m1 -A3 "lithe stats" "$LAST_ERR" || true
echo "program_python: OK ($RUNS runs under lithe)"
