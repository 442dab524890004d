#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Re-records the shipped traces bench/traces/<name>.ltrace.xz with the tracer.
# Installs nothing: it names the Debian package of anything missing and stops.
#
#   tools/record-traces.sh [--build DIR] [--out DIR] [NAME...]
#
# NAMEs (default: all five shipped): python pythreads sqlite gxx git; also xz-mt
# (xz -T2: 32 records, huge blocks; not shipped: replays in < 0.2 s)
# Needs build/liblithe-trace.so and build/lithe-replay (make, or cmake --build).
# Python is /usr/bin/python3 (Debian's python3), never a pyenv/venv shim, and
# runs with PYTHONMALLOC=malloc so that every object reaches malloc (Python's
# own small-object allocator would otherwise hide most of them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build out=$root/bench/traces
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python pythreads sqlite gxx git)
tracer=$build/liblithe-trace.so replay=$build/lithe-replay
for f in "$tracer" "$replay"; do
  [ -e "$f" ] || { echo "missing $f: build first (make, or cmake --build build --target lithe-trace lithe-replay)" >&2; exit 1; }
done

need() { # program package
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "$1" ]; then
    echo "missing $1: apt-get install $2" >&2; exit 1
  fi
}
need xz xz-utils
need awk mawk   # the shipped git trace was made with mawk (Debian's default awk); its rand() differs from gawk's
for n in "${names[@]}"; do
  case $n in
    python|pythreads) need /usr/bin/python3 python3 ;;
    sqlite) need sqlite3 sqlite3 ;;
    gxx) need g++ g++ ;;
    git) need git git ;;
    xz-mt) need od coreutils ;;
    *) echo "unknown trace name $n" >&2; exit 2 ;;
  esac
done

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
export LC_ALL=C HOME=$tmp GIT_CONFIG_NOSYSTEM=1 PYTHONHASHSEED=0 PYTHONNOUSERSITE=1
W=$here/workloads

traced() { # name command... ; runs the command with the tracer, keeps the biggest trace
  local name=$1; shift
  rm -f "$tmp/$name".ltrace*
  local t0=$(date +%s.%N)
  LITHE_TRACE=$tmp/$name.ltrace LD_PRELOAD=$tracer "$@" >/dev/null
  local t1=$(date +%s.%N)
  # a program that execs others (g++ -> cc1plus) leaves <name>.ltrace.<pid> files
  local big=$(ls -S "$tmp/$name".ltrace* | grep -v spool | head -1)
  echo "recorded $name in $(echo "$t1 - $t0" | bc 2>/dev/null || echo '?') s: $(basename "$big") of: $(cd "$tmp" && ls "$name".ltrace* | tr '\n' ' ')"
  "$replay" "$big" --info | head -1
  xz -9 -T1 -c "$big" > "$out/$name.ltrace.xz"
  echo "  -> $out/$name.ltrace.xz ($(stat -c %s "$out/$name.ltrace.xz") bytes)"
}

for n in "${names[@]}"; do
  case $n in
    python) traced python env PYTHONMALLOC=malloc /usr/bin/python3 -s "$W/pywork.py" 0.45 ;;
    pythreads) traced pythreads env PYTHONMALLOC=malloc /usr/bin/python3 -s "$W/pythreads.py" 0.9 ;;
    sqlite) traced sqlite sqlite3 :memory: < "$W/sqlite.sql" ;;
    gxx) traced gxx g++ -std=c++17 -O0 -c -o "$tmp/templates.o" "$W/templates.cpp" ;;
    git)
      bash "$W/mkrepo.sh" "$tmp/repo" 8000
      traced git git -C "$tmp/repo" --no-pager log -p --stat ;;
    xz-mt)
      # 24 MB of hex text, deterministic
      awk 'BEGIN { srand(7); for (i = 0; i < 800000; i++) printf "%08x %08x %08x\n", int(rand()*4294967295), i, int(rand()*65536) }' > "$tmp/data.txt"
      traced xz-mt xz -T2 -3 -c "$tmp/data.txt" ;;
  esac
done
ls -la "$out"
