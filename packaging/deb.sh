#!/usr/bin/env bash
# make deb: Debian binary packages from the build tree, with dpkg-deb.
#   liblithe0     /usr/lib/liblithe.so.0.2.0, the liblithe.so.0 link, /usr/bin/lithe
#                 (the launcher), lithe(1); shlibs and the ldconfig trigger
#   liblithe-dev  /usr/lib/liblithe.so, liblithe.a, /usr/include/lithe.h,
#                 lithe.pc, the CMake package, lithe(3); depends on liblithe0 (= version)
# Usage: packaging/deb.sh BUILD_DIR OUT_DIR   (BUILD_DIR already built by make)
# The files come from cmake --install of the runtime and dev components with
# prefix /usr, so the packages hold exactly what make install puts there.
set -euo pipefail
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
command -v dpkg-deb >/dev/null || { echo "deb.sh: needs dpkg-deb (apt-get install dpkg)"; exit 77; }

ver=$(sed -n 's/^#define LITHE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$src/include/lithe.h" | paste -sd.)
so=${ver%%.*}
debver="$ver-1"
arch=$(dpkg --print-architecture)
maint="lithe maintainers <lithe@invalid>"
work=$(mktemp -d "$out/.stage.XXXXXX")
trap 'rm -rf "$work"' EXIT

stage() { # component dir
  DESTDIR="$2" cmake --install "$build" --prefix /usr --component "$1" >/dev/null
  # Debian ships man pages compressed
  find "$2/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} + 2>/dev/null || true
}

# Depends of the shared library: dpkg-shlibdeps when dpkg-dev is there,
# otherwise the newest GLIBC_ symbol version it needs.
libc_depends() {
  local lib=$1 d
  if command -v dpkg-shlibdeps >/dev/null; then
    d=$(mktemp -d "$work/shl.XXXXXX")
    mkdir -p "$d/debian"
    printf 'Source: lithe\n\nPackage: liblithe%s\nArchitecture: any\n' "$so" >"$d/debian/control"
    (cd "$d" && dpkg-shlibdeps -O "$lib" 2>/dev/null | sed -n 's/^shlibs:Depends=//p') && return
  fi
  local v
  v=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  echo "libc6 (>= $v)"
}

control() { # dir package section depends description...
  local dir=$1 pkg=$2 section=$3 depends=$4; shift 4
  mkdir -p "$dir/DEBIAN"
  (cd "$dir" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$dir/DEBIAN/md5sums"
  local size
  size=$(du -sk --exclude=DEBIAN "$dir" | cut -f1)
  {
    echo "Package: $pkg"
    echo "Source: lithe"
    echo "Version: $debver"
    echo "Architecture: $arch"
    echo "Maintainer: $maint"
    echo "Installed-Size: $size"
    echo "Depends: $depends"
    echo "Section: $section"
    echo "Priority: optional"
    printf 'Description: %s\n' "$1"; shift
    for line in "$@"; do printf ' %s\n' "$line"; done
  } >"$dir/DEBIAN/control"
}

copyright() { # dir package: the MIT (Expat) licence, Debian's machine-readable format
  mkdir -p "$1/usr/share/doc/$2"
  install -m 644 "$src/packaging/copyright" "$1/usr/share/doc/$2/copyright"
}

rt=$work/liblithe$so
stage runtime "$rt"
copyright "$rt" "liblithe$so"
lib="$rt/usr/lib/liblithe.so.$ver"
[ -f "$lib" ] || { echo "deb.sh: $lib missing after install"; exit 1; }
control "$rt" "liblithe$so" libs "$(libc_depends "$lib")" \
  "lithe memory allocator (shared library and launcher)" \
  "lithe is a general-purpose malloc for Linux: thread heaps, size classes," \
  "memory returned to the OS after a delay. Use it for a program with" \
  "'lithe run PROG' (LD_PRELOAD) or link with -llithe (liblithe-dev)."
echo "liblithe $so liblithe$so (>= $ver)" >"$rt/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$rt/DEBIAN/triggers"

dev=$work/liblithe-dev
stage dev "$dev"
copyright "$dev" liblithe-dev
control "$dev" liblithe-dev libdevel "liblithe$so (= $debver), libc6-dev | libc-dev" \
  "lithe memory allocator (development files)" \
  "Header lithe.h, liblithe.so for -llithe, the static liblithe.a, pkg-config" \
  "(lithe.pc) and CMake (find_package(lithe): lithe::lithe, lithe::lithe_static)" \
  "files, and the lithe(3) manual page."

for d in "$rt" "$dev"; do
  pkg=$(sed -n 's/^Package: //p' "$d/DEBIAN/control")
  dpkg-deb --root-owner-group -Zxz --build "$d" "$out/${pkg}_${debver}_${arch}.deb" >/dev/null
  echo "$out/${pkg}_${debver}_${arch}.deb"
done
