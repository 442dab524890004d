#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_tree: cmake --install of this build into a scratch prefix (the
# fixture of the other install_* tests), then the tree's shape: the real
# library file liblithe.so.X.Y.Z, the soname link, the dev link, the soname
# recorded in the library, the header, lithe.pc, the CMake package, the man
# pages, the launcher and the hardened (and, where built, valgrind) library
# in lib/lithe/ for lithe run --secure / --valgrind.
# usage: tree.sh BUILD_DIR PREFIX
source "$(dirname "$0")/common.sh"
build=$1 prefix=$2
need readelf binutils
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "cmake --install failed"; }
(cd "$prefix" && find . \( -type f -o -type l \) | sort) | tee "$TMP/files"
for f in lib/liblithe.so.$VERSION lib/liblithe.a include/lithe.h lib/pkgconfig/lithe.pc \
         lib/cmake/lithe/litheConfig.cmake lib/cmake/lithe/litheConfigVersion.cmake \
         lib/cmake/lithe/litheTargets.cmake share/man/man3/lithe.3 share/man/man1/lithe.1 \
         share/man/man1/lithe-bench.1 bin/lithe bin/lithe-bench lib/lithe/bench/lithe-bench lib/lithe/liblithe-secure.so; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
if [ -f "$build/liblithe-valgrind.so" ] && [ ! -f "$prefix/lib/lithe/liblithe-valgrind.so" ]; then
  fail "lib/lithe/liblithe-valgrind.so not installed (build/liblithe-valgrind.so was built)"
fi
[ "$(readlink "$prefix/lib/liblithe.so.$SOVERSION")" = "liblithe.so.$VERSION" ] ||
  fail "lib/liblithe.so.$SOVERSION -> '$(readlink "$prefix/lib/liblithe.so.$SOVERSION")', want liblithe.so.$VERSION"
[ "$(readlink "$prefix/lib/liblithe.so")" = "liblithe.so.$SOVERSION" ] ||
  fail "lib/liblithe.so -> '$(readlink "$prefix/lib/liblithe.so")', want liblithe.so.$SOVERSION"
soname=$(readelf -d "$prefix/lib/liblithe.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "soname: $soname"
[ "$soname" = "liblithe.so.$SOVERSION" ] || fail "soname '$soname', want liblithe.so.$SOVERSION"
[ -x "$prefix/bin/lithe" ] || fail "bin/lithe is not executable"
v=$("$prefix/bin/lithe" --version)
[ "$v" = "lithe $VERSION" ] || fail "lithe --version says '$v', want 'lithe $VERSION'"
echo "install_tree: OK ($(wc -l <"$TMP/files") files under $prefix)"
