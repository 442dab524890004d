#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every shipped trace (bench/traces/*.ltrace.xz) decodes, validates and
# replays (--quick: first 200,000 records, one run) with a PROTOCOL line.
# usage: shipped.sh lithe-replay bench/traces
set -u
REPLAY=$1 DIR=$2
command -v xz >/dev/null || { echo "SKIP: needs xz (apt-get install xz-utils)"; exit 77; }
shopt -s nullglob
files=("$DIR"/*.ltrace.xz)
[ ${#files[@]} -gt 0 ] || { echo "SKIP: no traces in $DIR"; exit 77; }
fail=0
for f in "${files[@]}"; do
  name=$(basename "$f" .ltrace.xz)
  out=$(timeout 250 "$REPLAY" "$f" --quick --verify --format=gobench 2>&1) || { echo "FAIL: $f"; echo "$out"; fail=1; continue; }
  echo "$out" | grep -Eq "^Benchmarkreplay_$name 1 [0-9]+ ns/op [0-9]+ peak-kB [0-9]+ end-kB [0-9]+ faults [0-9]+ unassisted-end-kB$" ||
    { echo "FAIL: $f: no Benchmark line"; echo "$out"; fail=1; continue; }
  echo "$out" | grep -E '^(Benchmark|# verify: records)'
done
[ $fail -eq 0 ] && echo PASS
exit $fail
