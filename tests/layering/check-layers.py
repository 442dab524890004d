#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layers: lithe's call graph runs down the stated layers.

  check-layers.py ENTRY_FILE OBJECT...

Reads the layer order from the overview comment atop ENTRY_FILE (src/alloc.c:
lines " *   NAME.c  ..." after "Layers, bottom up", each file on the line of its
layer; "allow A.c -> B.c" lines name known exceptions), runs nm on each
object of the release build and fails on any call edge that runs up the
order: a symbol undefined in object A and defined in object B, where B is
listed above A.  Each offending edge is printed with its symbols.  An object
that the overview does not list fails too, so a new file must be placed.
"""
import os
import re
import subprocess
import sys


def stated_layers(path):
    order, allow, inside = [], set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "Layers, bottom up" in line:
                inside = True
                continue
            if not inside:
                continue
            if line.strip().startswith("*/") or "=====" in line:
                break
            m = re.match(r"^ \*   allow (\S+\.c) -> (\S+\.c)\b", line)
            if m:
                allow.add((m.group(1), m.group(2)))
                continue
            m = re.match(r"^ \*   (\w+\.c)\s", line)
            if m:
                order.append(m.group(1))
    return order, allow


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWGS" and parts[1].isupper():
            defined.add(parts[2])
    return defined, undefined


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    order, allow = stated_layers(argv[1])
    if len(order) < 2:
        print(f"check-layers: no layer list found in {argv[1]}", file=sys.stderr)
        return 2
    rank = {name: i for i, name in enumerate(order)}
    objs = {}
    for obj in argv[2:]:
        name = re.sub(r"\.o(bj)?$", "", os.path.basename(obj))
        objs[name] = symbols(obj)
    bad = 0
    for name in sorted(objs):
        if name not in rank:
            print(f"check-layers: {name} is not in the layer list of {argv[1]}")
            bad += 1
    owner = {}
    for name, (defined, _) in objs.items():
        for sym in defined:
            owner.setdefault(sym, name)
    edges = 0
    for a in sorted(objs):
        ups = {}
        for sym in objs[a][1]:
            b = owner.get(sym)
            if b is None or b == a:
                continue
            edges += 1
            if a in rank and b in rank and rank[b] > rank[a] and (a, b) not in allow:
                ups.setdefault(b, []).append(sym)
        for b in sorted(ups):
            print(f"upward call: {a} (layer {rank[a]}) -> {b} (layer {rank[b]}): {' '.join(sorted(ups[b]))}")
            bad += 1
    print(f"check-layers: {len(objs)} objects, {len(order)} layers, "
          f"{edges} cross-object references, {len(allow)} allowed exceptions, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
