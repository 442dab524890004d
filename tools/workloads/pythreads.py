# SPDX-License-Identifier: MIT
# Multithreaded Python workload for bench/traces/pythreads.ltrace.xz:
# two producer threads build dicts/lists/strings and hand them through queues
# to two consumer threads that digest and drop them, so many objects are
# allocated on one thread and freed on another. Deterministic work per thread.
import queue, random, threading, json, sys

scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
N = int(6000 * scale)
q = queue.Queue(maxsize=64)
out = []

def produce(seed):
    rnd = random.Random(seed)
    for i in range(N):
        item = {"k%d" % j: [rnd.random() for _ in range(rnd.randint(0, 12))]
                for j in range(rnd.randint(1, 12))}
        item["s"] = "x" * rnd.randint(0, 3000)
        q.put(item)
    q.put(None)

def consume():
    n = 0
    while True:
        item = q.get()
        if item is None:
            break
        n += len(json.dumps(item))
    out.append(n)

ts = [threading.Thread(target=produce, args=(s,)) for s in (1, 2)]
ts += [threading.Thread(target=consume) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
print(sum(out))
