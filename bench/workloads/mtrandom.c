/* SPDX-License-Identifier: MIT */
/* bench-mtrandom — multi-threaded random sizes with cross-thread frees.
 *
 *   bench-mtrandom [--threads T] [--ops N] [--live N] [--seed S] [--quick]
 *                  [--format=gobench]
 *
 * T threads (default 4) each keep a private set of --live slots (default
 * 2048) and do N ops (default 2,000,000; --quick 50,000): pick a slot,
 * free its block, malloc a new one of a random size (log-uniform, 16 B ..
 * 32 KiB, lithe's whole small range) and write its first and last byte.
 * Every 4th op the new block is instead swapped into a shared array of
 * 4096 slots (atomic exchange) and whatever came out -- usually another
 * thread's block -- is freed here: the producer/consumer shape of a
 * program that hands work items between threads.  Prints
 *   Benchmarkmtrandom 1 <ns> ns/op <kB> peak-kB <kB> end-kB <n> faults
 * time = wall time of all threads' ops together. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "common.h"

#define SHARED 4096
static _Atomic(char *) shared[SHARED];
static long g_ops = 2000000, g_live = 2048, g_seed = 1;
static pthread_barrier_t g_bar;

static size_t rand_size(uint64_t *rng) {
  uint64_t r = bench_rng_next(rng);
  unsigned k = 4 + (unsigned)(r % 12);               /* 2^4 .. 2^15 */
  size_t lo = (size_t)1 << k;
  return lo + (size_t)((r >> 8) % lo);               /* [2^k, 2^(k+1)) */
}

static char *new_block(uint64_t *rng) {
  size_t n = rand_size(rng);
  if (n > 32768) n = 32768;
  char *p = bench_alloc(n);
  if (!p) bench_die("bench-mtrandom: malloc(%zu) failed", n);
  p[0] = 1;
  p[n - 1] = 1;
  return p;
}

static void *worker(void *arg) {
  long id = (long)(intptr_t)arg;
  uint64_t rng = bench_rng_seed((uint64_t)(g_seed * 1000 + id));
  char **slot = bench_map((size_t)g_live * sizeof(char *));
  pthread_barrier_wait(&g_bar);
  for (long k = 0; k < g_ops; k++) {
    uint64_t r = bench_rng_next(&rng);
    char *p = new_block(&rng);
    if ((k & 3) == 3) {
      char *out = atomic_exchange_explicit(&shared[r % SHARED], p, memory_order_acq_rel);
      free(out);
    } else {
      long i = (long)((r >> 16) % (uint64_t)g_live);
      free(slot[i]);
      slot[i] = p;
    }
  }
  for (long i = 0; i < g_live; i++) free(slot[i]);
  bench_unmap(slot, (size_t)g_live * sizeof(char *));
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 4;
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if ((v = bench_opt(argc, argv, &i, "--threads"))) threads = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--ops"))) g_ops = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--live"))) g_live = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--seed"))) g_seed = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--format"))) { /* always gobench */ }
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else
      bench_die("usage: bench-mtrandom [--threads T] [--ops N] [--live N] [--seed S] [--quick] "
                "[--format=gobench]");
  }
  if (quick && g_ops > 50000) g_ops = 50000;
  if (threads < 1 || threads > 256 || g_live < 1 || g_ops < 1)
    bench_die("bench-mtrandom: need 1 <= threads <= 256, live >= 1, ops >= 1");
  bench_release_init();
  pthread_t t[256];
  pthread_barrier_init(&g_bar, NULL, (unsigned)threads + 1);
  for (long i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i)) bench_die("pthread_create failed");
  long f0 = bench_minor_faults();
  pthread_barrier_wait(&g_bar);
  uint64_t t0 = bench_now_ns();
  for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
  uint64_t t1 = bench_now_ns();
  long f1 = bench_minor_faults();
  for (int i = 0; i < SHARED; i++) free(atomic_exchange(&shared[i], NULL));
  const char *scav = bench_release();
  bench_status_t st;
  bench_read_status(&st);
  printf("# scavenge: %s\n", scav);
  printf("# malloc: %s\n", bench_malloc_from());
  printf("# note: %ld threads x %ld ops, %ld private slots each, 1 op in 4 through %d shared\n",
         threads, g_ops, g_live, SHARED);
  printf("Benchmarkmtrandom 1 %llu ns/op %ld peak-kB %ld end-kB %ld faults\n",
         (unsigned long long)(t1 - t0), bench_peak_kb(&st), bench_end_kb(&st), f1 - f0);
  return 0;
}
