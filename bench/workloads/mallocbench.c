/* SPDX-License-Identifier: MIT */
/* bench-mallocbench: the MallocBench-style synthetic workloads
 * of WebKit's MallocBench (docs/benchmarks.md describes each one) with its
 * per-process protocol.
 *
 *   bench-mallocbench --benchmark NAME [--parallel] [--runs N] [--threads N]
 *       [--heap MB] [--no-warmup] [--quick] [--memory-warning]
 *       [--format=gobench] [--peak-per-run] [--settle] [--libc-random]
 *       [--scale F] [--pause-ms MS] [--persistent-consumers] [--rss-sample-ms MS]
 *       [--churn-faults]
 *
 * Workload objects go through malloc/free (that is what is measured);
 * harness state (thread pool, queues, balloon tables) lives in static memory,
 * on the stack or in mmap'd memory. See docs/benchmarks.md.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* global configuration                                                      */

static int g_quick;          /* --quick */
static int g_libc_random;    /* --libc-random: use srandom(0)/random() in parallel too */
static int g_churn_faults;   /* --churn-faults: stress prints each churn's faults */
static int g_nthreads = 1;   /* threads of this repetition (1 unless --parallel) */
static int g_ncpu_cfg;       /* ncpu, or --threads */

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) bench_die("check failed: " __VA_ARGS__);  \
  } while (0)

static volatile uint64_t g_sink; /* results that must not be optimised away */
#define SINK(x) __atomic_fetch_add(&g_sink, (uint64_t)(x), __ATOMIC_RELAXED)

/* Random indices: the C library generator (srandom(0) per invocation, as the
 * reference does) single-threaded, a per-thread xorshift in parallel. */
typedef struct {
  int libc;
  uint64_t s;
} rng_t;

static void rng_init(rng_t *r, int tid, int nthreads) {
  r->libc = (nthreads == 1) || g_libc_random;
  if (r->libc)
    srandom(0);
  else
    r->s = bench_rng_seed((uint64_t)tid);
}
static inline unsigned long rng_next(rng_t *r) {
  if (r->libc) return (unsigned long)random();
  return (unsigned long)(bench_rng_next(&r->s) >> 33); /* 31 bits like random() */
}

static double g_scale = 1.0; /* --scale F: the work amount times F */

/* The work amount of a workload (rounds, passes, iterations, messages):
 * divided by d for --quick, times --scale, at least 1. */
static long qwork(long v, long d) {
  double x = (double)v;
  if (g_quick) x /= (double)d;
  x *= g_scale;
  long r = (long)(x + 0.5);
  return r > 0 ? r : 1;
}

static long qdiv(long v, long d) { /* other sizes: shrink for --quick, at least 1 */
  if (!g_quick) return v;
  v /= d;
  return v > 0 ? v : 1;
}

/* ------------------------------------------------------------------------ */
/* 3.1 churn                                                                */

static void w_churn(int tid, int P) {
  (void)tid;
  long n = 7000000L / P;
  n = qwork(n, 64);
  double *acc = bench_alloc(sizeof(double));
  *acc = 0;
  for (long i = 0; i < n; i++) {
    double *p = bench_alloc(sizeof(double));
    *p = (double)i;
    *acc += *p;
    bench_free(p, sizeof(double));
  }
  double want = (double)n * (double)(n - 1) / 2.0;
  CHECK(*acc == want, "churn sum %.0f != %.0f", *acc, want);
  SINK((uint64_t)*acc);
  bench_free(acc, sizeof(double));
}

/* ------------------------------------------------------------------------ */
/* 3.2 list_allocate                                                        */

typedef struct lnode {
  long refcount;
  struct lnode *next;
  unsigned char *payload;
  size_t len;
} lnode_t; /* 32 bytes on LP64 */

/* a list of `nodes` nodes pushed at the head, each with a zeroed payload */
static lnode_t *list_build(long nodes, size_t len) {
  lnode_t *head = NULL;
  for (long i = 0; i < nodes; i++) {
    lnode_t *n = bench_alloc(sizeof *n);
    n->refcount = 1;
    n->payload = bench_alloc(len);
    memset(n->payload, 0, len);
    n->len = len;
    n->next = head;
    head = n;
  }
  return head;
}

static void w_list_allocate(int tid, int P) {
  (void)tid;
  long nodes = P > 1 ? 32768L / P : 32768L;
  long rounds = P > 1 ? 140 : 70;
  rounds = qwork(rounds, 16);
  size_t len = (size_t)((nodes % 64) | 1);
  for (long r = 0; r < rounds; r++) {
    lnode_t *head = list_build(nodes, len);
    long count = 0;
    uint64_t sum = 0;
    while (head) {
      lnode_t *next = head->next;
      head->next = NULL;
      sum += head->payload[0] + head->payload[head->len - 1];
      bench_free(head->payload, head->len);
      bench_free(head, sizeof *head);
      head = next;
      count++;
    }
    CHECK(count == nodes && sum == 0, "list_allocate count %ld sum %lu", count, (unsigned long)sum);
    SINK((uint64_t)count);
  }
}

/* ------------------------------------------------------------------------ */
/* 3.3 tree_allocate, 3.4 tree_churn                                        */

typedef struct tnode {
  long refcount;
  struct tnode *left, *right;
  unsigned char *payload;
  size_t len;
  long id;
} tnode_t; /* 48 bytes on LP64 */

static tnode_t *tree_build(int level, long *next_id) {
  tnode_t *l = level > 1 ? tree_build(level - 1, next_id) : NULL;
  long id = (*next_id)++;
  tnode_t *r = level > 1 ? tree_build(level - 1, next_id) : NULL;
  size_t len = (size_t)(((level * 8) % 64) | 1);
  tnode_t *n = bench_alloc(sizeof *n);
  n->refcount = 1;
  n->left = l;
  n->right = r;
  n->id = id;
  n->payload = bench_alloc(len);
  memset(n->payload, 0, len);
  n->len = len;
  CHECK((!l || l->id < id) && (!r || r->id > id), "tree ids out of order at %ld", id);
  return n;
}

static long tree_release(tnode_t *n) {
  if (!n) return 0;
  long c = tree_release(n->left);
  c += tree_release(n->right);
  bench_free(n->payload, n->len);
  bench_free(n, sizeof *n);
  return c + 1;
}

static void w_tree_allocate(int tid, int P) {
  (void)tid;
  int depth = P > 1 ? 13 : 16;
  long rounds = P > 1 ? 96 : 24;
  rounds = qwork(rounds, 16);
  for (long r = 0; r < rounds; r++) {
    long next_id = 0;
    tnode_t *root = tree_build(depth, &next_id);
    long want = (1L << depth) - 1;
    CHECK(next_id == want && root->id == (1L << (depth - 1)) - 1, "tree_allocate ids");
    long freed = tree_release(root);
    CHECK(freed == want, "tree_allocate freed %ld of %ld", freed, want);
    SINK((uint64_t)freed);
  }
}

/* Replace a child by a fresh copy (new record, new payload), free the old. */
static tnode_t *tree_copy(tnode_t *old, long counter) {
  tnode_t *n = bench_alloc(sizeof *n);
  *n = *old;
  size_t len = (size_t)((counter % 64) | 1);
  n->payload = bench_alloc(len);
  memset(n->payload, 0, len);
  n->len = len;
  bench_free(old->payload, old->len);
  bench_free(old, sizeof *old);
  return n;
}

static void tree_churn_walk(tnode_t *n, long stride, long *counter, long *replaced) {
  if (!n) return;
  tree_churn_walk(n->left, stride, counter, replaced);
  ++*counter;
  if ((n->left || n->right) && *counter % stride == 0) {
    if (n->left) n->left = tree_copy(n->left, *counter);
    if (n->right) n->right = tree_copy(n->right, *counter);
    *replaced += 1;
  }
  CHECK((!n->left || n->left->id < n->id) && (!n->right || n->right->id > n->id),
        "tree_churn ids out of order at %ld", n->id);
  tree_churn_walk(n->right, stride, counter, replaced);
}

static void w_tree_churn(int tid, int P) {
  (void)tid;
  int depth = P > 1 ? 12 : 15;
  long passes = P > 1 ? 520 : 130;
  passes = qwork(passes, 32);
  const long stride = 8;
  long next_id = 0;
  tnode_t *root = tree_build(depth, &next_id);
  long replaced = 0;
  for (long p = 0; p < passes; p++) {
    long counter = 0;
    tree_churn_walk(root, stride, &counter, &replaced);
    CHECK(counter == next_id, "tree_churn visited %ld of %ld", counter, next_id);
  }
  long freed = tree_release(root);
  CHECK(freed == next_id && replaced > 0, "tree_churn freed %ld replaced %ld", freed, replaced);
  SINK((uint64_t)replaced);
}

/* ------------------------------------------------------------------------ */
/* 3.5 fragment, 3.6 fragment_iterate                                       */

typedef struct fobj {
  struct fobj *next;
  uint64_t pay[3];
} fobj_t; /* 32 bytes */

static fobj_t *fobj_new(void) {
  fobj_t *o = bench_alloc(sizeof *o);
  memset(o, 0, sizeof *o);
  return o;
}

static void w_fragment(int tid, int P) {
  long count = P > 1 ? 131072L / P : 131072L;
  long rounds = 25;
  rounds = qwork(rounds, 8);
  count = qdiv(count, 8);
  rng_t rng;
  rng_init(&rng, tid, P);
  for (long r = 0; r < rounds; r++) {
    fobj_t **table = bench_alloc((size_t)count * sizeof *table);
    for (long i = 0; i < count; i++) table[i] = fobj_new();
    for (long k = 0; k < count / 4; k++) {
      long i = (long)(rng_next(&rng) % (unsigned long)count);
      bench_free(table[i], sizeof(fobj_t));
      table[i] = fobj_new();
    }
    uint64_t sum = 0;
    for (long i = 0; i < count; i++) {
      sum += (uint64_t)(uintptr_t)table[i]->next + table[i]->pay[2];
      bench_free(table[i], sizeof(fobj_t));
    }
    bench_free(table, (size_t)count * sizeof *table);
    CHECK(sum == 0, "fragment objects not zero");
    SINK((uint64_t)count);
  }
}

static void w_fragment_iterate(int tid, int P) {
  long count = P > 1 ? 524288L / P : 524288L;
  count = qdiv(count, 16);
  const long walks = qwork(20, 1);
  rng_t rng;
  rng_init(&rng, tid, P);
  fobj_t **table = bench_alloc((size_t)count * sizeof *table);
  for (long i = 0; i < count; i++) table[i] = fobj_new();
  fobj_t *head = NULL;
  long listed = 0;
  for (long k = 0; k < count / 4; k++) {
    long i = (long)(rng_next(&rng) % (unsigned long)count);
    if (table[i]) {
      bench_free(table[i], sizeof(fobj_t));
      table[i] = NULL;
    }
    fobj_t *o = fobj_new();
    o->next = head;
    head = o;
    listed++;
  }
  for (long w = 0; w < walks; w++) {
    long seen = 0;
    for (fobj_t *o = head; o; o = o->next) {
      CHECK((o->pay[0] | o->pay[1] | o->pay[2]) == 0, "fragment_iterate: non-zero payload");
      seen++;
    }
    CHECK(seen == listed, "fragment_iterate walked %ld of %ld", seen, listed);
  }
  while (head) {
    fobj_t *next = head->next;
    bench_free(head, sizeof *head);
    head = next;
  }
  for (long i = 0; i < count; i++)
    if (table[i]) bench_free(table[i], sizeof(fobj_t));
  bench_free(table, (size_t)count * sizeof *table);
  SINK((uint64_t)listed);
}

/* ------------------------------------------------------------------------ */
/* 3.7 medium, 3.8 big                                                      */

typedef struct {
  void *p;
  size_t size;
} rec_t;

static void sized_gigabyte(int tid, int P, size_t min, size_t max) {
  size_t total = ((size_t)1 << 30) / (size_t)P;
  if (g_quick) total /= 64;
  total = (size_t)((double)total * g_scale);
  if (total < 2 * max) total = 2 * max;
  rng_t rng;
  rng_init(&rng, tid, P);
  size_t nrec = total / min;
  rec_t *table = bench_alloc(nrec * sizeof *table);
  memset(table, 0, nrec * sizeof *table);
  size_t remaining = total, n = 0;
  while (remaining > min) {
    size_t size = (size_t)rng_next(&rng) % max;
    if (size < min) size = min;
    if (size > remaining) size = remaining;
    void *p = bench_alloc(size);
    memset(p, 0, size);
    CHECK(n < nrec, "record table overflow");
    table[n].p = p;
    table[n].size = size;
    n++;
    remaining -= size;
  }
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    bytes += table[i].size + ((unsigned char *)table[i].p)[table[i].size - 1];
    bench_free(table[i].p, table[i].size);
  }
  CHECK(bytes == total - remaining, "medium/big byte count");
  bench_free(table, nrec * sizeof *table);
  SINK(n);
}

static void w_medium(int tid, int P) { sized_gigabyte(tid, P, 1024, 8 * 1024); }
static void w_big(int tid, int P) { sized_gigabyte(tid, P, 8 * 1024, 128 * 1024); }

/* ------------------------------------------------------------------------ */
/* 3.9 message_one, 3.10 message_many                                       */

#define MSG_NODES 1024
#define MSG_NODE_SIZE 256
#define MSG_BURST 16
#define QCAP 64 /* > MSG_BURST + 1 outstanding tasks */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  void *slot[QCAP]; /* NULL = drain marker */
  unsigned head, tail;
  unsigned long drains_posted, drains_done;
  int quit;
  pthread_t thread;
} mqueue_t;

static mqueue_t *g_queues; /* mmap'd */
static int g_nqueues;

static void *msg_make(void) {
  void **hdr = bench_alloc(8);
  void **arr = bench_alloc(MSG_NODES * sizeof(void *));
  for (int i = 0; i < MSG_NODES; i++) {
    void *node = bench_alloc(MSG_NODE_SIZE);
    memset(node, 0, MSG_NODE_SIZE);
    arr[i] = node;
  }
  *hdr = arr;
  return hdr;
}

static void msg_consume(void *m) {
  void **hdr = m;
  void **arr = *hdr;
  uint32_t sum = 0;
  for (int i = 0; i < MSG_NODES; i++) {
    const uint16_t *w = arr[i];
    for (int k = 0; k < MSG_NODE_SIZE / 2; k++) sum += w[k];
  }
  CHECK(sum == 0, "message checksum %u", sum);
  for (int i = 0; i < MSG_NODES; i++) bench_free(arr[i], MSG_NODE_SIZE);
  bench_free(arr, MSG_NODES * sizeof(void *));
  bench_free(hdr, 8);
}

static void *mq_worker(void *arg) {
  mqueue_t *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (q->head == q->tail && !q->quit) pthread_cond_wait(&q->cv_work, &q->mu);
    if (q->head == q->tail && q->quit) break;
    void *m = q->slot[q->head % QCAP];
    q->head++;
    if (m == NULL) {
      q->drains_done++;
      pthread_cond_broadcast(&q->cv_done);
      continue;
    }
    pthread_mutex_unlock(&q->mu);
    msg_consume(m);
    pthread_mutex_lock(&q->mu);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

static void mq_post(mqueue_t *q, void *m) {
  pthread_mutex_lock(&q->mu);
  CHECK(q->tail - q->head < QCAP, "message queue overflow");
  q->slot[q->tail % QCAP] = m;
  q->tail++;
  if (m == NULL) q->drains_posted++;
  pthread_cond_signal(&q->cv_work);
  pthread_mutex_unlock(&q->mu);
}

static void mq_wait_drained(mqueue_t *q) {
  pthread_mutex_lock(&q->mu);
  while (q->drains_done < q->drains_posted) pthread_cond_wait(&q->cv_done, &q->mu);
  pthread_mutex_unlock(&q->mu);
}

static void mq_drain_all(void) {
  for (int i = 0; i < g_nqueues; i++) mq_post(&g_queues[i], NULL);
  for (int i = 0; i < g_nqueues; i++) mq_wait_drained(&g_queues[i]);
}

static void mq_start(int n) {
  g_nqueues = n;
  g_queues = bench_map((size_t)n * sizeof(mqueue_t));
  for (int i = 0; i < n; i++) {
    mqueue_t *q = &g_queues[i];
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv_work, NULL);
    pthread_cond_init(&q->cv_done, NULL);
    if (pthread_create(&q->thread, NULL, mq_worker, q) != 0) bench_die("pthread_create failed");
  }
}

static void mq_stop(void) {
  for (int i = 0; i < g_nqueues; i++) {
    mqueue_t *q = &g_queues[i];
    pthread_mutex_lock(&q->mu);
    q->quit = 1;
    pthread_cond_signal(&q->cv_work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
  }
  bench_unmap(g_queues, (size_t)g_nqueues * sizeof(mqueue_t));
  g_queues = NULL;
  g_nqueues = 0;
}

/* The consumer threads: by default created at the start of every call and
 * joined at its end, inside the timed work, as the reference does (its
 * Linux version creates and joins its work-queue thread on every call);
 * --persistent-consumers starts them once before the warm-up and joins them
 * at tear-down instead, which keeps thread creation out of the time. */
static int g_persistent_consumers;

static void setup_message_one(void) {
  if (g_persistent_consumers) mq_start(1);
}
static void setup_message_many(void) {
  if (g_persistent_consumers) mq_start(g_ncpu_cfg - 1);
}
static void teardown_message(void) {
  if (g_persistent_consumers) mq_stop();
}

static void w_message_one(int tid, int P) {
  (void)tid;
  (void)P;
  if (!g_persistent_consumers) mq_start(1);
  long messages = qwork(2048, 32);
  for (long m = 0; m < messages; m++) {
    mq_post(&g_queues[0], msg_make());
    if ((m + 1) % MSG_BURST == 0) mq_drain_all();
  }
  mq_drain_all();
  if (!g_persistent_consumers) mq_stop();
  SINK((uint64_t)messages);
}

static void w_message_many(int tid, int P) {
  (void)tid;
  (void)P;
  if (!g_persistent_consumers) mq_start(g_ncpu_cfg - 1);
  long steps = qwork(768, 16);
  for (long s = 0; s < steps; s++) {
    for (int w = 0; w < g_nqueues; w++) mq_post(&g_queues[w], msg_make());
    if ((s + 1) % MSG_BURST == 0) mq_drain_all();
  }
  mq_drain_all();
  if (!g_persistent_consumers) mq_stop();
  SINK((uint64_t)steps);
}

/* ------------------------------------------------------------------------ */
/* 3.13 balloon                                                             */

static void w_balloon(int tid, int P) {
  (void)tid;
  const size_t bs = 1024;
  size_t big = ((size_t)100 << 20) / bs / (size_t)P;   /* 100 MiB of 1 KiB blocks */
  size_t steady = ((size_t)10 << 20) / bs / (size_t)P; /* 10 MiB steady set */
  long limit_kb = 20 * 1024;                           /* resident target */
  if (g_quick) {
    big /= 8;
    steady /= 8;
    limit_kb /= 8;
  }
  if (steady == 0) steady = 1;
  void **table = bench_map(big * sizeof(void *)); /* harness table, off-heap */
  uint64_t t0 = bench_now_ns();
  for (size_t i = 0; i < big; i++) {
    table[i] = bench_alloc(bs);
    memset(table[i], 0, bs);
  }
  for (size_t i = 0; i < big; i++) bench_free(table[i], bs);
  uint64_t t1 = bench_now_ns();
  uint64_t budget = 8 * (t1 - t0);
  long loops = 0;
  for (;;) {
    for (size_t i = 0; i < steady; i++) {
      table[i] = bench_alloc(bs);
      memset(table[i], 0, bs);
    }
    for (size_t i = 0; i < steady; i++) bench_free(table[i], bs);
    loops++;
    bench_status_t st;
    if (bench_read_status(&st) == 0 && bench_end_kb(&st) <= limit_kb) break;
    if (bench_now_ns() - t1 >= budget) break;
  }
  bench_unmap(table, big * sizeof(void *));
  SINK((uint64_t)loops);
}

/* ------------------------------------------------------------------------ */
/* list_traverse, tree_traverse (MallocBench list.cpp / tree.cpp): one      */
/* structure built once, then walked many times: what the allocator's       */
/* placement costs a program that reads its data.                           */

static void w_list_traverse(int tid, int P) {
  (void)tid;
  long nodes = P > 1 ? 32768L / P : 32768L;
  long times = qwork(P > 1 ? 4096 : 1024, 32);
  size_t len = (size_t)((nodes % 64) | 1);
  lnode_t *head = list_build(nodes, len);
  long seen = 0;
  for (long t = 0; t < times; t++)
    for (lnode_t *n = head; n; n = n->next) {
      CHECK(n->payload[0] == 0, "list_traverse: non-zero payload");
      seen++;
    }
  CHECK(seen == nodes * times, "list_traverse walked %ld of %ld", seen, nodes * times);
  while (head) {
    lnode_t *next = head->next;
    bench_free(head->payload, head->len);
    bench_free(head, sizeof *head);
    head = next;
  }
  SINK((uint64_t)seen);
}

static void tree_walk_check(tnode_t *n, long *count) {
  if (!n) return;
  tree_walk_check(n->left, count);
  CHECK((!n->left || n->left->id < n->id) && (!n->right || n->right->id > n->id),
        "tree_traverse ids out of order at %ld", n->id);
  ++*count;
  tree_walk_check(n->right, count);
}

static void w_tree_traverse(int tid, int P) {
  (void)tid;
  int depth = P > 1 ? 13 : 15;
  long times = qwork(P > 1 ? 512 : 256, 32);
  long next_id = 0;
  tnode_t *root = tree_build(depth, &next_id);
  for (long t = 0; t < times; t++) {
    long count = 0;
    tree_walk_check(root, &count);
    CHECK(count == next_id, "tree_traverse visited %ld of %ld", count, next_id);
  }
  CHECK(tree_release(root) == next_id, "tree_traverse release");
  SINK((uint64_t)next_id);
}

/* ------------------------------------------------------------------------ */
/* alloc_free (MallocBench alloc_free.cpp): 40,000 times malloc(128 KiB),   */
/* fill it, free it -- the size at glibc's default mmap threshold.          */

static void w_alloc_free(int tid, int P) {
  (void)tid;
  (void)P;
  const size_t size = 128 * 1024;
  long loops = qwork(40000, 64);
  uint64_t sum = 0;
  for (long i = 1; i < loops; i++) { /* the reference's while (--loops): loops - 1 times */
    unsigned char *p = bench_alloc(size);
    memset(p, 'a', size);
    sum += p[size - 1];
    bench_free(p, size);
  }
  CHECK(sum == (uint64_t)'a' * (uint64_t)(loops - 1), "alloc_free contents");
  SINK(sum);
}

/* ------------------------------------------------------------------------ */
/* stress, stress_aligned (MallocBench stress.cpp / stress_aligned.cpp):    */
/* a 100 MiB heap of objects whose sizes come in bursts (1,000 below 16     */
/* KiB, 100 below 512 KiB, 10 below 4 MiB, repeat), each filled with its    */
/* own random word; then 100 churns, each replacing 5 MiB worth of objects  */
/* at random positions, checking and freeing the replaced ones, and calling */
/* the allocator's forcing release (the reference's mbscavenge) -- inside   */
/* the timed work, for every allocator alike.                               */

typedef struct {
  long *p;
  size_t size;
  long uuid;
} sobj_t;

typedef struct {
  int state;
  long count;
} sizestream_t;

static size_t sizestream_next(sizestream_t *s) {
  static const long counts[3] = {1000, 100, 10};
  static const size_t maxes[3] = {16 * 1024, 512 * 1024, 4 * 1024 * 1024};
  int st = s->state;
  if (++s->count == counts[st]) {
    s->state = (st + 1) % 3;
    s->count = 0;
  }
  return (size_t)random() % maxes[st];
}

static sobj_t stress_new(size_t align, size_t size) {
  sobj_t o = {NULL, size, random()};
  if (align) {
    void *p = NULL;
    int rc = posix_memalign(&p, align, size);
    CHECK(rc == 0 && p, "posix_memalign(%zu, %zu) failed: %d", align, size, rc);
    CHECK(((uintptr_t)p & (align - 1)) == 0, "posix_memalign(%zu) misaligned %p", align, p);
    o.p = p;
  } else {
    o.p = bench_alloc(size);
    CHECK(o.p || !size, "malloc(%zu) failed", size);
  }
  for (size_t i = 0; i < size / sizeof(long); i++) o.p[i] = o.uuid;
  return o;
}

static void stress_free(const sobj_t *o) {
  for (size_t i = 0; i < o->size / sizeof(long); i++)
    CHECK(o->p[i] == o->uuid, "stress: object %p corrupted at word %zu", (void *)o->p, i);
  free(o->p);
}

/* 2^(random % 26) one time in 32, else 2^(random % 14), as the reference;
 * at least sizeof(void *), which posix_memalign requires (the reference's
 * smaller ones fail with EINVAL there) */
static size_t stress_alignment(void) {
  long r = random() % 32;
  size_t a = (size_t)1 << (r == 0 ? random() % 26 : random() % 14);
  return a < sizeof(void *) ? sizeof(void *) : a;
}

#define STRESS_MAX_OBJS (1 << 16)

static void stress_common(int aligned) {
  const size_t heap = (size_t)qdiv(100, 16) << 20, churn = heap / 20;
  const long churns = qwork(100, 16);
  srandom(1);
  if (aligned) {
    /* every size 0, 8, 16, ... below 2^45 with every alignment 8 .. 2^44,
     * and again 128 bytes bigger: the huge ones must fail cleanly */
    const size_t limit = 0x00001ffffffffffful;
    for (size_t size = 0; size < limit; size = (size > sizeof(void *) ? size : sizeof(void *)) * 2)
      for (int extra = 0; extra < 2; extra++)
        for (size_t a = sizeof(void *); a < limit; a *= 2) {
          void *p = NULL;
          int rc = posix_memalign(&p, a, size + (extra ? 128 : 0));
          CHECK(rc != 0 || ((uintptr_t)p & (a - 1)) == 0, "posix_memalign(%zu, %zu) misaligned: %p", a,
                size + (extra ? 128 : 0), p);
          if (rc == 0) free(p);
        }
  }
  sobj_t *objs = bench_map(STRESS_MAX_OBJS * sizeof *objs);
  sobj_t *gone = bench_map(STRESS_MAX_OBJS * sizeof *gone);
  sizestream_t ss = {0, 0};
  size_t n = 0, size = 0;
  for (size_t remaining = heap; remaining; remaining -= remaining < size ? remaining : size) {
    size = sizestream_next(&ss);
    CHECK(n < STRESS_MAX_OBJS, "stress: object table full");
    objs[n++] = stress_new(aligned ? stress_alignment() : 0, size);
  }
  for (long c = 0; c < churns; c++) {
    size_t ng = 0, bytes = 0;
    long f0 = g_churn_faults ? bench_minor_faults() : 0;
    for (size_t remaining = churn; remaining; remaining -= remaining < size ? remaining : size) {
      size = sizestream_next(&ss);
      sobj_t o = stress_new(aligned ? stress_alignment() : 0, size);
      bytes += size;
      size_t idx = (size_t)random() % n;
      CHECK(ng < STRESS_MAX_OBJS, "stress: churn table full");
      gone[ng++] = objs[idx];
      objs[idx] = o;
    }
    /* the floor for an allocator whose forcing release gave every free
     * page back: the churn's new objects are written whole, so each of
     * their pages faults once (printf here: stdout has a static buffer) */
    if (g_churn_faults)
      printf("# churn %ld: %zu kB in %zu new objects (%zu pages of 4 KiB), %ld faults writing them\n", c,
             bytes >> 10, ng, bytes >> 12, bench_minor_faults() - f0);
    for (size_t i = 0; i < ng; i++) stress_free(&gone[i]);
    bench_release();
  }
  for (size_t i = 0; i < n; i++) free(objs[i].p);
  bench_unmap(objs, STRESS_MAX_OBJS * sizeof *objs);
  bench_unmap(gone, STRESS_MAX_OBJS * sizeof *gone);
  SINK(n);
}

static void w_stress(int tid, int P) {
  (void)tid;
  (void)P;
  stress_common(0);
}

static void w_stress_aligned(int tid, int P) {
  (void)tid;
  (void)P;
  stress_common(1);
}

/* ------------------------------------------------------------------------ */
/* memalign: the reference's memalign.cpp makes two calls (alignment 128    */
/* and 2 GiB, 8 bytes each); those two, then rounds of 32 objects at every  */
/* alignment 16 B .. 1 MiB, sizes from 8 bytes to half the alignment.       */

static void w_memalign(int tid, int P) {
  (void)tid;
  (void)P;
  void *p = NULL;
  CHECK(posix_memalign(&p, 128, 8) == 0 && ((uintptr_t)p & 127) == 0, "memalign 128");
  free(p);
  p = NULL;
  int rc = posix_memalign(&p, (size_t)2 << 30, 8);
  CHECK(rc == ENOMEM || (rc == 0 && ((uintptr_t)p & (((size_t)2 << 30) - 1)) == 0),
        "memalign 2 GiB: %d", rc);
  if (rc == 0) free(p);
  long rounds = qwork(200, 20);
  void *objs[32];
  uint64_t sum = 0;
  for (long r = 0; r < rounds; r++)
    for (size_t a = 16; a <= ((size_t)1 << 20); a *= 2) {
      for (int i = 0; i < 32; i++) {
        size_t size = 8 + (a / 2) * (size_t)i / 32;
        CHECK(posix_memalign(&objs[i], a, size) == 0, "posix_memalign(%zu, %zu)", a, size);
        CHECK(((uintptr_t)objs[i] & (a - 1)) == 0, "posix_memalign(%zu) misaligned", a);
        ((unsigned char *)objs[i])[0] = 1;
        ((unsigned char *)objs[i])[size - 1] = 1;
      }
      for (int i = 0; i < 32; i++) {
        sum += ((unsigned char *)objs[i])[0];
        free(objs[i]);
      }
    }
  CHECK(sum == (uint64_t)rounds * 17 * 32, "memalign sum");
  SINK(sum);
}

/* ------------------------------------------------------------------------ */
/* realloc: the reference's realloc.cpp is empty; ours grows 1,024 buffers  */
/* from 16 bytes by 1.5x per step to about 4.7 KiB, all buffers one step at */
/* a time (so a neighbour is usually in the way of growing in place),       */
/* writing the new bytes, then shrinks each to 8 bytes; checks the bytes    */
/* realloc must keep.                                                       */

#define REALLOC_BUFS 1024

static void w_realloc(int tid, int P) {
  (void)tid;
  (void)P;
  static unsigned char *buf[REALLOC_BUFS];
  static size_t len[REALLOC_BUFS];
  long rounds = qwork(32, 8);
  uint64_t moved = 0;
  for (long r = 0; r < rounds; r++) {
    for (int i = 0; i < REALLOC_BUFS; i++) {
      len[i] = 16;
      buf[i] = bench_alloc(16);
      memset(buf[i], (int)(i & 0xff), 16);
    }
    for (int step = 0; step < 14; step++)
      for (int i = 0; i < REALLOC_BUFS; i++) {
        size_t nl = len[i] + len[i] / 2;
        unsigned char *q = realloc(buf[i], nl);
        CHECK(q && q[len[i] - 1] == (unsigned char)(i & 0xff), "realloc lost bytes");
        moved += q != buf[i];
        memset(q + len[i], (int)(i & 0xff), nl - len[i]);
        buf[i] = q;
        len[i] = nl;
      }
    for (int i = 0; i < REALLOC_BUFS; i++) {
      unsigned char *q = realloc(buf[i], 8);
      CHECK(q && q[0] == (unsigned char)(i & 0xff) && q[7] == q[0], "realloc shrink lost bytes");
      free(q);
    }
  }
  SINK(moved);
}

/* ------------------------------------------------------------------------ */
/* thread_churn: threads created and joined in waves. Each of the 4 threads */
/* of a wave allocates 2,000 objects of 16 B .. 4 KiB, frees half, and      */
/* leaves the other half to the same-numbered thread of the next wave,      */
/* which frees them after its creator has exited (cross-thread frees of a   */
/* dead thread's memory). An allocator that leaks a heap or a cache per     */
/* exited thread shows it in peak and end memory.                           */

#define TC_THREADS 4
#define TC_OBJS 2000

static void *g_tc_pass[TC_THREADS][TC_OBJS / 2]; /* wave w -> wave w+1 */

static void *tc_main(void *arg) {
  int i = (int)(intptr_t)arg;
  uint64_t rng = bench_rng_seed((uint64_t)i + 1);
  void **mine = g_tc_pass[i];
  void *keep[TC_OBJS / 2];
  uint64_t sum = 0;
  for (int k = 0; k < TC_OBJS / 2; k++) {
    if (mine[k]) {
      sum += ((unsigned char *)mine[k])[0];
      free(mine[k]);
    }
  }
  for (int k = 0; k < TC_OBJS; k++) {
    size_t size = 16 + (size_t)(bench_rng_next(&rng) % 4081);
    unsigned char *p = bench_alloc(size);
    memset(p, 1, size);
    if (k % 2) free(p);
    else keep[k / 2] = p;
  }
  memcpy(mine, keep, sizeof keep);
  SINK(sum);
  return NULL;
}

static void w_thread_churn(int tid, int P) {
  (void)tid;
  (void)P;
  long waves = qwork(200, 20);
  for (long w = 0; w < waves; w++) {
    pthread_t th[TC_THREADS];
    for (int i = 0; i < TC_THREADS; i++)
      if (pthread_create(&th[i], NULL, tc_main, (void *)(intptr_t)i) != 0)
        bench_die("pthread_create failed");
    for (int i = 0; i < TC_THREADS; i++) pthread_join(th[i], NULL);
  }
  for (int i = 0; i < TC_THREADS; i++)
    for (int k = 0; k < TC_OBJS / 2; k++) {
      free(g_tc_pass[i][k]);
      g_tc_pass[i][k] = NULL;
    }
  SINK((uint64_t)waves);
}

/* ------------------------------------------------------------------------ */
/* retention: a 64 MiB heap of mixed sizes (16 B .. 16 KiB, about          */
/* log-uniform),                                                            */
/* then 90 % of it freed at random positions; the other 10 % stays live     */
/* through the end samples, so memory at end is judged against the live    */
/* bytes (printed as live-kB and end-kB / live-kB): what fragmentation      */
/* costs. Each repetition first frees the previous one's survivors.         */

#define RET_MAX_OBJS (1 << 21)
static size_t g_live_bytes; /* what a workload leaves live for the end samples */
static void **g_ret_objs;
static size_t g_ret_n, g_ret_live;

static void w_retention(int tid, int P) {
  (void)tid;
  (void)P;
  if (!g_ret_objs) g_ret_objs = bench_map(RET_MAX_OBJS * sizeof *g_ret_objs);
  for (size_t i = 0; i < g_ret_n; i++) free(g_ret_objs[i]);
  g_ret_n = 0;
  g_ret_live = 0;
  size_t total = (size_t)qwork(64, 16) << 20, used = 0;
  uint64_t rng = bench_rng_seed(7);
  size_t n = 0;
  static size_t sizes[RET_MAX_OBJS];
  while (used < total && n < RET_MAX_OBJS) {
    /* about log-uniform: an octave 16 B .. 8 KiB picked uniformly, a
     * size uniform within it */
    size_t base = (size_t)16 << (bench_rng_next(&rng) % 10);
    size_t size = base + (size_t)(bench_rng_next(&rng) % base);
    unsigned char *p = bench_alloc(size);
    memset(p, 3, size);
    g_ret_objs[n] = p;
    sizes[n] = size;
    n++;
    used += size;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (bench_rng_next(&rng) % 10 == 0) {
      g_ret_objs[k] = g_ret_objs[i];
      g_ret_live += sizes[i];
      k++;
    } else {
      free(g_ret_objs[i]);
    }
  }
  g_ret_n = k;
  g_live_bytes = g_ret_live;
  SINK(k);
}

/* ------------------------------------------------------------------------ */
/* --rss-sample-ms N: RssAnon over time. A thread reads /proc/self/status     */
/* every N ms from before the warm-up to after the last end sample, into an */
/* mmap'd table; the samples are printed at the end as "# rss: T:KB ..."    */
/* lines (T in ms since the start), which the runner draws as a chart. One  */
/* read costs about 20 us, so at 50 ms the sampler takes 0.04 % of a CPU.   */

#define RSS_MAX 65536
static struct {
  uint32_t t_ms, kb;
} *g_rss;
static atomic_int g_rss_n, g_rss_quit;
static long g_rss_every_ms;
static uint64_t g_rss_t0;
static pthread_t g_rss_thread;

static void *rss_main(void *arg) {
  (void)arg;
  while (!atomic_load(&g_rss_quit)) {
    bench_status_t st;
    int n = atomic_load(&g_rss_n);
    if (n < RSS_MAX && bench_read_status(&st) == 0) {
      g_rss[n].t_ms = (uint32_t)((bench_now_ns() - g_rss_t0) / 1000000);
      g_rss[n].kb = (uint32_t)bench_end_kb(&st);
      atomic_store(&g_rss_n, n + 1);
    }
    bench_sleep_ms(g_rss_every_ms);
  }
  return NULL;
}

static void rss_start(long every_ms) {
  g_rss_every_ms = every_ms;
  g_rss = bench_map(RSS_MAX * sizeof *g_rss);
  g_rss_t0 = bench_now_ns();
  if (pthread_create(&g_rss_thread, NULL, rss_main, NULL) != 0) bench_die("pthread_create failed");
}

static void rss_stop_and_print(void) {
  atomic_store(&g_rss_quit, 1);
  pthread_join(g_rss_thread, NULL);
  int n = atomic_load(&g_rss_n);
  for (int i = 0; i < n; i += 64) {
    printf("# rss:");
    for (int k = i; k < n && k < i + 64; k++) printf(" %u:%u", g_rss[k].t_ms, g_rss[k].kb);
    printf("\n");
  }
}

/* ------------------------------------------------------------------------ */
/* the table of workloads                                                   */

typedef struct {
  const char *name;
  void (*run)(int tid, int nthreads);
  int no_parallel;
  void (*setup)(void);
  void (*teardown)(void);
} workload_t;

static const workload_t g_workloads[] = {
    {"churn", w_churn, 0, NULL, NULL},
    {"list_allocate", w_list_allocate, 0, NULL, NULL},
    {"tree_allocate", w_tree_allocate, 0, NULL, NULL},
    {"tree_churn", w_tree_churn, 0, NULL, NULL},
    {"fragment", w_fragment, 0, NULL, NULL},
    {"fragment_iterate", w_fragment_iterate, 0, NULL, NULL},
    {"medium", w_medium, 0, NULL, NULL},
    {"big", w_big, 0, NULL, NULL},
    {"message_one", w_message_one, 1, setup_message_one, teardown_message},
    {"message_many", w_message_many, 1, setup_message_many, teardown_message},
    {"balloon", w_balloon, 0, NULL, NULL},
    {"list_traverse", w_list_traverse, 0, NULL, NULL},
    {"tree_traverse", w_tree_traverse, 0, NULL, NULL},
    {"alloc_free", w_alloc_free, 1, NULL, NULL},
    {"stress", w_stress, 1, NULL, NULL},
    {"stress_aligned", w_stress_aligned, 1, NULL, NULL},
    {"memalign", w_memalign, 1, NULL, NULL},
    {"realloc", w_realloc, 1, NULL, NULL},
    {"thread_churn", w_thread_churn, 1, NULL, NULL},
    {"retention", w_retention, 1, NULL, NULL},
};
#define NWORKLOADS (sizeof g_workloads / sizeof g_workloads[0])

/* ------------------------------------------------------------------------ */
/* parallel pool: nthreads workers released together from a barrier         */

static pthread_barrier_t g_start, g_done;
static pthread_t *g_pool; /* mmap'd */
static int g_pool_n;
static const workload_t *g_cur;
static atomic_int g_pool_quit;

typedef struct {
  int tid;
} pool_arg_t;
static pool_arg_t *g_pool_args;

static void *pool_main(void *arg) {
  int tid = ((pool_arg_t *)arg)->tid;
  for (;;) {
    pthread_barrier_wait(&g_start);
    if (atomic_load(&g_pool_quit)) break;
    g_cur->run(tid, g_pool_n);
    pthread_barrier_wait(&g_done);
  }
  return NULL;
}

static void pool_start(int n) {
  g_pool_n = n;
  g_pool = bench_map((size_t)n * sizeof(pthread_t));
  g_pool_args = bench_map((size_t)n * sizeof(pool_arg_t));
  pthread_barrier_init(&g_start, NULL, (unsigned)n + 1);
  pthread_barrier_init(&g_done, NULL, (unsigned)n + 1);
  for (int i = 0; i < n; i++) {
    g_pool_args[i].tid = i;
    if (pthread_create(&g_pool[i], NULL, pool_main, &g_pool_args[i]) != 0)
      bench_die("pthread_create failed");
  }
}

static void pool_stop(void) {
  atomic_store(&g_pool_quit, 1);
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < g_pool_n; i++) pthread_join(g_pool[i], NULL);
  pthread_barrier_destroy(&g_start);
  pthread_barrier_destroy(&g_done);
  bench_unmap(g_pool, (size_t)g_pool_n * sizeof(pthread_t));
  bench_unmap(g_pool_args, (size_t)g_pool_n * sizeof(pool_arg_t));
}

/* One repetition; returns its wall time in ns. */
static uint64_t run_once(const workload_t *w, int parallel) {
  uint64_t t0 = bench_now_ns();
  if (parallel) {
    pthread_barrier_wait(&g_start);
    pthread_barrier_wait(&g_done);
  } else {
    w->run(0, 1);
  }
  return bench_now_ns() - t0;
}

/* ------------------------------------------------------------------------ */
/* background heap (--heap MB: the protocol's first step)                    */

#define HEAP_CHUNK_OBJS (1024 * 1024 / 32)

static void **heap_build(long mb) {
  if (mb <= 0) return NULL;
  void **top = bench_alloc((size_t)mb * sizeof(void *));
  for (long c = 0; c < mb; c++) {
    void **chunk = bench_alloc(HEAP_CHUNK_OBJS * sizeof(void *));
    for (int i = 0; i < HEAP_CHUNK_OBJS; i++) {
      chunk[i] = bench_alloc(32);
      memset(chunk[i], 0, 32);
    }
    top[c] = chunk;
  }
  return top;
}

static void heap_free(void **top, long mb) {
  if (!top) return;
  for (long c = 0; c < mb; c++) {
    void **chunk = top[c];
    for (int i = 0; i < HEAP_CHUNK_OBJS; i++) bench_free(chunk[i], 32);
  }
  for (long c = 0; c < mb; c++) bench_free(top[c], HEAP_CHUNK_OBJS * sizeof(void *));
  bench_free(top, (size_t)mb * sizeof(void *));
}

/* ------------------------------------------------------------------------ */

static void usage(void) {
  fputs("usage: bench-mallocbench --benchmark NAME [--parallel] [--runs N] [--threads N]\n"
        "         [--heap MB] [--no-warmup] [--quick] [--memory-warning] [--format=gobench]\n"
        "         [--peak-per-run] [--settle] [--libc-random] [--scale F] [--pause-ms MS]\n"
        "         [--persistent-consumers] [--rss-sample-ms MS] [--churn-faults]\n"
        "workloads:",
        stderr);
  for (size_t i = 0; i < NWORKLOADS; i++) fprintf(stderr, " %s", g_workloads[i].name);
  fputc('\n', stderr);
  exit(2);
}

int main(int argc, char **argv) {
  const char *name = NULL, *v;
  int parallel = 0, runs = 8, warmup = 1, memory_warning = 0, gobench = 0;
  int peak_per_run = 0, settle = 0, threads = 0;
  long heap_mb = 0, pause_ms = -1, rss_ms = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((v = bench_opt(argc, argv, &i, "--benchmark"))) name = v;
    else if ((v = bench_opt(argc, argv, &i, "--runs"))) runs = atoi(v);
    else if ((v = bench_opt(argc, argv, &i, "--threads"))) threads = atoi(v);
    else if ((v = bench_opt(argc, argv, &i, "--heap"))) heap_mb = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--pause-ms"))) pause_ms = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--format"))) {
      if (strcmp(v, "gobench") == 0) gobench = 1;
      else if (strcmp(v, "mallocbench") == 0) gobench = 0;
      else bench_die("unknown --format %s", v);
    } else if (!strcmp(a, "--parallel")) parallel = 1;
    else if (!strcmp(a, "--no-warmup")) warmup = 0;
    else if (!strcmp(a, "--quick")) g_quick = 1;
    else if ((v = bench_opt(argc, argv, &i, "--scale"))) {
      g_scale = atof(v);
      if (!(g_scale > 0)) bench_die("--scale needs a positive factor");
    }
    else if (!strcmp(a, "--memory-warning") || !strcmp(a, "--memory_warning")) memory_warning = 1;
    else if (!strcmp(a, "--peak-per-run")) peak_per_run = 1;
    else if (!strcmp(a, "--settle")) settle = 1;
    else if (!strcmp(a, "--persistent-consumers")) g_persistent_consumers = 1;
    else if ((v = bench_opt(argc, argv, &i, "--rss-sample-ms"))) rss_ms = atol(v);
    else if (!strcmp(a, "--libc-random")) g_libc_random = 1;
    else if (!strcmp(a, "--churn-faults")) g_churn_faults = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage();
    else if (a[0] != '-' && !name) name = a;
    else {
      fprintf(stderr, "unknown option %s\n", a);
      usage();
    }
  }
  if (!name) usage();
  const workload_t *w = NULL;
  for (size_t i = 0; i < NWORKLOADS; i++)
    if (!strcmp(g_workloads[i].name, name)) w = &g_workloads[i];
  if (!w) {
    fprintf(stderr, "unknown benchmark %s\n", name);
    usage();
  }
  if (runs < 0) runs = 0;
  g_ncpu_cfg = threads > 0 ? threads : bench_ncpu();
  if (g_quick && pause_ms < 0 && !getenv("BENCH_PAUSE_MS"))
    pause_ms = 100; /* quick mode: not for claims */

  char fullname[128];
  snprintf(fullname, sizeof fullname, "%s%s%s", name, parallel ? "_parallel" : "",
           memory_warning ? "_memory_warning" : "");
  if (parallel && w->no_parallel) {
    printf("# skip: %s does not support --parallel\n", name);
    return 0;
  }
  if (!strcmp(name, "message_many") && g_ncpu_cfg < 2) {
    printf("# skip: message_many needs at least 2 CPUs (have %d)\n", g_ncpu_cfg);
    return 0;
  }
  /* stdout gets a static buffer, so the report's printf does not allocate
   * between the end-of-run sample and the output. */
  static char outbuf[8192];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

  bench_release_init();
  if (rss_ms > 0) rss_start(rss_ms);
  g_nthreads = parallel ? g_ncpu_cfg : 1;
  void **bg = heap_build(heap_mb);
  if (w->setup) w->setup();
  if (parallel) {
    g_cur = w;
    pool_start(g_nthreads);
  }
  if (warmup) (void)run_once(w, parallel);
  if (peak_per_run) bench_reset_peak();
  long f0 = bench_minor_faults();
  uint64_t total_ns = 0;
  for (int r = 0; r < runs; r++) total_ns += run_once(w, parallel);
  long f1 = bench_minor_faults();
  if (parallel) pool_stop();
  if (w->teardown) w->teardown();
  heap_free(bg, heap_mb);
  /* Memory at end, two ways (docs/benchmarks.md "Memory at end"): first
   * unassisted -- nothing called, after a pause longer than lithe's purge
   * delay -- then after the allocator's own forcing release, the same
   * method for every allocator. */
  bench_status_t st;
  bench_read_status(&st);
  long peak = bench_peak_kb(&st);
  long pause = bench_pause_ms(pause_ms);
  if (pause > 0) bench_sleep_ms(pause);
  if (settle) { /* poll every 2 s until resident memory stops shrinking */
    bench_read_status(&st);
    long prev = bench_end_kb(&st);
    for (;;) {
      sleep(2);
      bench_read_status(&st);
      long cur = bench_end_kb(&st);
      if (cur >= prev) break;
      prev = cur;
    }
  }
  bench_read_status(&st);
  long idle_end = bench_end_kb(&st);
  const char *scav = bench_release();
  bench_read_status(&st);
  long end = bench_end_kb(&st);
  if (rss_ms > 0) { /* one more sample after the release, then stop */
    bench_sleep_ms(rss_ms);
    rss_stop_and_print();
  }
  long faults = runs > 0 ? (f1 - f0) / runs : 0;
  /* a workload that keeps data live (retention): the end figures against it */
  char livebuf[96] = "";
  if (g_live_bytes) {
    double live_kb = (double)g_live_bytes / 1024;
    int k = snprintf(livebuf, sizeof livebuf, " %.0f live-kB %.2f end-per-live", live_kb,
                     (double)end / live_kb);
    if (pause > 0)
      snprintf(livebuf + k, sizeof livebuf - (size_t)k, " %.2f unassisted-end-per-live",
               (double)idle_end / live_kb);
  }
  double mean_ns = runs > 0 ? (double)total_ns / runs : 0;

  char idlebuf[48];
  bench_print_release(scav, pause, idle_end, idlebuf, sizeof idlebuf);
  if (gobench) {
    if (runs > 0)
      printf("Benchmark%s %d %.0f ns/op %ld peak-kB %ld end-kB %ld faults%s%s\n", fullname, runs,
             mean_ns, peak, end, faults, idlebuf, livebuf);
    else
      printf("Benchmark%s 1 %ld peak-kB %ld end-kB%s\n", fullname, peak, end, idlebuf);
  } else {
    printf("Running %s [ %s ] [ don't use-thread-id ] [ heap: %ldMB ] [ runs: %d ]...\n", name,
           parallel ? "parallel" : "not parallel", heap_mb, runs);
    if (runs > 0)
      printf("Time:\t%.3fms\n", mean_ns / 1e6);
    else
      printf("Time:\tn/a\n");
    printf("Peak Memory:\t%ldkB\n", peak);
    printf("Memory at End:\t%ldkB\n", end);
    if (pause > 0) printf("Memory at End (unassisted):\t%ldkB\n", idle_end);
    printf("Minor Faults:\t%ld per run\n", faults);
  }
  if (g_quick) printf("# note: --quick sizes (not for claims)\n");
  if (g_scale != 1.0) printf("# note: --scale %g (work amount, not the workload's full size)\n", g_scale);
  if (parallel) printf("# note: %d threads\n", g_nthreads);
  return g_sink == 0xdeadbeefcafef00dull; /* never: keeps g_sink live */
}
