/* bench-cgloop MODE ITERS [SIZE [ns]]: the loop that callgrind-fastpath.sh and
 * fastpath-sweep.sh count.
 *
 *   MODE a: ITERS times { p = malloc(SIZE); free(p); }
 *   MODE b: ITERS/100 times { 100 x malloc(SIZE); 100 x free (same order) }
 *
 * SIZE defaults to 64 bytes.  With "ns" it prints the nanoseconds per pair
 * (monotonic clock around the loop), for machines without valgrind.
 *
 * ITERS is the number of malloc+free pairs in both modes (for b it must be a
 * multiple of 100). Built with -fno-builtin-malloc/-free, and every pointer
 * goes through a volatile sink, so the compiler keeps every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile g_sink;
static void *g_batch[100];

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5 || (strcmp(argv[1], "a") && strcmp(argv[1], "b")) ||
      (argc == 5 && strcmp(argv[4], "ns"))) {
    fputs("usage: bench-cgloop a|b ITERS [SIZE [ns]]\n", stderr);
    return 2;
  }
  long iters = atol(argv[2]);
  size_t size = argc >= 4 ? (size_t)atol(argv[3]) : 64;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (argv[1][0] == 'a') {
    for (long i = 0; i < iters; i++) {
      void *p = malloc(size);
      g_sink = p;
      free(p);
    }
  } else {
    if (iters % 100) {
      fputs("bench-cgloop: ITERS must be a multiple of 100 in mode b\n", stderr);
      return 2;
    }
    for (long r = 0; r < iters / 100; r++) {
      for (int i = 0; i < 100; i++) g_sink = g_batch[i] = malloc(size);
      for (int i = 0; i < 100; i++) free(g_batch[i]);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (argc == 5)
    printf("%.2f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                         (double)(iters ? iters : 1));
  return 0;
}
