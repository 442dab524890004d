#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_pkgconfig: examples/hello.c compiled and linked with
# `pkg-config --cflags --libs lithe` of the scratch install, run: its malloc
# is lithe's (hello checks lithe's counters) from the installed library.
# usage: pkgconfig.sh PREFIX
source "$(dirname "$0")/common.sh"
prefix=$1
need pkg-config pkg-config
need cc build-essential
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
v=$(pkg-config --modversion lithe) || fail "pkg-config does not find lithe in $PKG_CONFIG_PATH"
[ "$v" = "$VERSION" ] || fail "pkg-config --modversion lithe = '$v', want $VERSION"
flags=$(pkg-config --cflags --libs lithe)
echo "pkg-config --cflags --libs lithe: $flags"
libdir=$(pkg-config --variable=libdir lithe)
# shellcheck disable=SC2086 # the flags are words
cc -o "$TMP/hello" "$SRC/examples/hello.c" $flags -Wl,-rpath,"$libdir" || fail "hello.c does not build with those flags"
out=$("$TMP/hello") || fail "hello exited $? (lithe did not serve it?): $out"
echo "$out"
case "$out" in "hello from lithe $VERSION:"*) ;; *) fail "unexpected output";; esac
lib=$(ldd "$TMP/hello" | awk '$1 ~ /^liblithe/ { print $3 }')
echo "hello loads $lib"
[ "$lib" = "$libdir/liblithe.so.$SOVERSION" ] || fail "hello loads '$lib', want $libdir/liblithe.so.$SOVERSION"
echo "install_pkgconfig: OK"
