# SPDX-License-Identifier: MIT
# allocators.sh — sourced by the callgrind scripts (callgrind-fastpath.sh,
# fastpath-sweep.sh): the allocators they measure when none is named.
# default_allocators BUILD prints NAME=PATH words: glibc=none (no preload),
# the Debian peers that are installed (jemalloc, mimalloc, tcmalloc_minimal)
# and lithe=BUILD/liblithe.so if it exists.  Use: set -- $(default_allocators "$BUILD")
default_allocators() {
  libdir=/usr/lib/x86_64-linux-gnu
  printf '%s\n' glibc=none
  [ -e $libdir/libjemalloc.so.2 ] && printf '%s\n' jemalloc=$libdir/libjemalloc.so.2
  [ -e $libdir/libmimalloc.so.2 ] && printf '%s\n' mimalloc=$libdir/libmimalloc.so.2
  [ -e $libdir/libtcmalloc_minimal.so.4 ] && printf '%s\n' tcmalloc=$libdir/libtcmalloc_minimal.so.4
  [ -e "$1/liblithe.so" ] && printf '%s\n' lithe="$1/liblithe.so"
  return 0
}
