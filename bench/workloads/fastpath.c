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
 * ns/op = wall time of the run / N. The ring and the batch array are static
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

static void measure(const char *kind, runner_fn fn, size_t size, long n, int runs) {
  uint64_t t[64];
  if (runs > 64) runs = 64;
  fn(size, n / 10 > 0 ? n / 10 : 1); /* warm-up */
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
  long n_local = n > 0 ? n : quick ? 100000 : 2000000;
  long n_remote = n > 0 ? n : quick ? 20000 : 100000;
  n_local = n_local / 100 * 100; /* the batch variant works in hundreds */
  if (n_local < 100) n_local = 100;
  static char outbuf[8192];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  printf("# note: median of %d runs; %ld pairs local/batch, %ld pairs remote\n", runs, n_local,
         n_remote);
  for (int s = 0; s < nsizes; s++) measure("", run_local, sizes[s], n_local, runs);
  for (int s = 0; s < nsizes; s++) measure("batch_", run_batch, sizes[s], n_local, runs);
  for (int s = 0; s < nsizes; s++) measure("remote_", run_remote, sizes[s], n_remote, runs);
  return 0;
}
