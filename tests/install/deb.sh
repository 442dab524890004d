#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_deb: make deb's script builds liblithe0, liblithe-dev and
# lithe-bench (in a tree of its own, prefix /usr, libdir lib/<triplet>);
# each is unpacked with dpkg -x into a scratch root and its file list,
# control fields, the library's soname and multiarch folder, the licence
# (usr/share/doc/PKG/copyright, Debian's machine-readable format, MIT) and,
# with lintian installed, lintian's verdict (no error) are checked.
# usage: deb.sh BUILD_DIR
source "$(dirname "$0")/common.sh"
build=$1
need dpkg-deb dpkg
need readelf binutils
need dpkg-architecture dpkg-dev
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
L=usr/lib/$ma
# the packaging tree is kept between runs (only relinked the second time)
bash "$SRC/packaging/deb.sh" "$build" "$TMP/out" "$build/tests/install/deb-tree" >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "packaging/deb.sh failed"; }
arch=$(dpkg --print-architecture)
rt=$TMP/out/liblithe${SOVERSION}_$VERSION-1_$arch.deb
dev=$TMP/out/liblithe-dev_$VERSION-1_$arch.deb
bench=$TMP/out/lithe-bench_$VERSION-1_$arch.deb
[ -f "$rt" ] && [ -f "$dev" ] && [ -f "$bench" ] || { ls -l "$TMP/out"; fail "missing $rt, $dev or $bench"; }
check_list() { # deb want-file
  dpkg-deb -c "$1" | awk '{ print $NF == "" ? $6 : $6 }' | sed 's|^\./||; /\/$/d; /^$/d' | sort >"$TMP/got"
  sort "$2" >"$TMP/want.s"
  diff -u "$TMP/want.s" "$TMP/got" || fail "$(basename "$1"): file list differs (- wanted, + packaged)"
}
# liblithe-valgrind.so is built where valgrind/memcheck.h is (package valgrind)
VALGRIND_LIB=
grep -q '^LITHE_VALGRIND:BOOL=ON' "$build/tests/install/deb-tree/CMakeCache.txt" && VALGRIND_LIB=$L/lithe/liblithe-valgrind.so
cat >"$TMP/want-rt" <<LIST
usr/bin/lithe
$L/liblithe.so.$SOVERSION
$L/liblithe.so.$VERSION
$L/lithe/liblithe-secure.so
$VALGRIND_LIB
usr/share/doc/liblithe$SOVERSION/changelog.Debian.gz
usr/share/doc/liblithe$SOVERSION/copyright
usr/share/man/man1/lithe.1.gz
LIST
cat >"$TMP/want-dev" <<LIST
usr/include/lithe.h
$L/cmake/lithe/litheConfig.cmake
$L/cmake/lithe/litheConfigVersion.cmake
$L/cmake/lithe/litheTargets-release.cmake
$L/cmake/lithe/litheTargets.cmake
$L/liblithe.a
$L/liblithe.so
$L/pkgconfig/lithe.pc
usr/share/doc/liblithe-dev/changelog.Debian.gz
usr/share/doc/liblithe-dev/copyright
usr/share/man/man3/lithe.3.gz
LIST
cat >"$TMP/want-bench" <<LIST
usr/bin/lithe-bench
$(for p in bench-commit bench-fastpath bench-mallocbench bench-scaling bench-startup lithe-bench lithe-replay; do echo "$L/lithe/bench/$p"; done)
usr/share/doc/lithe-bench/changelog.Debian.gz
usr/share/doc/lithe-bench/copyright
usr/share/man/man1/lithe-bench.1.gz
$(cd "$SRC/bench/traces" && ls *.ltrace.xz | sed 's|^|usr/share/lithe/traces/|')
LIST
check_list "$rt" "$TMP/want-rt"
check_list "$dev" "$TMP/want-dev"
check_list "$bench" "$TMP/want-bench"
grep -q "^$L/lithe/bench/lithe-bench\$" "$TMP/want-bench" || fail "lithe-bench: no $L/lithe/bench/lithe-bench"
for d in "$rt" "$dev" "$bench"; do
  echo "== $(basename "$d")"; dpkg-deb -f "$d" Package Version Architecture Depends
done
deps=$(dpkg-deb -f "$rt" Depends)
[[ "$deps" == *"libc6 (>= "* ]] || fail "liblithe$SOVERSION Depends '$deps': no libc6 version"
[ "$(dpkg-deb -f "$dev" Depends)" = "liblithe$SOVERSION (= $VERSION-1), libc6-dev | libc-dev" ] ||
  fail "liblithe-dev Depends '$(dpkg-deb -f "$dev" Depends)'"
dpkg-deb --ctrl-tarfile "$rt" | tar -t >"$TMP/ctrl"
grep -qx './shlibs' "$TMP/ctrl" || fail "liblithe$SOVERSION has no shlibs file"
dpkg-deb --ctrl-tarfile "$rt" | tar -x -O ./shlibs | tee "$TMP/shlibs"
grep -qx "liblithe $SOVERSION liblithe$SOVERSION (>= $VERSION)" "$TMP/shlibs" || fail "shlibs: $(cat "$TMP/shlibs")"
mkdir "$TMP/root"
for d in "$rt" "$dev" "$bench"; do dpkg -x "$d" "$TMP/root"; done
# the licence: MIT, in Debian's machine-readable copyright format, in every package
for p in liblithe$SOVERSION liblithe-dev lithe-bench; do
  c=$TMP/root/usr/share/doc/$p/copyright
  grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$c" || fail "$p: copyright is not machine-readable"
  grep -qx 'License: Expat' "$c" && grep -q 'Copyright: 2026 The lithe authors' "$c" || fail "$p: copyright names no MIT (Expat) licence"
done
cmp -s <(sed -n '5,$p' "$SRC/LICENSE") <(sed -n '/^ Permission is hereby granted/,$p' "$c" | sed 's/^ //; s/^\.$//') ||
  fail "the copyright file's licence text is not LICENSE's"
echo "copyright: MIT (Expat), machine-readable, in all three packages"
soname=$(readelf -d "$TMP/root/$L/liblithe.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "soname: $soname"
[ "$soname" = "liblithe.so.$SOVERSION" ] || fail "soname '$soname'"
[ "$(readlink "$TMP/root/$L/liblithe.so")" = "liblithe.so.$SOVERSION" ] || fail "dev link wrong"
grep -qx "libdir=/$L" "$TMP/root/$L/pkgconfig/lithe.pc" || fail "lithe.pc: $(cat "$TMP/root/$L/pkgconfig/lithe.pc")"
grep -q "^LITHE_LIBRARY='/$L/liblithe.so.$SOVERSION'" "$TMP/root/usr/bin/lithe" || fail "launcher does not preload /$L/liblithe.so.$SOVERSION"
grep -q "^LITHE_PKGLIBDIR='/$L/lithe'" "$TMP/root/usr/bin/lithe" || fail "launcher does not look for the variants in /$L/lithe"
echo "library in the multiarch folder: /$L/liblithe.so.$VERSION"
# the unpacked library is a working allocator
LD_PRELOAD=$TMP/root/$L/liblithe.so.$SOVERSION LITHE_SHOW_STATS=1 ls -lR "$TMP/root" >/dev/null 2>"$TMP/err" || fail "ls with the packaged library failed"
grep -q "lithe stats (pid" "$TMP/err" || fail "the packaged library printed no statistics"
LD_PRELOAD=$TMP/root/$L/lithe/liblithe-secure.so ls -lR "$TMP/root" >/dev/null || fail "ls with the packaged hardened library failed"
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$rt" "$dev" "$bench" >"$TMP/lintian" 2>&1 || true
  grep -v 'running with root privileges' "$TMP/lintian" || true
  if grep -q '^E:' "$TMP/lintian"; then fail "lintian reports errors"; fi
  echo "lintian: no errors"
else
  echo "SKIP: lintian check: needs lintian (apt-get install lintian)"
fi
echo "install_deb: OK"
