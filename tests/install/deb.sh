#!/usr/bin/env bash
# install_deb: make deb's script builds liblithe0 and liblithe-dev from this
# build; each is unpacked with dpkg -x into a scratch root and its file list,
# control fields and the library's soname are checked.
# usage: deb.sh BUILD_DIR
source "$(dirname "$0")/common.sh"
build=$1
need dpkg-deb dpkg
need readelf binutils
bash "$SRC/packaging/deb.sh" "$build" "$TMP/out" >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "packaging/deb.sh failed"; }
arch=$(dpkg --print-architecture)
rt=$TMP/out/liblithe${SOVERSION}_$VERSION-1_$arch.deb
dev=$TMP/out/liblithe-dev_$VERSION-1_$arch.deb
[ -f "$rt" ] && [ -f "$dev" ] || { ls -l "$TMP/out"; fail "missing $rt or $dev"; }
check_list() { # deb want-file
  dpkg-deb -c "$1" | awk '{ print $NF == "" ? $6 : $6 }' | sed 's|^\./||; /\/$/d; /^$/d' | sort >"$TMP/got"
  sort "$2" >"$TMP/want.s"
  diff -u "$TMP/want.s" "$TMP/got" || fail "$(basename "$1"): file list differs (- wanted, + packaged)"
}
cat >"$TMP/want-rt" <<LIST
usr/bin/lithe
usr/lib/liblithe.so.$SOVERSION
usr/lib/liblithe.so.$VERSION
usr/share/doc/liblithe$SOVERSION/copyright
usr/share/man/man1/lithe.1.gz
LIST
# CMake names the per-configuration targets file after the build type
# (litheTargets-release.cmake from build/, -debug from build-debug/)
config=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" | tr '[:upper:]' '[:lower:]')
config=${config:-noconfig}
cat >"$TMP/want-dev" <<LIST
usr/include/lithe.h
usr/lib/cmake/lithe/litheConfig.cmake
usr/lib/cmake/lithe/litheConfigVersion.cmake
usr/lib/cmake/lithe/litheTargets-$config.cmake
usr/lib/cmake/lithe/litheTargets.cmake
usr/lib/liblithe.a
usr/lib/liblithe.so
usr/lib/pkgconfig/lithe.pc
usr/share/doc/liblithe-dev/copyright
usr/share/man/man3/lithe.3.gz
LIST
check_list "$rt" "$TMP/want-rt"
check_list "$dev" "$TMP/want-dev"
for d in "$rt" "$dev"; do
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
dpkg -x "$rt" "$TMP/root"; dpkg -x "$dev" "$TMP/root"
soname=$(readelf -d "$TMP/root/usr/lib/liblithe.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "soname: $soname"
[ "$soname" = "liblithe.so.$SOVERSION" ] || fail "soname '$soname'"
[ "$(readlink "$TMP/root/usr/lib/liblithe.so")" = "liblithe.so.$SOVERSION" ] || fail "dev link wrong"
grep -qx 'libdir=/usr/lib' "$TMP/root/usr/lib/pkgconfig/lithe.pc" || fail "lithe.pc: $(cat "$TMP/root/usr/lib/pkgconfig/lithe.pc")"
grep -q "^LITHE_LIBRARY='/usr/lib/liblithe.so.$SOVERSION'" "$TMP/root/usr/bin/lithe" || fail "launcher does not preload /usr/lib/liblithe.so.$SOVERSION"
# the unpacked library is a working allocator
LD_PRELOAD=$TMP/root/usr/lib/liblithe.so.$SOVERSION LITHE_SHOW_STATS=1 ls -lR "$TMP/root" >/dev/null 2>"$TMP/err" || fail "ls with the packaged library failed"
grep -q "lithe stats (pid" "$TMP/err" || fail "the packaged library printed no statistics"
echo "install_deb: OK"
