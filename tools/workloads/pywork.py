# SPDX-License-Identifier: MIT
# Python workload for bench/traces/python.ltrace.xz: JSON encode/decode,
# regular expressions and dict/str churn. Deterministic (fixed seed).
# Scale with the first argument (default 1).
import json, re, random, sys

scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
rnd = random.Random(12345)
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
         "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi"]

def record(i):
    return {
        "id": i,
        "name": " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 6))),
        "tags": [rnd.choice(words) for _ in range(rnd.randint(0, 8))],
        "score": rnd.random() * 1000,
        "nested": {"a": [rnd.randint(0, 1 << 20) for _ in range(rnd.randint(0, 10))],
                   "b": {"c": str(i) * rnd.randint(1, 20)}},
    }

total = 0
pat = re.compile(r"(\w+)a(\w*)\s+(\d+)?")
for rnd_i in range(int(12 * scale)):
    docs = [record(i) for i in range(3000)]
    text = json.dumps(docs)
    back = json.loads(text)
    index = {}
    for d in back:
        for t in d["tags"]:
            index.setdefault(t, []).append(d["id"])
        for m in pat.finditer(d["name"]):
            total += len(m.group(1))
    counts = {k: len(v) for k, v in index.items()}
    joined = ",".join("%s=%d" % kv for kv in sorted(counts.items()))
    total += len(joined) + len(re.sub(r"[aeiou]", "", text[:200000]))
    del docs, back, index
print(total)
