# SPDX-License-Identifier: MIT
# Sourced by the program_* tests: bash programs/X.sh /path/to/liblithe.so
# Runs real programs with LD_PRELOAD=liblithe.so and LITHE_SHOW_STATS=1, and
# checks that each run really used lithe (its "lithe stats" on stderr at exit).
# Without an argument the programs run on the system allocator (for working
# on the tests themselves) and the lithe checks are skipped.
set -eu -o pipefail

LIB=${1:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lithe-prog.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
RUNS=0

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
# need PROGRAM PACKAGE: skip the test when the machine lacks PROGRAM
need() { command -v "$1" >/dev/null 2>&1 || skip "needs $1 (apt-get install $2)"; }

if [ -n "$LIB" ]; then
  [ -f "$LIB" ] || fail "no library at $LIB"
  LIB=$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")
  echo "allocator: LD_PRELOAD=$LIB"
else
  echo "allocator: system malloc (no library given: lithe checks skipped)"
fi

# lithe CMD ARGS...: runs CMD under lithe; its stdout goes to ours, its
# stderr to $TMP/err.N (shown when the command fails). Fails the test when
# CMD fails or when its stderr lacks lithe's exit statistics.
lithe() {
  RUNS=$((RUNS + 1))
  local err="$TMP/err.$RUNS" rc=0
  if [ -n "$LIB" ]; then
    env LD_PRELOAD="$LIB" LITHE_SHOW_STATS=1 "$@" 2>"$err" || rc=$?
  else
    "$@" 2>"$err" || rc=$?
  fi
  if [ $rc -ne 0 ]; then
    echo "--- stderr of: $*" >&2
    tail -n 60 "$err" >&2
    fail "'$*' exited $rc under lithe"
  fi
  if [ -n "$LIB" ] && ! grep -q "lithe stats" "$err"; then
    echo "--- stderr of: $*" >&2
    tail -n 60 "$err" >&2
    fail "'$*': no \"lithe stats\" on stderr: lithe was not the allocator"
  fi
  LAST_ERR=$err
}

# expect WHAT GOT WANT
expect() {
  if [ "$2" != "$3" ]; then
    fail "$1: got '$2', expected '$3'"
  fi
  echo "ok: $1 = $2"
}
