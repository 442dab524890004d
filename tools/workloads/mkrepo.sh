#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Creates a git repository with N commits (default 3000) in DIR, fast, with
# git fast-import: 150 text files, every commit edits 1-3 of them.
# Deterministic. usage: mkrepo.sh DIR [N]
set -euo pipefail
dir=$1 n=${2:-3000}
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
git init -q .
git config user.name bench; git config user.email bench@localhost
awk -v n="$n" 'BEGIN {
  srand(42); nf = 150;
  for (f = 0; f < nf; f++) { nl[f] = 40; for (l = 0; l < 40; l++) line[f, l] = sprintf("file %d line %d value %d", f, l, int(rand() * 100000)); }
  t = 1500000000;
  for (c = 1; c <= n; c++) {
    printf "commit refs/heads/main\nmark :%d\ncommitter bench <bench@localhost> %d +0000\n", c, t + c * 60;
    msg = sprintf("commit %d: update files", c);
    printf "data %d\n%s\n", length(msg), msg;
    if (c > 1) printf "from :%d\n", c - 1;
    k = 1 + int(rand() * 3);
    for (j = 0; j < k; j++) {
      f = int(rand() * nf);
      e = int(rand() * 4) + 1;
      for (x = 0; x < e; x++) {
        l = int(rand() * nl[f]);
        if (rand() < 0.3 && nl[f] < 400) { line[f, nl[f]] = sprintf("added %d in %d", x, c); nl[f]++; }
        else line[f, l] = sprintf("file %d line %d changed in commit %d %d", f, l, c, int(rand() * 1e6));
      }
      body = "";
      for (l = 0; l < nl[f]; l++) body = body line[f, l] "\n";
      printf "M 100644 inline dir%d/file%d.txt\ndata %d\n%s\n", f % 10, f, length(body), body;
    }
  }
}' | git fast-import --quiet
git checkout -q main
