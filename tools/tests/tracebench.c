/* SPDX-License-Identifier: MIT */
/* lithe-trace-bench THREADS PAIRS: THREADS threads, each PAIRS times
 * { p = malloc(64); free(p); }, released together; prints the wall time in
 * ns per call (a pair is two calls) and per thread. Run it plain and under
 * liblithe-trace.so (tools/measure-thread-overhead.sh) for the tracer's
 * cost per call at 1, 2 and 4 threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long g_pairs;
static pthread_barrier_t g_go;
static void *volatile g_sink;

static void *worker(void *arg) {
  (void)arg;
  pthread_barrier_wait(&g_go);
  for (long i = 0; i < g_pairs; i++) {
    void *p = malloc(64);
    g_sink = p;
    free(p);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fputs("usage: lithe-trace-bench THREADS PAIRS\n", stderr);
    return 2;
  }
  int n = atoi(argv[1]);
  g_pairs = atol(argv[2]);
  if (n < 1 || n > 64 || g_pairs < 1) return 2;
  pthread_t th[64];
  pthread_barrier_init(&g_go, NULL, (unsigned)n + 1);
  for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, worker, NULL);
  struct timespec t0, t1;
  pthread_barrier_wait(&g_go);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
  /* per call of the whole program (all threads' calls over the wall time)
   * and per call of one thread (its own calls over the same wall time) */
  printf("threads %d wall %.0f ns  per-call %.2f ns  per-thread-call %.2f ns\n", n, ns,
         ns / (2.0 * (double)g_pairs * n), ns / (2.0 * (double)g_pairs));
  return 0;
}
