/* SPDX-License-Identifier: MIT */
/* limitcycle — a working set cycled through sizes, for the memory limit
 * (src/limit.c): the test limit_cycle and lithe-bench's rows limitcycle
 * and limitcycle_limit80m.
 *
 *   bench-limitcycle [--max-rss-mb MB] [--limit SIZE] [--quick]
 *
 * 12 phases (6 with --quick), each allocating a 48 MiB working set of one
 * size (24 KiB, 200 KiB, 3 MiB, 40 KiB, 1 MiB, 16 MiB + 8 KiB: small,
 * large, xlarge), touching every byte, then freeing all but every 16th
 * block (those stay one phase more, so the free runs they split are not
 * one run again).  Freed pages a phase cannot reuse stay resident for the
 * purge delay unless a limit makes lithe purge them.  VmRSS is sampled
 * every 4 MiB.  Prints the time and that peak VmRSS, then
 * Benchmarklimitcycle 1 <ns> ns/op <kB> peak-kB <kB> end-kB <n> faults
 * with the suite's peak (VmHWM - RssFile - RssShmem), end (RssAnon after
 * the allocator's forcing release) and the minor page faults of the
 * phases; with --max-rss-mb, exits 1 when the
 * sampled VmRSS peak is over MB.
 *
 * --limit SIZE runs the same work with LITHE_MEMORY_LIMIT=SIZE: the
 * program sets it and executes itself again (lithe reads its options when
 * it is loaded), and names its figures limitcycle_limitSIZE.  So one
 * program gives lithe-bench the "with and without the limit" pair (its
 * runner sets no per-benchmark environment); other allocators ignore the
 * variable and run the same work twice. */
#define _GNU_SOURCE
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common.h"
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
  long max_mb = 0;
  const char *limit = NULL;
  int phases = 12;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if ((v = bench_opt(argc, argv, &i, "--max-rss-mb"))) max_mb = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--limit"))) limit = v;
    else if (!strcmp(argv[i], "--quick")) phases = 6;
    else bench_die("usage: bench-limitcycle [--max-rss-mb MB] [--limit SIZE] [--quick]");
  }
  if (limit) {
    const char *cur = getenv("LITHE_MEMORY_LIMIT");
    if (!cur || strcmp(cur, limit) != 0) {
      if (setenv("LITHE_MEMORY_LIMIT", limit, 1) != 0) bench_die("setenv failed");
      execv("/proc/self/exe", argv);
      bench_die("execv /proc/self/exe: cannot run again with LITHE_MEMORY_LIMIT=%s", limit);
    }
  }
  bench_release_init();
  static const size_t sizes[] = {24 << 10, 200 << 10, 3 << 20, 40 << 10, 1 << 20, (16 << 20) + (8 << 10)};
  enum { MAXB = (48 << 20) / (24 << 10) + 16 };
  static void *cur[MAXB], *pinned[MAXB];
  size_t npinned = 0;
  long f0 = bench_minor_faults();
  double t0 = now();
  for (int phase = 0; phase < phases; phase++) {
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
  long faults = bench_minor_faults() - f0; /* what purging at once costs: pages touched again */
  /* the suite's figures: peak = VmHWM - RssFile - RssShmem (exact, where
   * the sampled VmRSS above may miss a spike), end = RssAnon after the
   * allocator's own forcing release */
  const char *scav = bench_release();
  bench_status_t st;
  bench_read_status(&st);
  printf("# scavenge: %s\n", scav);
  printf("# malloc: %s\n", bench_malloc_from());
  if (limit) printf("# note: LITHE_MEMORY_LIMIT=%s (only lithe reads it)\n", limit);
  printf("limitcycle: %d phases of a 48 MiB working set in %.3f s, peak VmRSS %ld kB\n", phases, secs,
         peak_kb);
  printf("Benchmarklimitcycle%s%s 1 %.0f ns/op %ld peak-kB %ld end-kB %ld faults\n", limit ? "_limit" : "",
         limit ? limit : "", secs * 1e9, bench_peak_kb(&st), bench_end_kb(&st), faults);
  if (max_mb > 0 && peak_kb > max_mb * 1024) {
    fprintf(stderr, "limitcycle: peak VmRSS %ld kB over %ld MiB\n", peak_kb, max_mb);
    return 1;
  }
  return 0;
}
