/* SPDX-License-Identifier: MIT */
/* bench-fastpath: nanoseconds per malloc+free pair, single-threaded and
 * across threads.
 *
 *   bench-fastpath [--quick] [--runs R] [--n N] [--sizes 16,64,...]
 *
 * For each size (default 16 64 256 1024 4096 32768):
 *   fastpath_<size>         loop { p = malloc(size); p[0] = 1; free(p) }
 *   fastpath_batch_<size>   loop { 100 x malloc(size) (first byte written);
 *                                  100 x free, in allocation order }
 *   fastpath_remote_<size>  the main thread mallocs (first byte written) and
 *                           passes the block through a bounded single-producer
 *                           single-consumer ring to a second thread, which
 *                           reads the byte and frees it (a remote free).
 * Each figure is the median of R runs (default 5, --quick 3) of N pairs;
 * ns/op = wall time of the run / N. N grows from 1,000 until one run lasts
 * about 50 ms (--quick 5 ms), capped at 2,000,000 local/batch and 100,000
 * remote (--quick 100,000 / 20,000); --n fixes it. The ring and the batch array are static
 * memory, not heap.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static volatile uint64_t g_sink;

static uint64_t run_local(size_t size, long n) {
  uint64_t t0 = bench_now_ns();
  for (long i = 0; i < n; i++) {
    char *p = malloc(size);
    p[0] = 1;
    free(p);
  }
  return bench_now_ns() - t0;
}

static uint64_t run_batch(size_t size, long n) {
  static char *batch[100];
  long rounds = n / 100;
  uint64_t t0 = bench_now_ns();
  for (long r = 0; r < rounds; r++) {
    for (int i = 0; i < 100; i++) {
      batch[i] = malloc(size);
      batch[i][0] = 1;
    }
    for (int i = 0; i < 100; i++) free(batch[i]);
  }
  return bench_now_ns() - t0;
}

/* ---- SPSC ring ---------------------------------------------------------- */
#define RING 256
static struct {
  _Alignas(64) atomic_ulong head; /* consumer position */
  _Alignas(64) atomic_ulong tail; /* producer position */
  _Alignas(64) char *slot[RING];
} g_ring;

static void backoff(unsigned *spins) {
  bench_pause();
  if ((++*spins & 63) == 0) sched_yield(); /* 2 threads may share one CPU */
}

static void *consumer(void *arg) {
  (void)arg;
  uint64_t sum = 0;
  unsigned long head = atomic_load_explicit(&g_ring.head, memory_order_relaxed);
  for (;;) {
    unsigned spins = 0;
    while (atomic_load_explicit(&g_ring.tail, memory_order_acquire) == head) backoff(&spins);
    char *p = g_ring.slot[head % RING];
    atomic_store_explicit(&g_ring.head, ++head, memory_order_release);
    if (!p) break;
    sum += (unsigned char)p[0];
    free(p);
  }
  g_sink += sum;
  return NULL;
}

static void ring_push(char *p, unsigned long *tail) {
  unsigned spins = 0;
  while (*tail - atomic_load_explicit(&g_ring.head, memory_order_acquire) >= RING) backoff(&spins);
  g_ring.slot[*tail % RING] = p;
  atomic_store_explicit(&g_ring.tail, ++*tail, memory_order_release);
}

static uint64_t run_remote(size_t size, long n) {
  pthread_t th;
  atomic_store(&g_ring.head, 0);
  atomic_store(&g_ring.tail, 0);
  if (pthread_create(&th, NULL, consumer, NULL) != 0) bench_die("pthread_create failed");
  unsigned long tail = 0;
  uint64_t t0 = bench_now_ns();
  for (long i = 0; i < n; i++) {
    char *p = malloc(size);
    p[0] = 1;
    ring_push(p, &tail);
  }
  ring_push(NULL, &tail);
  pthread_join(th, NULL);
  return bench_now_ns() - t0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef uint64_t (*runner_fn)(size_t, long);

static uint64_t g_target_ns; /* a run should last about this long */
static long g_fixed_n;       /* --n: no calibration */

/* Pick N (a multiple of 100, at most cap): grow from 1,000 until one run
 * lasts g_target_ns. The calibration runs double as the warm-up. */
static long calibrate(runner_fn fn, size_t size, long cap) {
  if (g_fixed_n > 0) {
    fn(size, g_fixed_n / 10 > 100 ? g_fixed_n / 10 / 100 * 100 : 100); /* warm-up */
    return g_fixed_n;
  }
  long n = 1000;
  for (;;) {
    uint64_t t = fn(size, n);
    if (t >= g_target_ns || n >= cap) return n;
    double next = t > 0 ? (double)n * (double)g_target_ns * 1.2 / (double)t : (double)n * 100;
    if (next > (double)n * 100) next = (double)n * 100;
    if (next < (double)n * 2) next = (double)n * 2;
    n = next > (double)cap ? cap : ((long)next + 99) / 100 * 100;
  }
}

static void measure(const char *kind, runner_fn fn, size_t size, long cap, int runs) {
  uint64_t t[64];
  if (runs > 64) runs = 64;
  long n = calibrate(fn, size, cap);
  for (int r = 0; r < runs; r++) t[r] = fn(size, n);
  qsort(t, (size_t)runs, sizeof t[0], cmp_u64);
  double med = runs % 2 ? (double)t[runs / 2] : ((double)t[runs / 2 - 1] + (double)t[runs / 2]) / 2;
  printf("Benchmarkfastpath_%s%zu %ld %.2f ns/op\n", kind, size, n, med / (double)n);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int quick = 0, runs = 0;
  long n = 0;
  size_t sizes[32] = {16, 64, 256, 1024, 4096, 32768};
  int nsizes = 6;
  const char *v;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if ((v = bench_opt(argc, argv, &i, "--runs"))) runs = atoi(v);
    else if ((v = bench_opt(argc, argv, &i, "--n"))) n = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--sizes"))) {
      nsizes = 0;
      while (*v && nsizes < 32) {
        char *end;
        sizes[nsizes++] = (size_t)strtoul(v, &end, 10);
        if (end == v) bench_die("bad --sizes");
        v = *end == ',' ? end + 1 : end;
      }
    } else if ((v = bench_opt(argc, argv, &i, "--format"))) { /* always gobench */ }
    else bench_die("usage: bench-fastpath [--quick] [--runs R] [--n N] [--sizes 16,64,...]");
  }
  if (runs <= 0) runs = quick ? 3 : 5;
  long n_local = quick ? 100000 : 2000000; /* caps on N */
  long n_remote = quick ? 20000 : 100000;
  g_target_ns = quick ? 5000000 : 50000000; /* 5 ms / 50 ms per run */
  if (n > 0) g_fixed_n = n < 100 ? 100 : n / 100 * 100; /* batch works in hundreds */
  static char outbuf[8192];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  if (g_fixed_n)
    printf("# note: median of %d runs of %ld pairs\n", runs, g_fixed_n);
  else
    printf("# note: median of %d runs; N pairs chosen for ~%.0f ms per run, at most %ld "
           "local/batch and %ld remote\n",
           runs, (double)g_target_ns / 1e6, n_local, n_remote);
  printf("# malloc: %s\n", bench_malloc_from());
  for (int s = 0; s < nsizes; s++) measure("", run_local, sizes[s], n_local, runs);
  for (int s = 0; s < nsizes; s++) measure("batch_", run_batch, sizes[s], n_local, runs);
  for (int s = 0; s < nsizes; s++) measure("remote_", run_remote, sizes[s], n_remote, runs);
  return 0;
}
