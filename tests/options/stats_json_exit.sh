#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stats_json_exit: LITHE_SHOW_STATS=json prints, at exit, one JSON object
# that a JSON parser (python3's json) reads, whose per-class figures add up
# (bytes_live = blocks_live * size, their sum = pages.small_live_bytes; the
# spans of the classes = totals.spans_small), from a python3 run.  Exact
# block counts are api_stats_json's (python frees its objects at exit).
# usage: stats_json_exit.sh LIBLITHE
set -euo pipefail
lib=$1
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: needs python3 (apt-get install python3)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
LITHE_SHOW_STATS=json LD_PRELOAD=$lib "$PY" -c 'import sys; keep = [str(i) * 3 for i in range(50000)]; sys.stdout.write("%d\n" % len(keep))' \
  >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = 50000 ] || { cat "$tmp/err"; echo "FAIL: python3 printed '$(cat "$tmp/out")'"; exit 1; }
head -c 600 "$tmp/err"; echo " ..."
"$PY" - "$tmp/err" <<'CHECK'
import json, sys
d = json.load(open(sys.argv[1]))
t, p, cls = d["totals"], d["pages"], d["classes"]
assert d["version"].count(".") == 2, d["version"]
for k in ("reserved", "committed", "purged", "metadata", "arenas", "xlarge_live", "xlarge_bytes",
          "large_live", "spans_small", "spans_abandoned", "heaps_live", "heaps_created", "os_calls", "purges"):
    assert isinstance(t[k], int), k
assert t["committed"] <= t["reserved"] and t["heaps_created"] >= 1, t
assert all(c["bytes_live"] == c["blocks_live"] * c["size"] for c in cls), "bytes_live != blocks_live * size"
assert sum(c["bytes_live"] for c in cls) == p["small_live_bytes"], "classes do not add up to small_live_bytes"
assert all(c["span_bytes"] >= (c["blocks_live"] + c["blocks_free"]) * c["size"] for c in cls), "blocks exceed spans"
assert [c["class"] for c in cls] == sorted(c["class"] for c in cls), "classes out of order"
assert sum(c["spans"] for c in cls) == t["spans_small"], ("spans", sum(c["spans"] for c in cls), t["spans_small"])
print("stats_json_exit: OK: %d classes, %d small live bytes, %d large bytes, committed %d"
      % (len(cls), p["small_live_bytes"], p["large_bytes"], t["committed"]))
CHECK
