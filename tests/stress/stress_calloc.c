/* SPDX-License-Identifier: MIT */
/* stress_calloc [THREADS [ROUNDS]]: calloc must return zeroed memory even when
 * the memory it reuses was dirtied and freed a moment ago by another thread.
 * Threads allocate dirty blocks (small, large and a few xlarge), hand them to
 * a neighbour which frees them, and calloc blocks of the same sizes, checking
 * every byte is zero.
 *
 * What the tests check, in detail:
 *
 * `stress_calloc`: 4 threads: dirty blocks (some reallocated) handed to a
 * neighbour that frees them, while calloc of similar sizes (small .. 4 MiB,
 * a few >= 64 MiB) must read zero (head, tail and every page) */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#define MAXT 8
#define Q 64

typedef struct {
  pthread_mutex_t mu;
  int n;
  void *p[Q];
} box;

static box boxes[MAXT];
static int nthreads = 4;
static long rounds = 20000;
static atomic_long n_calloc, n_bytes;

static size_t pick(uint64_t *rng) {
  uint64_t r = tu_rand(rng) % 1000;
  if (r < 500) return 1 + tu_rand(rng) % 2048;
  if (r < 950) return 2048 + tu_rand(rng) % 200000;
  if (r < 999) return 200000 + tu_rand(rng) % ((size_t)4 << 20);
  return ((size_t)64 << 20) + tu_rand(rng) % ((size_t)8 << 20); /* xlarge */
}

/* head, tail and the first byte of every page */
static void dirty(unsigned char *d, size_t n) {
  memset(d, 0xEE, n < 65536 ? n : 65536);
  if (n > 65536) memset(d + n - 65536, 0xEE, 65536);
  for (size_t pg = 0; pg < n; pg += 4096) d[pg] = 0xEE;
}

static void *worker(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t rng = 31337 + (uint64_t)me * 7919;
  for (long r = 0; r < rounds; r++) {
    /* a dirty block for the neighbour to free */
    size_t n = pick(&rng);
    unsigned char *d = malloc(n);
    CHECK(d != NULL);
    dirty(d, n);
    if (tu_rand(&rng) % 3 == 0) { /* grown or shrunk, in place or moved */
      n = tu_rand(&rng) % 2 ? pick(&rng) : n / 2 + 1;
      d = realloc(d, n);
      CHECK(d != NULL);
      dirty(d, malloc_usable_size(d));
    }
    box *b = &boxes[(me + 1) % nthreads];
    pthread_mutex_lock(&b->mu);
    if (b->n < Q) {
      b->p[b->n++] = d;
      d = NULL;
    }
    pthread_mutex_unlock(&b->mu);
    free(d); /* NULL when handed over */
    /* free what others handed to us */
    void *mine[Q];
    int k = 0;
    b = &boxes[me];
    pthread_mutex_lock(&b->mu);
    k = b->n;
    memcpy(mine, b->p, sizeof(void *) * (size_t)k);
    b->n = 0;
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < k; i++) free(mine[i]);
    /* calloc: every byte zero (head and tail fully, the middle sampled) */
    size_t m = pick(&rng);
    unsigned char *c = tu_rand(&rng) % 2 ? calloc(1, m) : calloc(m, 1);
    CHECK(c != NULL);
    size_t head = m < 65536 ? m : 65536;
    long off = tu_nonzero(c, head);
    if (off < 0 && m > head) {
      off = tu_nonzero(c + m - 65536, 65536);
      if (off >= 0) off += (long)(m - 65536);
      for (size_t pg = 0; off < 0 && pg < m; pg += 4096)
        if (c[pg]) off = (long)pg;
    }
    CHECKF(off < 0, "thread %d round %ld: calloc(%zu) = %p: byte %ld is 0x%02x, not zero "
           "(usable %zu)", me, r, m, (void *)c, off, c[off], malloc_usable_size(c));
    memset(c, 0xDD, head);
    free(c);
    atomic_fetch_add_explicit(&n_calloc, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_bytes, (long)m, memory_order_relaxed);
  }
  return NULL;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) rounds = atol(argv[2]);
  CHECK(nthreads >= 2 && nthreads <= MAXT);
  tu_require_lithe();
  for (int i = 0; i < MAXT; i++) pthread_mutex_init(&boxes[i].mu, NULL);
  double t0 = tu_now();
  pthread_t th[MAXT];
  for (int i = 0; i < nthreads; i++)
    CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < nthreads; i++)
    for (int j = 0; j < boxes[i].n; j++) free(boxes[i].p[j]);
  printf("calloc: %ld blocks, %.1f GiB, all zero, on %d threads in %.2f s\n",
         atomic_load(&n_calloc), atomic_load(&n_bytes) / 1073741824.0, nthreads, tu_now() - t0);
  printf("stress_calloc: OK\n");
  return 0;
}
