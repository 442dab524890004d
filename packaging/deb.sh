#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make deb: Debian binary packages, with dpkg-deb.  LIB below is
# /usr/lib/<multiarch triplet> (/usr/lib/x86_64-linux-gnu on amd64).
#   liblithe0     LIB/liblithe.so.0.2.0, the liblithe.so.0 link, /usr/bin/lithe
#                 (the launcher), lithe(1), LIB/lithe/liblithe-secure.so and
#                 liblithe-valgrind.so (for lithe run --secure / --valgrind);
#                 shlibs and the ldconfig trigger
#   liblithe-dev  LIB/liblithe.so, liblithe.a, /usr/include/lithe.h,
#                 lithe.pc, the CMake package, lithe(3); depends on liblithe0 (= version)
#   lithe-bench   /usr/bin/lithe-bench, its programs in LIB/lithe/bench, the
#                 traces in /usr/share/lithe/traces, lithe-bench(1)
# Each has the MIT licence as usr/share/doc/PKG/copyright (packaging/copyright).
# Usage: packaging/deb.sh BUILD_DIR OUT_DIR [TREE]
# The packages are built in a tree of their own, TREE (default
# BUILD_DIR/deb-tree, kept between runs so that a second make deb only
# relinks), configured as a distribution would: prefix /usr, libdir
# lib/<triplet>, no tests.  The files come from cmake --install of its
# runtime, dev and bench components, so the packages hold what make install
# puts there.
set -euo pipefail
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
tree=${3:-$build/deb-tree}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v dpkg-deb >/dev/null || { echo "deb.sh: needs dpkg-deb (apt-get install dpkg)"; exit 77; }

ver=$(sed -n 's/^#define LITHE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$src/include/lithe.h" | paste -sd.)
so=${ver%%.*}
debver="$ver-1"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)
[ -n "$multiarch" ] || { echo "deb.sh: no multiarch triplet (apt-get install dpkg-dev)"; exit 77; }
libdir=lib/$multiarch
# Maintainer (control and changelog): DEBFULLNAME / DEBEMAIL as for dch,
# else the source tree's git user, else a placeholder (.invalid: set
# DEBEMAIL before publishing a package)
name=${DEBFULLNAME:-$(git -C "$src" config user.name 2>/dev/null || true)}
email=${DEBEMAIL:-$(git -C "$src" config user.email 2>/dev/null || true)}
[ -n "$email" ] || { name="lithe maintainers"; email="maintainers@lithe.invalid"; }
maint="${name:-lithe maintainers} <$email>"
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S "$src" -B "$tree" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_INSTALL_LIBDIR="$libdir" -DLITHE_BUILD_TESTS=OFF -DLITHE_BUILD_BENCH=ON \
  -DLITHE_INSTALL=ON -DLITHE_INSTALL_BENCH=ON >"$out/.deb-tree.log" 2>&1 ||
  { cat "$out/.deb-tree.log"; echo "deb.sh: cmake configure of $tree failed"; exit 1; }
cmake --build "$tree" -j "$jobs" >>"$out/.deb-tree.log" 2>&1 ||
  { tail -40 "$out/.deb-tree.log"; echo "deb.sh: build of $tree failed"; exit 1; }
rm -f "$out/.deb-tree.log"

work=$(mktemp -d "$out/.stage.XXXXXX")
trap 'rm -rf "$work"' EXIT

stage() { # component dir
  DESTDIR="$2" cmake --install "$tree" --component "$1" >/dev/null
  # Debian ships man pages compressed, programs and libraries stripped
  find "$2/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} + 2>/dev/null || true
  local f
  while IFS= read -r -d '' f; do
    case "$(file -b "$f")" in
      *ELF*shared\ object*|*ELF*pie\ executable*|*ELF*executable*)
        strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f" ;;
      *ar\ archive*) strip --strip-debug --remove-section=.comment --enable-deterministic-archives "$f" ;;
    esac
  done < <(find "$2" -type f \( -perm -u+x -o -name '*.so*' -o -name '*.a' \) -print0)
}

# Depends of ELF files: dpkg-shlibdeps when dpkg-dev is there (liblithe0's
# own shlibs, for lithe-bench, from the staged tree), otherwise the newest
# GLIBC_ symbol version they need.
shlib_depends() { # files...
  local d
  if command -v dpkg-shlibdeps >/dev/null; then
    d=$(mktemp -d "$work/shl.XXXXXX")
    mkdir -p "$d/debian"
    printf 'Source: lithe\n\nPackage: liblithe%s\nArchitecture: any\n' "$so" >"$d/debian/control"
    echo "liblithe $so liblithe$so (>= $ver)" >"$d/debian/shlibs.local"
    (cd "$d" && dpkg-shlibdeps -O -l"$rt/usr/$libdir" "$@" 2>/dev/null | sed -n 's/^shlibs:Depends=//p') && return
  fi
  local v
  v=$(objdump -T "$@" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
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
    [ "$pkg" = "liblithe$so" ] && echo "Multi-Arch: same"
    echo "Maintainer: $maint"
    echo "Installed-Size: $size"
    echo "Depends: $depends"
    echo "Section: $section"
    echo "Priority: optional"
    printf 'Description: %s\n' "$1"; shift
    for line in "$@"; do printf ' %s\n' "$line"; done
  } >"$dir/DEBIAN/control"
}

docs() { # dir package: copyright (MIT, Debian's machine-readable format), changelog
  local d="$1/usr/share/doc/$2"
  mkdir -p "$d"
  install -m 644 "$src/packaging/copyright" "$d/copyright"
  local date
  date=$(date -R -u ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH})
  printf 'lithe (%s) unstable; urgency=medium\n\n  * Built from the lithe source tree by make deb (packaging/deb.sh).\n\n -- %s  %s\n' \
    "$debver" "$maint" "$date" | gzip -9n >"$d/changelog.Debian.gz"
}

rt=$work/liblithe$so
stage runtime "$rt"
docs "$rt" "liblithe$so"
lib="$rt/usr/$libdir/liblithe.so.$ver"
[ -f "$lib" ] || { echo "deb.sh: $lib missing after install"; exit 1; }
control "$rt" "liblithe$so" libs "$(shlib_depends "$lib")" \
  "lithe memory allocator (shared library and launcher)" \
  "lithe is a general-purpose malloc for Linux: thread heaps, size classes," \
  "memory returned to the OS after a delay. Use it for a program with" \
  "'lithe run PROG' (LD_PRELOAD) or link with -llithe (liblithe-dev)." \
  "'lithe run --secure PROG' runs the hardened build, 'lithe run --valgrind" \
  "PROG' the valgrind build under memcheck."
echo "liblithe $so liblithe$so (>= $ver)" >"$rt/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$rt/DEBIAN/triggers"

dev=$work/liblithe-dev
stage dev "$dev"
docs "$dev" liblithe-dev
control "$dev" liblithe-dev libdevel "liblithe$so (= $debver), libc6-dev | libc-dev" \
  "lithe memory allocator (development files)" \
  "Header lithe.h, liblithe.so for -llithe, the static liblithe.a, pkg-config" \
  "(lithe.pc) and CMake (find_package(lithe): lithe::lithe, lithe::lithe_static)" \
  "files, and the lithe(3) manual page."

bench=$work/lithe-bench
stage bench "$bench"
docs "$bench" lithe-bench
mapfile -t progs < <(find "$bench/usr/$libdir/lithe/bench" -type f)
control "$bench" lithe-bench devel "$(shlib_depends "${progs[@]}"), liblithe$so (= $debver), xz-utils" \
  "lithe memory allocator (benchmark suite)" \
  "lithe-bench runs MallocBench-style workloads and replays of recorded" \
  "programs under several allocators (glibc, jemalloc, mimalloc, tcmalloc," \
  "lithe), each in a fresh process, and writes a report with a significance" \
  "test per row; the recorded traces are in /usr/share/lithe/traces."

for d in "$rt" "$dev" "$bench"; do
  pkg=$(sed -n 's/^Package: //p' "$d/DEBIAN/control")
  dpkg-deb --root-owner-group -Zxz --build "$d" "$out/${pkg}_${debver}_${arch}.deb" >/dev/null
  echo "$out/${pkg}_${debver}_${arch}.deb"
done
