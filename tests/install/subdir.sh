#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_subdirectory: lithe embedded in another CMake project with
# add_subdirectory (the way a vendored copy is used).  A tiny consumer links
# examples/hello.c against lithe::lithe and lithe::lithe_static; both run and
# prove lithe served them.  The consumer's build must hold the library and
# nothing else of lithe's: no test program (api_basic), no benchmark
# (lithe-bench, bench-*), no tracer, no hardened or valgrind variant
# (LITHE_BUILD_TESTS / LITHE_BUILD_BENCH are OFF when lithe is not the
# top-level project), and no CTest tests of lithe's.
# usage: subdir.sh
source "$(dirname "$0")/common.sh"
need cc build-essential
mkdir "$TMP/consumer"
cat >"$TMP/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(consumer C)
enable_testing()
add_subdirectory("$SRC" lithe)
add_executable(hello "$SRC/examples/hello.c")
target_link_libraries(hello PRIVATE lithe::lithe)
add_executable(hello_static "$SRC/examples/hello.c")
target_link_libraries(hello_static PRIVATE lithe::lithe_static)
CMAKE
b=$TMP/b
cmake -S "$TMP/consumer" -B "$b" -DCMAKE_BUILD_TYPE=Release >"$TMP/log" 2>&1 ||
  { cat "$TMP/log"; fail "a project with add_subdirectory(lithe) does not configure"; }
grep -E '^LITHE_BUILD_(TESTS|BENCH):BOOL=' "$b/CMakeCache.txt"
grep -qx 'LITHE_BUILD_TESTS:BOOL=OFF' "$b/CMakeCache.txt" || fail "LITHE_BUILD_TESTS is not OFF when embedded"
grep -qx 'LITHE_BUILD_BENCH:BOOL=OFF' "$b/CMakeCache.txt" || fail "LITHE_BUILD_BENCH is not OFF when embedded"
cmake --build "$b" -j 2 >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "the consumer does not build"; }
for p in hello hello_static; do
  out=$("$b/$p") || fail "$p exited $?: $out"
  echo "$p: $out"
done
ldd "$b/hello" >"$TMP/ldd" 2>&1 || true
grep -q "$b/lithe/liblithe.so.$SOVERSION" "$TMP/ldd" || fail "hello does not load $b/lithe/liblithe.so.$SOVERSION: $(cat "$TMP/ldd")"
# every program, library and archive the build made (compiler checks aside)
(cd "$b" && find . -path '*/CMakeFiles' -prune -o -type f \( -perm -u+x -o -name '*.a' -o -name '*.so*' \) -print | sed 's|^\./||' | sort) >"$TMP/built"
echo "built:"; sed 's/^/  /' "$TMP/built"
cat >"$TMP/want" <<LIST
hello
hello_static
lithe/liblithe.a
lithe/liblithe.so.$VERSION
LIST
diff -u "$TMP/want" "$TMP/built" || fail "the consumer's build holds more (+) or less (-) than the library"
for p in api_basic lithe-bench lithe-replay liblithe-trace.so liblithe-secure.so; do
  [ ! -e "$b/lithe/$p" ] || fail "$p was built into the consumer's all"
done
(cd "$b" && ctest -N) >"$TMP/ctest" 2>&1 || true
grep -q 'Total Tests: 0' "$TMP/ctest" || fail "lithe's tests are registered in the consumer: $(tail -3 "$TMP/ctest")"
echo "install_subdirectory: OK (lithe::lithe and lithe::lithe_static; only the library built)"
