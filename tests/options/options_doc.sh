#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# options_doc: docs/options.md's table, src/options.c and LITHE_VERBOSE=1
# cannot drift apart:
#   - the table's option names are exactly the LITHE_* names src/ reads
#     (options.c's own, and those prof.c and limit.c read with secure_getenv);
#   - with nothing set, LITHE_VERBOSE=1 prints every one of them once, with
#     "(default)" and the value the table's default column starts with;
#   - a valid value set in the environment is printed back "(environment)";
#     a refused one as the default, saying so;
#   - include/lithe.h and man/lithe.3 name every option.
# usage: options_doc.sh LIBLITHE
set -euo pipefail
lib=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

grep -oh '\(secure_getenv\|option_[a-z]*\|[^_]env\)("LITHE_[A-Z_]*"' "$src"/src/*.c | sed 's/.*("//; s/"//' | sort -u >"$tmp/code"
sed -n 's/^| `\(LITHE_[A-Z_]*\)` | `\([^`]*\)`.*/\1 \2/p' "$src/docs/options.md" | sort >"$tmp/doc"
cut -d' ' -f1 "$tmp/doc" >"$tmp/docnames"
echo "src/ reads: $(tr '\n' ' ' <"$tmp/code")"
[ "$(wc -l <"$tmp/code")" -ge 5 ] || fail "found too few LITHE_ options in src/*.c"
diff -u "$tmp/code" "$tmp/docnames" || fail "docs/options.md's table (+) and src/*.c (-) list different options"

# defaults: what the library prints with no LITHE_* set (LITHE_VERBOSE aside)
run() { env -i PATH="$PATH" "$@" LD_PRELOAD="$lib" /bin/true 2>&1 >/dev/null; }
run LITHE_VERBOSE=1 >"$tmp/out"
cat "$tmp/out"
while read -r name def; do
  line=$(grep "^lithe: option $name=" "$tmp/out" || true)
  [ "$(grep -c "^lithe: option $name=" "$tmp/out")" = 1 ] || fail "LITHE_VERBOSE=1 prints $name $(grep -c "^lithe: option $name=" "$tmp/out") times"
  if [ "$name" = LITHE_VERBOSE ]; then
    [ "$line" = "lithe: option LITHE_VERBOSE=1 (environment)" ] || fail "got '$line'"
    [ "$def" = 0 ] || fail "docs: LITHE_VERBOSE default '$def'"
    continue
  fi
  [ "$line" = "lithe: option $name=$def (default)" ] ||
    fail "docs/options.md says $name defaults to '$def'; the library prints '$line'"
done <"$tmp/doc"
[ "$(grep -c '^lithe: option ' "$tmp/out")" = "$(wc -l <"$tmp/code")" ] || fail "LITHE_VERBOSE=1 prints options src/ does not read"

# values from the environment, printed back as such
run LITHE_VERBOSE=1 LITHE_ARENA_SIZE=4m LITHE_PURGE_DELAY_MS=-1 LITHE_ON_ERROR=ignore LITHE_SHOW_STATS=json \
    LITHE_PROF_SAMPLE=1m >"$tmp/env"
for want in "LITHE_ARENA_SIZE=4194304 (environment)" "LITHE_PURGE_DELAY_MS=-1 (environment)" \
            "LITHE_ON_ERROR=ignore (environment)" "LITHE_SHOW_STATS=json (environment)" \
            "LITHE_PROF_SAMPLE=1m (environment)"; do
  grep -qxF "lithe: option $want" "$tmp/env" || fail "no 'lithe: option $want' in: $(cat "$tmp/env")"
done
run LITHE_VERBOSE=1 LITHE_ARENA_SIZE=5m >"$tmp/bad"
grep -qxF "lithe: option LITHE_ARENA_SIZE=67108864 (default; the environment's value was refused)" "$tmp/bad" ||
  fail "a refused LITHE_ARENA_SIZE: $(cat "$tmp/bad")"
echo "ok: values from the environment and a refused one"

for f in man/lithe.3; do
  while read -r name; do
    grep -q "$name" "$src/$f" || fail "$f does not mention $name"
  done <"$tmp/code"
done
echo "options_doc: OK ($(wc -l <"$tmp/code") options)"
