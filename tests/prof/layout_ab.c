/* SPDX-License-Identifier: MIT */
/* layout_ab — what does profiling at the default rate cost bench-mallocbench
 * churn's loop itself, with the heap laid out alike?  Not a ctest (it
 * prints times): tests/prof/layout-ab.sh builds and runs it under
 * LD_PRELOAD=build/liblithe.so LITHE_PROF=1, the code and TLS model the
 * benchmark runs.
 *
 * One process runs churn's loop (malloc(8), write, add into a
 * heap-allocated accumulator, free) in chunks of N pairs, R rounds,
 * interleaved round-robin over:
 *   - off@OFF for each page offset OFF given (hex): sampling switched off
 *     for the chunk (prof_mode = PROF_OFF, the heap's prof_left =
 *     INTPTR_MAX, as prof.c sets them) and the hot block forced to a block
 *     at that page offset (all candidates held; the chosen one freed just
 *     before the chunk, so it is the bin's head);
 *   - on: sampling on, the hot block wherever sampling left it.
 * Thread CPU time per pair; the median of each, and of the per-round ratio
 * on / the first off.  prof_mode's offset in liblithe.so comes from nm
 * (PROF_MODE_OFF, hex); the heap is the first word of liblithe's static
 * TLS block (lithe_tls_heap, at TLS offset 0). */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static __attribute__((noinline)) void churn(double *acc, long n) {
  for (long j = 0; j < n; j++) {
    double *q = malloc(8);
    *q = (double)j;
    *acc += *q;
    free(q);
  }
}
static uintptr_t base;
static void *tls;
static int find_lithe(struct dl_phdr_info *i, size_t sz, void *d) {
  (void)sz, (void)d;
  if (!strstr(i->dlpi_name, "liblithe")) return 0;
  base = i->dlpi_addr;
  tls = i->dlpi_tls_data;
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4 || !getenv("PROF_MODE_OFF")) {
    fprintf(stderr, "usage: PROF_MODE_OFF=hex %s N ROUNDS OFFSET... (LD_PRELOAD liblithe.so, LITHE_PROF=1)\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]);
  int rounds = atoi(argv[2]), noff = argc - 3;
  if (noff > 32) noff = 32;
  dl_iterate_phdr(find_lithe, NULL);
  if (!base || !tls) { fprintf(stderr, "liblithe.so is not loaded\n"); return 2; }
  int *mode = (int *)(base + strtoul(getenv("PROF_MODE_OFF"), NULL, 16));
  double *acc = malloc(8);
  *acc = 0;
  heap_t *h = *(heap_t **)tls;
  if (*mode != PROF_SAMPLE) { fprintf(stderr, "run with LITHE_PROF=1 (mode %d)\n", *mode); return 2; }
  unsigned off[32];
  void *blk[32] = {0};
  for (int i = 0; i < noff; i++) off[i] = (unsigned)strtoul(argv[i + 3], NULL, 16);
  static void *held[100000];
  int nheld = 0, found = 0;
  while (found < noff && nheld < 100000) {
    void *p = malloc(8);
    int used = 0;
    for (int i = 0; i < noff && !used; i++)
      if (!blk[i] && ((uintptr_t)p & 0xfff) == off[i]) blk[i] = p, found++, used = 1;
    if (!used) held[nheld++] = p;
  }
  if (found < noff) { fprintf(stderr, "not every offset found\n"); return 1; }
  printf("heap %p (prof_left at %p), accumulator %p\n", (void *)h, (void *)&h->prof_left, (void *)acc);
  int k = noff + 1;
  double *t = calloc((size_t)k * rounds, sizeof *t), *ratio = calloc(rounds, sizeof *ratio);
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < k; j++) {
      int c = (j + r) % k;
      double t0;
      if (c < noff) {
        intptr_t saved = h->prof_left;
        *mode = PROF_OFF;
        h->prof_left = INTPTR_MAX;
        free(blk[c]);
        t0 = now_ns();
        churn(acc, n);
        t[c * rounds + r] = (now_ns() - t0) / n;
        if (malloc(8) != blk[c]) fprintf(stderr, "the hot block moved\n");
        *mode = PROF_SAMPLE;
        h->prof_left = saved;
      } else {
        t0 = now_ns();
        churn(acc, n);
        t[c * rounds + r] = (now_ns() - t0) / n;
      }
    }
  for (int r = 0; r < rounds; r++) ratio[r] = t[noff * rounds + r] / t[r];
  for (int c = 0; c < k; c++) {
    qsort(t + c * rounds, rounds, sizeof *t, cmp);
    if (c < noff) printf("off, hot block at page offset 0x%03x", off[c]);
    else printf("on, hot block where sampling left it ");
    printf(": median %.2f ns a pair (quartiles %.2f %.2f)\n", t[c * rounds + rounds / 2],
           t[c * rounds + rounds / 4], t[c * rounds + 3 * rounds / 4]);
  }
  qsort(ratio, rounds, sizeof *ratio, cmp);
  printf("on / off@0x%03x per round: median %.3f (quartiles %.3f %.3f)\n", off[0], ratio[rounds / 2],
         ratio[rounds / 4], ratio[3 * rounds / 4]);
  for (int i = 0; i < nheld; i++) free(held[i]);
  return 0;
}
