/* bench-cgloop MODE ITERS: the loop that callgrind-fastpath.sh counts.
 *
 *   MODE a: ITERS times { p = malloc(64); free(p); }
 *   MODE b: ITERS/100 times { 100 x malloc(64); 100 x free (same order) }
 *
 * ITERS is the number of malloc+free pairs in both modes (for b it must be a
 * multiple of 100). Built with -fno-builtin-malloc/-free, and every pointer
 * goes through a volatile sink, so the compiler keeps every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile g_sink;
static void *g_batch[100];

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "a") && strcmp(argv[1], "b"))) {
    fputs("usage: bench-cgloop a|b ITERS\n", stderr);
    return 2;
  }
  long iters = atol(argv[2]);
  if (argv[1][0] == 'a') {
    for (long i = 0; i < iters; i++) {
      void *p = malloc(64);
      g_sink = p;
      free(p);
    }
  } else {
    if (iters % 100) {
      fputs("bench-cgloop: ITERS must be a multiple of 100 in mode b\n", stderr);
      return 2;
    }
    for (long r = 0; r < iters / 100; r++) {
      for (int i = 0; i < 100; i++) g_sink = g_batch[i] = malloc(64);
      for (int i = 0; i < 100; i++) free(g_batch[i]);
    }
  }
  return 0;
}
