/* SPDX-License-Identifier: MIT */
/* bench-bigchurn — large-object churn: a bounded live set of big blocks,
 * each zero-filled when allocated, as C++ value-initialisation does
 * (std::vector<T>(n), new T[n]()): operator new, then zeros written.
 *
 *   bench-bigchurn [--live N] [--min MiB] [--max MiB] [--ops N] [--calloc]
 *                  [--seed S] [--quick] [--format=gobench]
 *
 * The live set is N slots (default 16); each op picks a slot at random,
 * frees its block and allocates a new one of a random size between --min
 * and --max MiB (default 1 .. 32, uniform in 4 KiB steps), then writes
 * zeros over all of it (--calloc: calloc instead, the allocator zeroes).
 * Sizes straddle lithe's large (page runs, <= 16 MiB) and xlarge (own
 * mapping) ranges; on these machines a fresh page costs 13-16 us per
 * 4 KiB, so reusing freed memory decides the figure.  Prints
 *   Benchmarkbigchurn 1 <ns> ns/op <kB> peak-kB <kB> end-kB <n> faults <ns> cpu-ns/op
 * time and minor faults of the --ops ops (default 400; --quick 60) after
 * the live set is built, peak = VmHWM of the whole process, end = RssAnon
 * after freeing everything and the allocator's release call; cpu-ns/op =
 * the process's CPU time (user + system, every thread) in those ops, which
 * leaves out the time it waited for a CPU on a shared machine. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "common.h"

static uint64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
         (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

int main(int argc, char **argv) {
  long live = 16, ops = 400, min_mb = 1, max_mb = 32, seed = 1;
  int use_calloc = 0, quick = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if ((v = bench_opt(argc, argv, &i, "--live"))) live = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--ops"))) ops = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--min"))) min_mb = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--max"))) max_mb = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--seed"))) seed = atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--format"))) { /* always gobench */ }
    else if (!strcmp(argv[i], "--calloc")) use_calloc = 1;
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else
      bench_die("usage: bench-bigchurn [--live N] [--min MiB] [--max MiB] [--ops N] [--calloc] "
                "[--seed S] [--quick] [--format=gobench]");
  }
  if (quick) ops = ops < 60 ? ops : 60;
  if (live < 1 || live > 4096 || min_mb < 1 || max_mb < min_mb || ops < 1)
    bench_die("bench-bigchurn: need 1 <= live <= 4096, 1 <= min <= max, ops >= 1");
  bench_release_init();
  uint64_t rng = bench_rng_seed((uint64_t)seed);
  size_t lo = (size_t)min_mb << 20, span = ((size_t)(max_mb - min_mb) << 20) / 4096 + 1;
  void **slot = bench_map((size_t)live * sizeof(void *));
  size_t *len = bench_map((size_t)live * sizeof(size_t));
  uint64_t sum = 0;
#define NEW_BLOCK(i)                                                              \
  do {                                                                            \
    len[i] = lo + (size_t)(bench_rng_next(&rng) % span) * 4096;                   \
    if (use_calloc) {                                                             \
      slot[i] = calloc(1, len[i]);                                                \
    } else {                                                                      \
      slot[i] = bench_alloc(len[i]);                                              \
      if (slot[i]) memset(slot[i], 0, len[i]);                                    \
    }                                                                             \
    if (!slot[i]) bench_die("bench-bigchurn: allocating %zu bytes failed", len[i]); \
    sum += ((unsigned char *)slot[i])[len[i] - 1];                                \
  } while (0)
  for (long i = 0; i < live; i++) NEW_BLOCK(i);
  long f0 = bench_minor_faults();
  uint64_t c0 = cpu_ns();
  uint64_t t0 = bench_now_ns();
  for (long k = 0; k < ops; k++) {
    long i = (long)(bench_rng_next(&rng) % (uint64_t)live);
    bench_free(slot[i], len[i]);
    NEW_BLOCK(i);
  }
  uint64_t t1 = bench_now_ns();
  uint64_t c1 = cpu_ns();
  long f1 = bench_minor_faults();
  for (long i = 0; i < live; i++) bench_free(slot[i], len[i]);
  const char *scav = bench_release();
  bench_status_t st;
  bench_read_status(&st);
  printf("# scavenge: %s\n", scav);
  printf("# malloc: %s\n", bench_malloc_from());
  printf("# note: %ld ops, live set %ld blocks of %ld-%ld MiB, %s (checksum %llu)\n", ops, live,
         min_mb, max_mb, use_calloc ? "calloc" : "malloc+memset", (unsigned long long)sum);
  printf("Benchmarkbigchurn%s 1 %llu ns/op %ld peak-kB %ld end-kB %ld faults %llu cpu-ns/op\n",
         use_calloc ? "_calloc" : "", (unsigned long long)(t1 - t0), bench_peak_kb(&st),
         bench_end_kb(&st), f1 - f0, (unsigned long long)(c1 - c0));
  bench_unmap(slot, (size_t)live * sizeof(void *));
  bench_unmap(len, (size_t)live * sizeof(size_t));
  return 0;
}
