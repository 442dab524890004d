#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_cmake_package: examples/cmake configured against the scratch
# install with find_package(lithe CONFIG), built (lithe::lithe and
# lithe::lithe_static), both programs run and prove lithe served them.
# usage: cmake_package.sh PREFIX
source "$(dirname "$0")/common.sh"
prefix=$1
need cc build-essential
cmake -S "$SRC/examples/cmake" -B "$TMP/b" -DCMAKE_PREFIX_PATH="$prefix" >"$TMP/log" 2>&1 ||
  { cat "$TMP/log"; fail "examples/cmake does not configure with find_package(lithe)"; }
grep -m1 'lithe_DIR' "$TMP/b/CMakeCache.txt"
grep -q "lithe_DIR:PATH=$prefix/lib/cmake/lithe" "$TMP/b/CMakeCache.txt" || fail "found lithe elsewhere than $prefix"
cmake --build "$TMP/b" >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "examples/cmake does not build"; }
for p in hello hello_static; do
  out=$("$TMP/b/$p") || fail "$p exited $?: $out"
  echo "$p: $out"
done
ldd "$TMP/b/hello" >"$TMP/ldd" 2>&1 || true
grep -q "$prefix/lib/liblithe.so.$SOVERSION" "$TMP/ldd" || fail "hello does not load $prefix/lib/liblithe.so.$SOVERSION: $(cat "$TMP/ldd")"
ldd "$TMP/b/hello_static" >"$TMP/ldd" 2>&1 || true
if grep -q liblithe "$TMP/ldd"; then fail "hello_static loads liblithe.so: $(cat "$TMP/ldd")"; fi
echo "install_cmake_package: OK"
