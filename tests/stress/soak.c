/* SPDX-License-Identifier: MIT */
/* soak [SECONDS [THREADS]] (make soak; not part of CI): mixed multi-threaded
 * work for SECONDS (default 1800) on THREADS threads (default 4), then a
 * final verification.  Each thread keeps 4096 slots of patterned blocks
 * (sizes from 1 byte to 24 MiB, skewed small; malloc, calloc, realloc up
 * and down, posix_memalign), checks each block's contents before freeing
 * or reallocating it, and hands some blocks to the next thread to check
 * and free (remote frees); threads exit and are replaced now and then
 * (their spans abandoned and adopted); a collector thread calls
 * lithe_collect(false) every 100 ms and lithe_collect(true) / malloc_trim
 * every 2 s.  Every 10 s it prints operations so far, VmRSS and lithe's
 * committed bytes.  At the end every block is checked and freed: no large
 * or xlarge object may remain, and after lithe_collect(true) the committed
 * bytes must be back near the start. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#define SLOTS 4096
#define MAXT 32
#define QCAP 1024

typedef struct { char *p; size_t n; } blk;
typedef struct {
  pthread_mutex_t mu;
  blk q[QCAP];
  size_t head, tail;
} inbox_t;

static int nthreads = 4;
static double deadline;
static inbox_t box[MAXT];
static atomic_ulong ops, checked_bytes, handed;
static atomic_int stop;

static size_t pick(uint64_t *r) {
  uint64_t x = tu_rand(r) % 100000;
  if (x < 80000) return 1 + tu_rand(r) % 512;
  if (x < 95000) return 513 + tu_rand(r) % 32768;
  if (x < 99500) return 32769 + tu_rand(r) % (2u << 20);
  if (x < 99950) return (2u << 20) + tu_rand(r) % (14u << 20);
  return (16u << 20) + tu_rand(r) % (8u << 20); /* xlarge */
}

/* big blocks are patterned at both ends (64 KiB each) to keep the rate up */
#define EDGE ((size_t)64 << 10)
static void fill(char *p, size_t n) {
  uint64_t s = tu_seed(p, n);
  if (n <= 2 * EDGE) { tu_fill(p, n, s); return; }
  tu_fill(p, EDGE, s);
  tu_fill(p + n - EDGE, EDGE, s + 1);
}
static void verify(const blk *b) {
  uint64_t s = tu_seed(b->p, b->n);
  long bad;
  if (b->n <= 2 * EDGE) bad = tu_check(b->p, b->n, s);
  else if ((bad = tu_check(b->p, EDGE, s)) < 0 && (bad = tu_check(b->p + b->n - EDGE, EDGE, s + 1)) >= 0)
    bad += (long)(b->n - EDGE);
  CHECKF(bad < 0, "block %p (%zu bytes) corrupted at offset %ld", (void *)b->p, b->n, bad);
  atomic_fetch_add_explicit(&checked_bytes, b->n < 2 * EDGE ? b->n : 2 * EDGE, memory_order_relaxed);
}

static void drain(int id) {
  inbox_t *ib = &box[id];
  for (;;) {
    pthread_mutex_lock(&ib->mu);
    if (ib->head == ib->tail) { pthread_mutex_unlock(&ib->mu); return; }
    blk b = ib->q[ib->head++ % QCAP];
    pthread_mutex_unlock(&ib->mu);
    verify(&b);
    free(b.p);
  }
}

static bool hand(int to, blk b) {
  inbox_t *ib = &box[to];
  pthread_mutex_lock(&ib->mu);
  bool ok = ib->tail - ib->head < QCAP;
  if (ok) ib->q[ib->tail++ % QCAP] = b;
  pthread_mutex_unlock(&ib->mu);
  return ok;
}

typedef struct { int id; uint64_t seed; long life; } warg;

static void *worker(void *arg) {
  warg *w = arg;
  static __thread blk slot[SLOTS];
  uint64_t r = w->seed;
  for (long i = 0; i < w->life && !atomic_load(&stop); i++) {
    blk *b = &slot[tu_rand(&r) % SLOTS];
    unsigned op = (unsigned)(tu_rand(&r) % 100);
    if (b->p) {
      verify(b);
      if (op < 10) {
        size_t n = pick(&r);
        char *q = realloc(b->p, n);
        CHECKF(q != NULL, "realloc(%zu) failed", n);
        blk nb = {q, n};
        /* the common prefix survived */
        size_t keep = b->n < n ? b->n : n;
        if (keep > EDGE) keep = EDGE;
        CHECKF(tu_check(q, keep, tu_seed(b->p, b->n)) < 0, "realloc lost contents");
        fill(q, n);
        *b = nb;
      } else if (op < 25 && hand((w->id + 1) % nthreads, *b)) {
        atomic_fetch_add_explicit(&handed, 1, memory_order_relaxed);
        b->p = NULL;
      } else {
        free(b->p);
        b->p = NULL;
      }
    } else {
      size_t n = pick(&r);
      char *p;
      if (op < 10) {
        p = calloc(1, n);
        CHECKF(p && tu_nonzero(p, n < 4096 ? n : 4096) < 0, "calloc(%zu)", n);
      } else if (op < 15) {
        void *q = NULL;
        size_t al = (size_t)64 << (tu_rand(&r) % 10);
        int rc = posix_memalign(&q, al, n);
        CHECKF(rc == 0 && ((uintptr_t)q & (al - 1)) == 0, "posix_memalign(%zu, %zu): %d, %p", al, n, rc,
               q);
        p = q;
      } else {
        p = malloc(n);
        CHECKF(p != NULL, "malloc(%zu)", n);
      }
      *b = (blk){p, n};
      fill(p, n);
    }
    if ((i & 63) == 0) drain(w->id);
    atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
  }
  for (int i = 0; i < SLOTS; i++)
    if (slot[i].p) { verify(&slot[i]); free(slot[i].p); slot[i].p = NULL; }
  drain(w->id);
  return NULL;
}

static void *collector(void *arg) {
  (void)arg;
  for (long k = 1; !atomic_load(&stop); k++) {
    usleep(100000);
    if (k % 20 == 0) { lithe_collect(true); malloc_trim(0); }
    else lithe_collect(false);
  }
  return NULL;
}

int main(int argc, char **argv) {
  tu_require_lithe();
  double secs = argc > 1 ? atof(argv[1]) : 1800;
  if (argc > 2) nthreads = atoi(argv[2]);
  CHECK(nthreads >= 1 && nthreads <= MAXT);
  for (int i = 0; i < MAXT; i++) pthread_mutex_init(&box[i].mu, NULL);
  lithe_stats_t st0, st;
  lithe_collect(true);
  lithe_stats_get(&st0);
  double t0 = tu_now();
  deadline = t0 + secs;
  pthread_t col;
  CHECK(pthread_create(&col, NULL, collector, NULL) == 0);
  pthread_t th[MAXT];
  warg wa[MAXT];
  uint64_t seed = 0x5eed;
  long generations = 0;
  for (int i = 0; i < nthreads; i++) {
    wa[i] = (warg){i, tu_mix(seed + (uint64_t)i), 200000};
    CHECK(pthread_create(&th[i], NULL, worker, &wa[i]) == 0);
  }
  double next_print = t0 + 10;
  long peak_rss = 0;
  printf("soak: %.0f s, %d threads\n   time        ops   VmRSS kB  committed kB\n", secs, nthreads);
  while (tu_now() < deadline) {
    usleep(200000);
    /* replace threads that finished their life: exit, abandon, adopt */
    for (int i = 0; i < nthreads; i++) {
      if (pthread_tryjoin_np(th[i], NULL) == 0) {
        generations++;
        wa[i] = (warg){i, tu_mix(seed + (uint64_t)(generations * MAXT + i)), 100000 + (long)(tu_mix((uint64_t)generations) % 200000)};
        CHECK(pthread_create(&th[i], NULL, worker, &wa[i]) == 0);
      }
    }
    long rss = tu_status_kb("VmRSS");
    if (rss > peak_rss) peak_rss = rss;
    if (tu_now() >= next_print) {
      lithe_stats_get(&st);
      printf("%7.0f s %10lu %10ld %12zu\n", tu_now() - t0, (unsigned long)atomic_load(&ops), rss,
             st.committed >> 10);
      fflush(stdout);
      next_print += 10;
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  pthread_join(col, NULL);
  for (int i = 0; i < MAXT; i++) drain(i); /* blocks handed to threads that have gone */
  lithe_collect(true);
  malloc_trim(0);
  lithe_stats_get(&st);
  printf("final: %lu operations in %.0f s (%.0f ops/s), %lu handed to another thread, %lu MiB "
         "checked, %ld thread generations; peak VmRSS %ld kB; now VmRSS %ld kB, committed %zu kB "
         "(%zu kB at the start), large_live %zu, xlarge_live %zu\n",
         (unsigned long)atomic_load(&ops), tu_now() - t0, atomic_load(&ops) / (tu_now() - t0),
         (unsigned long)atomic_load(&handed), (unsigned long)(atomic_load(&checked_bytes) >> 20),
         generations, peak_rss, tu_status_kb("VmRSS"), st.committed >> 10, st0.committed >> 10,
         st.large_live, st.xlarge_live);
  CHECKF(st.large_live == 0 && st.xlarge_live == 0, "objects left after freeing everything");
  CHECKF(st.committed <= st0.committed + (64u << 20), "committed %zu kB after freeing everything",
         st.committed >> 10);
  printf("soak: OK\n");
  return 0;
}
