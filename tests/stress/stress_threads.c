/* SPDX-License-Identifier: MIT */
/* stress_threads [THREADS [OPS_PER_THREAD]]: random malloc / calloc /
 * realloc / aligned allocations and frees on several threads. Every block is
 * filled with a pattern derived from its address and size and checked before
 * it is freed or reallocated. A share of the blocks is handed to another
 * thread through a mutex-protected queue, and that thread checks, sometimes
 * reallocates, and frees it. At the end every allocation has been freed
 * exactly once: the counters must balance.
 *
 * What the tests check, in detail:
 *
 * `stress_threads`: 4 threads x 1,000,000 random malloc / calloc / realloc
 * / aligned / free, a third of the frees (and some reallocs) by another
 * thread via queues; every block patterned and checked; allocations = frees
 *
 * `stress_threads_purge0`: the same, 4 x 400,000, with
 * `LITHE_PURGE_DELAY_MS=0 LITHE_ARENA_SIZE=4m` (many small arenas, pages
 * purged at once)
 *
 * `stress_threads_collect`: the same, 3 x 400,000, while another thread
 * calls `lithe_collect(true)`, `lithe_collect(false)` and `malloc_trim(0)`
 * every 0.3 ms: purging never loses a live block's contents */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#define MAXT 16
#define SLOTS 2048
#define QCAP 65536

typedef struct {
  void *p;
  size_t n;
} blk;

typedef struct {
  pthread_mutex_t mu;
  size_t head, tail; /* tail - head items, in ring[head % QCAP ...] */
  blk ring[QCAP];
} inbox;

static inbox boxes[MAXT];
static int nthreads = 4;
static long ops_per_thread = 1000000;
static pthread_barrier_t done_ops;

static atomic_long n_alloc, n_free, n_cross, n_realloc, n_cross_realloc, n_bytes_checked;

static size_t pick_size(uint64_t *rng) {
  uint64_t r = tu_rand(rng) % 100000;
  if (r < 85000) return 1 + tu_rand(rng) % 256;
  if (r < 97000) return 257 + tu_rand(rng) % 3840;
  if (r < 99900) return 4097 + tu_rand(rng) % 61440;
  if (r < 99995) return 65537 + tu_rand(rng) % (1 << 20);
  return ((size_t)1 << 20) + tu_rand(rng) % ((size_t)8 << 20); /* rare: 1..9 MiB */
}

static void verify(const blk *b, const char *when) {
  long off = tu_check(b->p, b->n, tu_seed(b->p, b->n));
  CHECKF(off < 0,
         "%s: block %p of %zu bytes corrupted at offset %ld (byte 0x%02x): overwritten or "
         "handed out twice",
         when, b->p, b->n, off, ((unsigned char *)b->p)[off]);
  atomic_fetch_add_explicit(&n_bytes_checked, (long)b->n, memory_order_relaxed);
}

static void new_block(blk *b, uint64_t *rng) {
  size_t n = pick_size(rng);
  unsigned k = (unsigned)(tu_rand(rng) % 100);
  void *p;
  if (k < 70) {
    p = malloc(n);
  } else if (k < 85) {
    p = calloc(1, n);
    CHECKF(p != NULL, "calloc(1, %zu) failed", n);
    long nz = tu_nonzero(p, n);
    CHECKF(nz < 0, "calloc(1, %zu) = %p: byte %ld not zero", n, p, nz);
  } else if (k < 92) {
    p = realloc(NULL, n);
  } else if (k < 96) {
    size_t al = (size_t)16 << (tu_rand(rng) % 9);
    CHECK(posix_memalign(&p, al, n) == 0);
    CHECKF(((uintptr_t)p & (al - 1)) == 0, "posix_memalign(%zu) = %p", al, p);
  } else {
    size_t al = (size_t)32 << (tu_rand(rng) % 8);
    p = aligned_alloc(al, n);
    CHECKF(p && ((uintptr_t)p & (al - 1)) == 0, "aligned_alloc(%zu) = %p", al, p);
  }
  CHECKF(p != NULL, "allocation of %zu bytes failed", n);
  CHECKF(((uintptr_t)p & 15) == 0, "%p not 16-byte aligned", p);
  b->p = p;
  b->n = n;
  tu_fill(p, n, tu_seed(p, n));
  atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
}

static void free_block(blk *b, const char *when) {
  verify(b, when);
  free(b->p);
  b->p = NULL;
  atomic_fetch_add_explicit(&n_free, 1, memory_order_relaxed);
}

static void realloc_block(blk *b, uint64_t *rng) {
  verify(b, "before realloc");
  uint64_t old_seed = tu_seed(b->p, b->n);
  size_t n = tu_rand(rng) % 4 == 0 ? b->n + 1 + tu_rand(rng) % 64 : pick_size(rng);
  void *q = realloc(b->p, n);
  CHECKF(q != NULL, "realloc(%p, %zu) failed", b->p, n);
  CHECKF(((uintptr_t)q & 15) == 0, "realloc result %p misaligned", q);
  size_t keep = n < b->n ? n : b->n;
  long off = tu_check(q, keep, old_seed);
  CHECKF(off < 0, "realloc(%p, %zu -> %zu) = %p lost byte %ld", b->p, b->n, n, q, off);
  b->p = q;
  b->n = n;
  tu_fill(q, n, tu_seed(q, n));
  atomic_fetch_add_explicit(&n_realloc, 1, memory_order_relaxed);
}

static int push(int to, blk b) {
  inbox *ib = &boxes[to];
  int ok = 0;
  pthread_mutex_lock(&ib->mu);
  if (ib->tail - ib->head < QCAP) {
    ib->ring[ib->tail++ % QCAP] = b;
    ok = 1;
  }
  pthread_mutex_unlock(&ib->mu);
  return ok;
}

/* Takes up to max items from our inbox. */
static size_t pop_some(int me, blk *out, size_t max) {
  inbox *ib = &boxes[me];
  size_t got = 0;
  pthread_mutex_lock(&ib->mu);
  while (got < max && ib->head < ib->tail) out[got++] = ib->ring[ib->head++ % QCAP];
  pthread_mutex_unlock(&ib->mu);
  return got;
}

/* Blocks from other threads: check; free most, realloc some and keep them. */
static void drain(int me, blk *slots, uint64_t *rng) {
  blk got[256];
  size_t n;
  while ((n = pop_some(me, got, 256)) > 0) {
    for (size_t i = 0; i < n; i++) {
      blk b = got[i];
      if (tu_rand(rng) % 5 == 0) {
        realloc_block(&b, rng); /* realloc of another thread's block */
        atomic_fetch_add_explicit(&n_cross_realloc, 1, memory_order_relaxed);
        blk *s = &slots[tu_rand(rng) % SLOTS];
        if (s->p == NULL) {
          *s = b;
          continue;
        }
      }
      free_block(&b, "cross-thread free");
      atomic_fetch_add_explicit(&n_cross, 1, memory_order_relaxed);
    }
  }
}

static void *worker(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(me + 1);
  static __thread blk slots[SLOTS];
  for (long op = 0; op < ops_per_thread; op++) {
    if ((op & 63) == 0) drain(me, slots, &rng);
    blk *s = &slots[tu_rand(&rng) % SLOTS];
    if (s->p == NULL) {
      new_block(s, &rng);
      continue;
    }
    unsigned k = (unsigned)(tu_rand(&rng) % 100);
    if (k < 50) {
      free_block(s, "free");
    } else if (k < 70) {
      realloc_block(s, &rng);
    } else {
      int to = (int)(tu_rand(&rng) % (uint64_t)nthreads);
      if (to == me) to = (to + 1) % nthreads;
      if (nthreads > 1 && push(to, *s)) s->p = NULL;
      else free_block(s, "free");
    }
  }
  /* everyone stops handing blocks over, then empties its inbox and slots */
  pthread_barrier_wait(&done_ops);
  drain(me, slots, &rng);
  pthread_barrier_wait(&done_ops);
  drain(me, slots, &rng); /* reallocs above may not push, but be thorough */
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].p) free_block(&slots[i], "final free");
  return NULL;
}

/* STRESS_COLLECT=1: one more thread gives memory back while the workers
 * run (lithe_collect(true/false), malloc_trim(0)): a purge must never drop
 * the contents of a live block. */
static atomic_int workers_done;
static atomic_long n_collects;
static void *collector(void *arg) {
  (void)arg;
  long i = 0;
  while (!atomic_load(&workers_done)) {
#ifdef HAVE_LITHE
    if (i % 3 == 0) lithe_collect(true);
    else if (i % 3 == 1) lithe_collect(false);
    else malloc_trim(0);
#else
    malloc_trim(0);
#endif
    i++;
    usleep(300);
  }
  atomic_store(&n_collects, i);
  return NULL;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) ops_per_thread = atol(argv[2]);
  if (getenv("STRESS_OPS")) ops_per_thread = atol(getenv("STRESS_OPS"));
  CHECK(nthreads >= 1 && nthreads <= MAXT && ops_per_thread > 0);
  tu_require_lithe();
  for (int i = 0; i < nthreads; i++) pthread_mutex_init(&boxes[i].mu, NULL);
  pthread_barrier_init(&done_ops, NULL, (unsigned)nthreads);

  long rss0 = tu_status_kb("VmRSS");
  double t0 = tu_now();
  pthread_t th[MAXT], coll;
  int with_collector = getenv("STRESS_COLLECT") && atoi(getenv("STRESS_COLLECT")) > 0;
  if (with_collector) CHECK(pthread_create(&coll, NULL, collector, NULL) == 0);
  for (int i = 0; i < nthreads; i++)
    CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  double dt = tu_now() - t0;
  if (with_collector) {
    atomic_store(&workers_done, 1);
    pthread_join(coll, NULL);
    printf("a collector thread gave memory back %ld times meanwhile\n", atomic_load(&n_collects));
    CHECK(atomic_load(&n_collects) > 10);
  }

  long a = atomic_load(&n_alloc), f = atomic_load(&n_free);
  long total_ops = (long)nthreads * ops_per_thread;
  printf("threads %d, ops %ld in %.2f s (%.2f Mops/s)\n", nthreads, total_ops, dt,
         total_ops / dt / 1e6);
  printf("allocations %ld, frees %ld (cross-thread %ld), reallocs %ld (of another thread's "
         "block %ld), %.1f GiB checked\n",
         a, f, atomic_load(&n_cross), atomic_load(&n_realloc), atomic_load(&n_cross_realloc),
         atomic_load(&n_bytes_checked) / 1073741824.0);
  for (int i = 0; i < nthreads; i++)
    CHECKF(boxes[i].head == boxes[i].tail, "inbox %d not empty", i);
  CHECKF(a == f, "allocations (%ld) != frees (%ld): blocks lost", a, f);
  CHECK(atomic_load(&n_cross) > total_ops / 100);
  CHECK(atomic_load(&n_cross_realloc) > 0);
#ifdef HAVE_LITHE
  lithe_collect(true);
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("lithe after collect: committed %zu KiB, heaps live %zu / created %zu, large live %zu, "
         "xlarge live %zu\n",
         st.committed >> 10, st.heaps_live, st.heaps_created, st.large_live, st.xlarge_live);
  CHECKF(st.large_live == 0 && st.xlarge_live == 0,
         "every block was freed, yet lithe counts %zu large and %zu xlarge live", st.large_live,
         st.xlarge_live);
#else
  malloc_trim(0);
#endif
  printf("VmRSS before %ld KiB, after %ld KiB\n", rss0, tu_status_kb("VmRSS"));
  printf("stress_threads: OK\n");
  return 0;
}
