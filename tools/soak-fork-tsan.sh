#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak the TSan build of tests/stress/fork_threads.c, to catch its rare hang (a
# forked child that never finishes: about 1 in 2,000 forks when it came,
# none in the 2,340 forks of 2026-12-07; docs/design.md, the flush
# section's "Open" paragraph).  Runs COPIES processes of FORKS forks at a
# time, round after round, until MINUTES have passed, and keeps the whole
# output of every run that failed (the test prints a hung child's /proc
# state and, with gdb installed, every thread's stack before it kills it).
#   tools/soak-fork-tsan.sh [MINUTES] [COPIES] [FORKS]
# Defaults: 30 minutes, 2 copies, 30 forks each (about 60 forks a minute
# on the 2-core machine).  Needs the Debug build: make debug.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${DEBUG_BUILD:-$here/../build-debug}
prog=$build/tests/sanitize/tsan/test-fork_threads
minutes=${1:-30} copies=${2:-2} forks=${3:-30}
[ -x "$prog" ] || { echo "build first (make debug): $prog" >&2; exit 1; }
command -v gdb >/dev/null || echo "note: gdb is not installed, a hang will be reported without stacks" >&2
# the environment ctest gives the test (set in tests/sanitize/tests.cmake),
# read from the build's test list so that the two cannot differ
test_env=$(sed -n 's/^set_tests_properties(\[=\[tsan_fork_threads\]=\] PROPERTIES .*ENVIRONMENT "\([^"]*\)".*/\1/p' \
  "$build/tests/CTestTestfile.cmake")
[ -n "$test_env" ] || { echo "no environment for tsan_fork_threads in $build/tests/CTestTestfile.cmake" >&2; exit 1; }
IFS=';' read -ra vars <<<"$test_env"
for v in "${vars[@]}"; do export "$v"; done
out=$(mktemp -d /tmp/soak-fork-tsan.XXXXXX)
end=$(($(date +%s) + minutes * 60))
rounds=0 failed=0
while [ "$(date +%s)" -lt "$end" ]; do
  for ((j = 0; j < copies; j++)); do
    ("$prog" "$forks" >"$out/run.$j.log" 2>&1; echo "exit $?" >>"$out/run.$j.log") &
  done
  wait
  rounds=$((rounds + 1))
  for ((j = 0; j < copies; j++)); do
    if ! grep -q '^exit 0$' "$out/run.$j.log"; then
      failed=$((failed + 1))
      cp "$out/run.$j.log" "$out/failed.$rounds.$j.log"
      echo "round $rounds, copy $j failed: $out/failed.$rounds.$j.log" >&2
    fi
  done
done
rm -f "$out"/run.*.log
echo "$rounds rounds, $((rounds * copies * forks)) forks, $failed runs failed (logs in $out)"
[ "$failed" -eq 0 ]
