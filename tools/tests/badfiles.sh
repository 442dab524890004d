#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lithe-replay must reject empty, garbage, truncated, corrupt and wrong-version
# traces with a message and exit status 2 -- never crash, never hang.
# usage: badfiles.sh lithe-replay lithe-trace-forge [liblithe-trace.so test-program]
set -u
REPLAY=$1 FORGE=$2 TRACER=${3:-} PROG=${4:-}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail=0
expect_reject() { # name file
  local out rc
  out=$(timeout 60 "$REPLAY" "$2" --runs 1 --no-warmup 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne 2 ] || [ -z "$out" ]; then
    echo "FAIL: $1: exit $rc (want 2), message: '$out'"; fail=1
  else
    echo "ok: $1: $out"
  fi
}
"$FORGE" "$d/good.ltrace" ok || { echo "FAIL: forge"; exit 1; }
out=$("$REPLAY" "$d/good.ltrace" --runs 1 --verify) || { echo "FAIL: good trace rejected"; echo "$out"; exit 1; }
echo "$out" | grep -q "records 4 replayed 4" || { echo "FAIL: good trace: $out"; fail=1; }

: > "$d/empty.ltrace";                        expect_reject empty "$d/empty.ltrace"
head -c 100000 /dev/urandom > "$d/random.ltrace"; expect_reject random "$d/random.ltrace"
printf 'LITHETRC' > "$d/magic-only.ltrace";   expect_reject magic-only "$d/magic-only.ltrace"
expect_reject missing "$d/does-not-exist.ltrace"
# wrong version: byte 8 = 3 (the replayer reads versions 1 and 2)
cp "$d/good.ltrace" "$d/v2.ltrace"; printf '\x03' | dd of="$d/v2.ltrace" bs=1 seek=8 conv=notrunc status=none
expect_reject wrong-version "$d/v2.ltrace"
# header field changed without fixing the header checksum
cp "$d/good.ltrace" "$d/hdr.ltrace"; printf '\x09' | dd of="$d/hdr.ltrace" bs=1 seek=16 conv=notrunc status=none
expect_reject header-checksum "$d/hdr.ltrace"
# payload byte flipped
cp "$d/good.ltrace" "$d/flip.ltrace"; printf '\x07' | dd of="$d/flip.ltrace" bs=1 seek=65 conv=notrunc status=none
expect_reject payload-flip "$d/flip.ltrace"
# every truncation of a good trace
sz=$(stat -c %s "$d/good.ltrace")
for ((i = 0; i < sz; i++)); do head -c $i "$d/good.ltrace" > "$d/trunc.ltrace"; expect_reject "truncated-at-$i" "$d/trunc.ltrace"; done
{ cat "$d/good.ltrace"; printf 'xx'; } > "$d/trail.ltrace"; expect_reject trailing-bytes "$d/trail.ltrace"
# structurally wrong with valid checksums
# good traces: version 1 (still read), version 2 with a thread created and exited
for k in v1ok lifetimes; do
  "$FORGE" "$d/$k.ltrace" $k || { echo "FAIL: forge $k"; exit 1; }
  want=4; [ $k = lifetimes ] && want=8
  out=$("$REPLAY" "$d/$k.ltrace" --runs 2 --verify) || { echo "FAIL: $k rejected"; echo "$out"; fail=1; continue; }
  echo "$out" | grep -q "records $want replayed $want" || { echo "FAIL: $k: $out"; fail=1; }
  echo "ok: $k replayed: $(echo "$out" | grep '^# verify: records')"
done
for k in doublefree danglingref badthread badop badtag hugesize countmismatch truncvarint \
         v1threadop afterexit startagain startlower; do
  "$FORGE" "$d/$k.ltrace" $k && expect_reject "$k" "$d/$k.ltrace"
done
# a real recorded trace, truncated and bit-flipped at many places
real=
if [ -n "$TRACER" ]; then
  LITHE_TRACE="$d/real.ltrace" LD_PRELOAD="$TRACER" "$PROG" >/dev/null && real="$d/real.ltrace"
fi
if [ -n "$real" ]; then
  set -- "$real"
  sz=$(stat -c %s "$1")
  for cut in 1 63 64 65 $((sz / 3)) $((sz / 2)) $((sz - 1)); do
    head -c $cut "$1" > "$d/rt.ltrace"; expect_reject "real-truncated-$cut" "$d/rt.ltrace"
  done
  for off in 70 $((sz / 4)) $((sz / 2)) $((sz - 2)); do
    # invert the byte (writing 0xff left a byte that already was 0xff alone,
    # and the unchanged trace was rightly accepted: a flaky failure)
    b=$(od -An -tu1 -j "$off" -N1 "$1" | tr -d ' ')
    cp "$1" "$d/rf.ltrace"; printf "\\$(printf '%03o' $((b ^ 255)))" | dd of="$d/rf.ltrace" bs=1 seek=$off conv=notrunc status=none
    cmp -s "$1" "$d/rf.ltrace" && { echo "FAIL: real-flipped-$off: byte not changed"; fail=1; }
    expect_reject "real-flipped-$off" "$d/rf.ltrace"
  done
fi
# .xz: garbage and truncated
if command -v xz >/dev/null; then
  head -c 5000 /dev/urandom > "$d/garbage.ltrace.xz"; expect_reject xz-garbage "$d/garbage.ltrace.xz"
  xz -c "$d/good.ltrace" > "$d/g.ltrace.xz"
  "$REPLAY" "$d/g.ltrace.xz" --runs 1 >/dev/null || { echo "FAIL: good .xz rejected"; fail=1; }
  head -c 40 "$d/g.ltrace.xz" > "$d/t.ltrace.xz"; expect_reject xz-truncated "$d/t.ltrace.xz"
  head -c 50000 /dev/urandom | xz -c > "$d/rnd.ltrace.xz"; expect_reject xz-of-garbage "$d/rnd.ltrace.xz"
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
