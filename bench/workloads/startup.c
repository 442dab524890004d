/* SPDX-License-Identifier: MIT */
/* bench-startup: many threads make their first allocation at the same
 * instant: the method of snmalloc's startup benchmark (issue #639, "Startup
 * improvements"), which showed a new thread's first allocation can be cheap.
 *
 *   bench-startup [--threads T] [--cold | --warm-main] [--format=gobench]
 *
 * T threads (default 64) arrive at a barrier made of an atomic counter; the
 * last one to arrive reads the clock into `start` and releases the others,
 * who spin with the CPU pause hint. Each then does malloc(1)/free and records
 * its own ticks; the last to finish reads the clock into `end`. Reported:
 * end - start in ticks (rdtsc on x86-64) and in ns (ticks converted with a
 * calibration against CLOCK_MONOTONIC), and every thread's own time.
 *
 * --warm-main (default): the main thread does one malloc(1)/free before
 * creating the threads, so process-wide allocator initialisation is outside
 * the window. --cold skips it (pthread_create may still allocate through
 * malloc for the new thread's TLS, so "cold" is as cold as glibc allows).
 * Per-thread results live in mmap'd memory, never in the heap under test.
 *
 * --serial: the threads are started one at a time, each doing its first
 * malloc(1)/free alone while the ones before it stay alive (blocked), so no
 * heap is reused and nothing runs beside it: the cost of one thread's first
 * pair without the scheduling and lock waits of the simultaneous start,
 * steady enough to compare on a loaded machine.  Reported: the median and
 * minimum of the threads' own ticks and their minor faults per thread:
 *   Benchmarkstartup_serial[-T] 1 <median ticks> cycles <min> min-cycles
 *       <faults> faults/thread
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static int g_T;
static int g_oversubscribed; /* more threads than CPUs: yield while spinning */
static atomic_int g_arrived, g_finished, g_go;
static uint64_t g_start, g_end;
static uint64_t *g_own; /* per-thread alloc+free ticks (mmap'd) */
static void *volatile g_sink;

static void spin_until_go(void) {
  unsigned spins = 0;
  while (!atomic_load_explicit(&g_go, memory_order_acquire)) {
    bench_pause();
    if (g_oversubscribed && (++spins & 255) == 0) sched_yield();
  }
}

static void *thread_main(void *arg) {
  int idx = (int)(intptr_t)arg;
  if (atomic_fetch_add(&g_arrived, 1) + 1 == g_T) {
    g_start = bench_ticks();
    atomic_store_explicit(&g_go, 1, memory_order_release);
  } else {
    spin_until_go();
  }
  uint64_t t0 = bench_ticks();
  void *p = malloc(1);
  *(volatile char *)p = 1;
  __atomic_store_n(&g_sink, p, __ATOMIC_RELAXED);
  free(p);
  uint64_t t1 = bench_ticks();
  g_own[idx] = t1 - t0;
  if (atomic_fetch_add(&g_finished, 1) + 1 == g_T) g_end = bench_ticks();
  return NULL;
}

/* --serial: thread idx times its first pair alone, then waits for the end */
static uint64_t *g_faults; /* per-thread minor faults of the pair (mmap'd) */
static atomic_int g_turn, g_release;

static long thread_faults(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

static void *serial_main(void *arg) {
  int idx = (int)(intptr_t)arg;
  long f0 = thread_faults();
  uint64_t t0 = bench_ticks();
  void *p = malloc(1);
  *(volatile char *)p = 1;
  __atomic_store_n(&g_sink, p, __ATOMIC_RELAXED);
  free(p);
  uint64_t t1 = bench_ticks();
  g_faults[idx] = (uint64_t)(thread_faults() - f0);
  g_own[idx] = t1 - t0;
  atomic_store_explicit(&g_turn, idx + 1, memory_order_release);
  while (!atomic_load_explicit(&g_release, memory_order_acquire)) sched_yield();
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int warm = 1, gobench = 0, serial = 0;
  g_T = 64;
  const char *v;
  for (int i = 1; i < argc; i++) {
    if ((v = bench_opt(argc, argv, &i, "--threads"))) g_T = atoi(v);
    else if ((v = bench_opt(argc, argv, &i, "--format"))) gobench = !strcmp(v, "gobench");
    else if (!strcmp(argv[i], "--cold")) warm = 0;
    else if (!strcmp(argv[i], "--warm-main")) warm = 1;
    else if (!strcmp(argv[i], "--serial")) serial = 1;
    else if (!strcmp(argv[i], "--quick")) { /* already one sample per process */ }
    else bench_die("usage: bench-startup [--threads T] [--cold|--warm-main] [--serial] [--format=gobench]");
  }
  if (g_T < 1) g_T = 1;
  g_oversubscribed = g_T > bench_ncpu();
  static char outbuf[16384]; /* stdout must not allocate either */
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

  if (warm) {
    void *p = malloc(1);
    *(volatile char *)p = 1;
    g_sink = p;
    free(p);
  }
  double hz = bench_tick_hz(20);
  g_own = bench_map((size_t)g_T * sizeof(uint64_t));
  pthread_t *th = bench_map((size_t)g_T * sizeof(pthread_t));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  if (serial) {
    g_faults = bench_map((size_t)g_T * sizeof(uint64_t));
    for (int i = 0; i < g_T; i++) {
      if (pthread_create(&th[i], &attr, serial_main, (void *)(intptr_t)i) != 0)
        bench_die("pthread_create %d failed", i);
      while (atomic_load_explicit(&g_turn, memory_order_acquire) != i + 1) sched_yield();
    }
    atomic_store_explicit(&g_release, 1, memory_order_release);
    for (int i = 0; i < g_T; i++) pthread_join(th[i], NULL);
    uint64_t faults = 0;
    for (int i = 0; i < g_T; i++) faults += g_faults[i];
    qsort(g_own, (size_t)g_T, sizeof *g_own, cmp_u64);
    printf("# note: %d threads started one at a time, %s main, clock %s at %.3f GHz\n", g_T,
           warm ? "warm" : "cold", BENCH_TICK_UNIT, hz / 1e9);
    printf("# malloc: %s\n", bench_malloc_from());
    char suffix[16] = "";
    if (g_T > 1) snprintf(suffix, sizeof suffix, "-%d", g_T);
    printf("Benchmarkstartup_serial%s 1 %llu %s %llu min-%s %.2f faults/thread\n", suffix,
           (unsigned long long)g_own[g_T / 2], BENCH_TICK_UNIT,
           (unsigned long long)g_own[0], BENCH_TICK_UNIT, (double)faults / g_T);
    return 0;
  }
  for (int i = 0; i < g_T; i++)
    if (pthread_create(&th[i], &attr, thread_main, (void *)(intptr_t)i) != 0)
      bench_die("pthread_create %d failed", i);
  for (int i = 0; i < g_T; i++) pthread_join(th[i], NULL);

  uint64_t taken = g_end - g_start;
  double ns = (double)taken * 1e9 / hz;
  qsort(g_own, (size_t)g_T, sizeof *g_own, cmp_u64);
  printf("# note: %d threads, %s main, clock %s at %.3f GHz%s\n", g_T, warm ? "warm" : "cold",
         BENCH_TICK_UNIT, hz / 1e9, g_oversubscribed ? ", oversubscribed (spin yields)" : "");
  if (!gobench) {
    printf("Taken: %llu\n", (unsigned long long)taken);
    uint64_t prev = 0;
    for (int i = 0; i < g_T; i++) {
      printf("Thread time %llu (%llu)\n", (unsigned long long)g_own[i],
             (unsigned long long)(g_own[i] - prev));
      prev = g_own[i];
    }
  }
  printf("# malloc: %s\n", bench_malloc_from());
  if (g_T == 1)
    printf("Benchmarkstartup 1 %llu %s %.0f ns/op\n", (unsigned long long)taken, BENCH_TICK_UNIT, ns);
  else
    printf("Benchmarkstartup-%d 1 %llu %s %.0f ns/op\n", g_T, (unsigned long long)taken,
           BENCH_TICK_UNIT, ns);
  return 0;
}
