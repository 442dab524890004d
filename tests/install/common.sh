# SPDX-License-Identifier: MIT
# Shared by the install_* tests: PREFIX is the scratch install of this build
# (made by install_tree, the fixture the others require); skip / fail helpers.
# (pipefail: no `cmd | grep -q` here: grep -q exits at the first match and
# cmd's SIGPIPE would fail the pipeline; grep a file instead)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
need() { # program package
  command -v "$1" >/dev/null 2>&1 || skip "needs $1 (apt-get install $2)"
}
VERSION=$(sed -n 's/^#define LITHE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$SRC/include/lithe.h" | paste -sd.)
SOVERSION=${VERSION%%.*}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lithe-install-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
