#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make uninstall: remove every file the last make install wrote (its
# manifest, DESTDIR included), then the folders that are lithe's own
# (lib/cmake/lithe, lib/lithe/bench, share/lithe/traces ...) once empty.
# Shared folders (bin, lib, share/man/man3) are left alone.
set -euo pipefail
manifest=$1
[ -f "$manifest" ] || { echo "nothing to uninstall: no $manifest (make install writes it)"; exit 1; }
n=0
while IFS= read -r f || [ -n "$f" ]; do
  [ -n "$f" ] || continue
  if [ -e "$f" ] || [ -L "$f" ]; then rm -f "$f"; n=$((n + 1)); fi
done <"$manifest"
# lithe's folders, deepest first: a path component named lithe and below
sed -n 's|/[^/]*$||p' "$manifest" | sort -u | while IFS= read -r d; do
  while [[ "$d" == */lithe/* || "$d" == */lithe ]]; do
    echo "$d"
    d=${d%/*}
  done
done | sort -ru | while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done
echo "removed $n files listed in $manifest"
rm -f "$manifest"
