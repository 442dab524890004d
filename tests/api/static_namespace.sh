#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# static_namespace: lithe stays out of a program's way at link time.
#   - every defined global of liblithe.a is a public name (a standard
#     allocator entry point, a C++ operator new/delete, or lithe_* declared
#     in include/lithe.h) or an internal one linked as _lithe_<name>
#     (src/names.h) or named lithe_* already (lithe's own prefix);
#   - liblithe.so exports the public names and nothing else.
# usage: static_namespace.sh NM LIBLITHE.a LIBLITHE.so
set -euo pipefail
nm=$1 a=$2 so=$3
src=$(cd "$(dirname "$0")/../.." && pwd) # the source root (this is tests/api)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
std='^(malloc|free|calloc|realloc|reallocarray|aligned_alloc|posix_memalign|memalign|valloc|pvalloc|cfree|malloc_usable_size|malloc_size|malloc_trim|malloc_stats|malloc_info|mallinfo|mallinfo2|mallopt|free_sized|free_aligned_sized|__libc_(malloc|free|calloc|realloc|memalign|valloc|pvalloc)|_Zn[wa].*|_Zd[la].*|pthread_create)$' # pthread_create: where the purge thread starts (src/override.c)
grep -o '\blithe_[a-z0-9_]*[[:space:]]*(' "$src/include/lithe.h" | sed 's/[[:space:]]*(//' | sort -u >"$tmp/api"
[ -s "$tmp/api" ] || { echo "FAIL: no lithe_* functions found in include/lithe.h"; exit 1; }

"$nm" -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/a"
grep -Ev "$std" "$tmp/a" | grep -v '^_\?lithe_' >"$tmp/bad" || true
if [ -s "$tmp/bad" ]; then
  echo "FAIL: $(wc -l <"$tmp/bad") global(s) of $a are neither public nor prefixed;"
  echo "      a static link with a program defining the same name would clash."
  echo "      Add each to src/names.h (its file's group) or make it static:"
  sed 's/^/        /' "$tmp/bad"
  exit 1
fi

"$nm" -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/so"
grep -Ev "$std" "$tmp/so" | grep -vxF -f "$tmp/api" >"$tmp/extra" || true
if [ -s "$tmp/extra" ]; then
  echo "FAIL: $so exports $(wc -l <"$tmp/extra") name(s) that are not lithe's API (include/lithe.h) nor an allocator entry point:"
  sed 's/^/        /' "$tmp/extra"
  exit 1
fi
echo "static_namespace: $(wc -l <"$tmp/a") globals in $(basename "$a"): $(grep -c '^_lithe_' "$tmp/a") linked as _lithe_*, $(grep -c '^lithe_' "$tmp/a") lithe_*, the rest standard; $(wc -l <"$tmp/so") exported by $(basename "$so")"
