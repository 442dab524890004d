#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# program_git: git builds a repository of 1000 commits (fast-import) and runs
# log, gc, fsck, clone and blame on it under lithe; the results are checked.
source "$(dirname "$0")/common.sh" || { echo "FAIL: cannot load common.sh"; exit 1; }
need git git
echo "$(git --version)"

export HOME="$TMP/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@localhost
export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@localhost
export LC_ALL=C
mkdir -p "$HOME"
N=1000

# the fast-import stream: commit i sets f.txt to lines 1..i and, every 10th
# commit, adds d/<i>.txt
LC_ALL=C awk -v n=$N 'BEGIN {
  content = ""
  for (i = 1; i <= n; i++) {
    content = content "line " i "\n"
    msg = "commit " i "\n"
    printf "commit refs/heads/main\nmark :%d\n", i
    printf "committer Tester <tester@localhost> %d +0000\n", 1700000000 + i * 60
    printf "data %d\n%s", length(msg), msg
    if (i > 1) printf "from :%d\n", i - 1
    printf "M 644 inline f.txt\ndata %d\n%s", length(content), content
    if (i % 10 == 0) { extra = "extra " i "\n"; printf "M 644 inline d/%d.txt\ndata %d\n%s", i, length(extra), extra }
    printf "\n"
  }
}' >"$TMP/stream"

cd "$TMP"
lithe git init -q -b main repo
cd repo
lithe git fast-import --quiet <"$TMP/stream"
lithe git rev-list --count main >"$TMP/o"; expect "commits" "$(cat "$TMP/o")" "$N"
lithe git log -1 --format=%s main >"$TMP/o"; expect "last subject" "$(cat "$TMP/o")" "commit $N"
lithe git log --format=%s main >"$TMP/o"
expect "log lines" "$(wc -l <"$TMP/o")" "$N"
expect "log tail" "$(tail -n 1 "$TMP/o")" "commit 1"
lithe git checkout -q main
expect "f.txt lines" "$(wc -l <f.txt)" "$N"
expect "d files" "$(ls d | wc -l)" "$((N / 10))"
lithe git log --format=%s main~37 -1 >"$TMP/o"; expect "main~37" "$(cat "$TMP/o")" "commit $((N - 37))"
lithe git log --stat --format=%H main >"$TMP/o"
expect "stat lines for f.txt" "$(grep -c '^ f.txt' "$TMP/o")" "$N"
lithe git blame -s f.txt >"$TMP/o"
expect "blame lines" "$(wc -l <"$TMP/o")" "$N"
lithe git diff --stat main~100 main >"$TMP/o"
grep -Eq "f\.txt +\| 100 \+" "$TMP/o" || { cat "$TMP/o"; fail "diff main~100 main does not add 100 lines to f.txt"; }

lithe git gc --quiet --aggressive
lithe git count-objects -v >"$TMP/o"
expect "loose objects after gc" "$(awk '/^count:/ { print $2 }' "$TMP/o")" "0"
expect "packs after gc" "$(awk '/^packs:/ { print $2 }' "$TMP/o")" "1"
lithe git fsck --strict --no-progress
# every commit + a tree and a blob for f.txt each + the d/ trees and blobs
lithe git rev-list --objects --all >"$TMP/o"
echo "objects: $(wc -l <"$TMP/o")"
[ "$(wc -l <"$TMP/o")" -ge $((3 * N)) ] || fail "too few objects"

cd "$TMP"
lithe git clone -q --no-local repo clone
lithe git -C clone rev-list --count HEAD >"$TMP/o"; expect "clone commits" "$(cat "$TMP/o")" "$N"
cmp -s repo/f.txt clone/f.txt || fail "clone's f.txt differs"
grep -m1 -A3 "lithe stats" "$LAST_ERR" || true
echo "program_git: OK ($RUNS runs under lithe)"
