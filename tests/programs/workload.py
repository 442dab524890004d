# SPDX-License-Identifier: MIT
# A Python workload for program_python: objects, dicts, json, regex, strings.
# Every result is checked here against a closed formula, and printed; the
# driver compares the printed lines with the expected ones.
import collections
import gc
import json
import re
import sys

N = 200000


class Point:
    def __init__(self, i):
        self.i = i
        self.name = "p%d" % i
        self.tags = [i % 7, i % 11]


objs = [Point(i) for i in range(N)]
total = sum(o.i for o in objs)
assert total == N * (N - 1) // 2, total
d = {o.name: o for o in objs}
for i in range(0, N, 2):
    del d["p%d" % i]
assert len(d) == N // 2
odd_sum = sum(o.i for o in d.values())
assert odd_sum == (N // 2) ** 2, odd_sum
print("objects", len(objs), total, len(d), odd_sum)
del objs, d
gc.collect()

# nested containers and a json round trip
data = {"items": [{"id": i, "name": "item-%d" % i, "vals": list(range(i % 10)),
                   "f": i / 4, "ok": i % 3 == 0} for i in range(50000)]}
txt = json.dumps(data, sort_keys=True)
back = json.loads(txt)
assert back == data
ids = sum(it["id"] for it in back["items"])
vals = sum(sum(it["vals"]) for it in back["items"])
oks = sum(1 for it in back["items"] if it["ok"])
assert ids == 50000 * 49999 // 2 and vals == 5000 * 120 and oks == 16667
print("json", len(back["items"]), ids, vals, oks)

# regex over a large string
text = " ".join("word%d-%s" % (i, "x" * (i % 5)) for i in range(100000))
found = re.findall(r"word(\d+)-(x{3,})", text)
assert len(found) == 40000
s = sum(int(a) for a, _ in found)
want = sum(i for i in range(100000) if i % 5 >= 3)
assert s == want
subbed = re.sub(r"x+", lambda m: str(len(m.group(0))), text)
assert subbed.count("word") == 100000
print("regex", len(found), s, len(subbed))

# strings, bytes, sets, Counter, sorting
b = bytearray()
for i in range(100000):
    b += b"%d," % i
parts = b.decode().rstrip(",").split(",")
assert len(parts) == 100000 and int(parts[-1]) == 99999
c = collections.Counter(i % 97 for i in range(300000))
assert sum(c.values()) == 300000 and c[0] == 3093
words = sorted(("w%05d" % ((i * 7919) % 100000) for i in range(100000)), reverse=True)
assert words[0] == "w99999" and words[-1] == "w00000"
st = set(range(0, 300000, 3)) & set(range(0, 300000, 5))
assert len(st) == 20000
print("misc", len(b), c[0], words[0], words[-1], len(st))
print("python workload OK", sys.version_info[0])
