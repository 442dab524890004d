/* limitcycle — a working set cycled through sizes, for the memory limit
 * (src/limit.c): the test limit_cycle and bench/workloads/limit-bench.sh.
 *
 *   bench-limitcycle [--max-rss-mb MB]
 *
 * 12 phases, each allocating a 48 MiB working set of one size (24 KiB,
 * 200 KiB, 3 MiB, 40 KiB, 1 MiB, 16 MiB + 8 KiB: small, large, xlarge),
 * touching every byte, then freeing all but every 16th block (those stay
 * one phase more, so the free runs they split are not one run again).
 * Freed pages a phase cannot reuse stay resident for the purge delay
 * unless a limit makes lithe purge them.  VmRSS is sampled every 4 MiB.
 * Prints the time and the peak VmRSS; with --max-rss-mb, exits 1 when the
 * peak is over MB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "procstatus.h"

#define MIB ((size_t)1 << 20)
#define WS (48 * MIB)

static long peak_kb;
static void sample(void) {
  char buf[8192];
  long kb = procstatus_read(buf, sizeof buf) ? procstatus_kb(buf, "VmRSS") : -1;
  if (kb > peak_kb) peak_kb = kb;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long max_mb = argc > 2 && strcmp(argv[1], "--max-rss-mb") == 0 ? atol(argv[2]) : 0;
  static const size_t sizes[] = {24 << 10, 200 << 10, 3 << 20, 40 << 10, 1 << 20, (16 << 20) + (8 << 10)};
  enum { MAXB = (48 << 20) / (24 << 10) + 16 };
  static void *cur[MAXB], *pinned[MAXB];
  size_t npinned = 0;
  double t0 = now();
  for (int phase = 0; phase < 12; phase++) {
    size_t sz = sizes[phase % 6], n = 0, since = 0;
    for (size_t total = 0; total < WS; total += sz) {
      cur[n] = malloc(sz);
      if (!cur[n]) { fprintf(stderr, "phase %d: malloc(%zu) failed\n", phase, sz); return 1; }
      memset(cur[n], phase + 1, sz);
      n++;
      if ((since += sz) >= 4 * MIB) { sample(); since = 0; }
    }
    sample();
    for (size_t i = 0; i < npinned; i++) free(pinned[i]);
    npinned = 0;
    for (size_t i = 0; i < n; i++) {
      if (i % 16 == 0) pinned[npinned++] = cur[i];
      else free(cur[i]);
    }
    sample();
  }
  for (size_t i = 0; i < npinned; i++) free(pinned[i]);
  double secs = now() - t0;
  printf("limitcycle: 12 phases of a 48 MiB working set in %.3f s, peak VmRSS %ld kB\n", secs, peak_kb);
  printf("Benchmarklimitcycle 1 %.0f ns/op %ld peak-kB\n", secs * 1e9, peak_kb);
  if (max_mb > 0 && peak_kb > max_mb * 1024) {
    fprintf(stderr, "limitcycle: peak VmRSS %ld kB over %ld MiB\n", peak_kb, max_mb);
    return 1;
  }
  return 0;
}
