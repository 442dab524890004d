/* SPDX-License-Identifier: MIT */
/* bench-heaps: request-scoped allocation, per-object free() against one
 * lithe_heap_destroy.  Each request allocates OBJECTS objects of mixed
 * sizes (16..512 bytes, one in 16 of 1..4 KiB), writes into each, then
 * gives them all back: the "free" form frees them one by one, the "heap"
 * form allocated them from a lithe_heap_t and destroys it.  The two forms
 * alternate request by request; each prints the median time of the release
 * and of the whole request, and their ratio.  Then the memory: VmRSS
 * before the heap requests and after the last destroy + lithe_collect(true)
 * (the heap form must give its memory back: exit 1 beyond 1 MiB).
 *   bench-heaps [--requests N] [--objects M] [--quick]
 * Links lithe (the heap API is lithe's own). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <lithe.h>
#include "procstatus.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long rss_kb(void) {
  static char buf[16384];
  procstatus_read(buf, sizeof buf);
  return procstatus_kb(buf, "VmRSS");
}

int main(int argc, char **argv) {
  int requests = 400, objects = 20000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--requests") && i + 1 < argc) requests = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--objects") && i + 1 < argc) objects = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) requests = 40;
    else { fprintf(stderr, "usage: bench-heaps [--requests N] [--objects M] [--quick]\n"); return 2; }
  }
  size_t *size = malloc((size_t)objects * sizeof *size);
  void **obj = malloc((size_t)objects * sizeof *obj);
  double *rel_free = malloc((size_t)requests * sizeof(double)), *rel_heap = malloc((size_t)requests * sizeof(double));
  double *all_free = malloc((size_t)requests * sizeof(double)), *all_heap = malloc((size_t)requests * sizeof(double));
  if (!size || !obj || !rel_free || !rel_heap || !all_free || !all_heap) return 1;
  uint64_t r = 88172645463325252ull;
  size_t bytes = 0;
  for (int i = 0; i < objects; i++) {
    r ^= r << 13; r ^= r >> 7; r ^= r << 17;
    size[i] = i % 16 == 0 ? 1 + r % 4096 : 16 + r % 497;
    bytes += size[i];
  }
  lithe_collect(true);
  long rss0 = rss_kb();
  for (int q = 0; q < requests; q++) {
    /* per-object free */
    double t0 = now_ns();
    for (int i = 0; i < objects; i++) {
      obj[i] = malloc(size[i]);
      memset(obj[i], i, 8);
    }
    double t1 = now_ns();
    for (int i = 0; i < objects; i++) free(obj[i]);
    double t2 = now_ns();
    rel_free[q] = t2 - t1;
    all_free[q] = t2 - t0;
    /* one heap, destroyed */
    t0 = now_ns();
    lithe_heap_t *h = lithe_heap_new();
    for (int i = 0; i < objects; i++) {
      obj[i] = lithe_heap_malloc(h, size[i]);
      memset(obj[i], i, 8);
    }
    t1 = now_ns();
    lithe_heap_destroy(h);
    t2 = now_ns();
    rel_heap[q] = t2 - t1;
    all_heap[q] = t2 - t0;
  }
  long rss_end_nocollect = rss_kb();
  lithe_collect(true);
  long rss1 = rss_kb();
  double rf = median(rel_free, requests), rh = median(rel_heap, requests);
  double af = median(all_free, requests), ah = median(all_heap, requests);
  printf("bench-heaps: %d requests of %d objects (%zu bytes) each, forms interleaved, medians\n", requests,
         objects, bytes);
  printf("release  free() each: %10.1f us   lithe_heap_destroy: %8.1f us   destroy %.1fx faster\n", rf / 1e3,
         rh / 1e3, rf / rh);
  printf("request  free() each: %10.1f us   heap form:          %8.1f us   heap form %.2fx\n", af / 1e3,
         ah / 1e3, af / ah);
  printf("VmRSS: %ld kB before, %ld kB after the last request, %ld kB after lithe_collect(true): %+ld kB\n",
         rss0, rss_end_nocollect, rss1, rss1 - rss0);
  /* memory is not timing: the heap form must give its pages back */
  if (rss1 - rss0 > 1024) {
    printf("FAIL: VmRSS %+ld kB after destroy + collect (more than 1 MiB)\n", rss1 - rss0);
    return 1;
  }
  return 0;
}
