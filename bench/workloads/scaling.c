/* SPDX-License-Identifier: MIT */
/* bench-scaling: fixed-size block cache scaling across thread counts
 * (the shape of Go's BenchmarkStackGrowth, whose goroutines take and free
 * stack blocks: Go's CL 4657091 removed the central lock it contended on).
 *
 *   bench-scaling [--cpu=1,2,4,8,16] [--depth N] [--block B] [--deep]
 *       [--benchtime 1s|500ms|1000x] [--mode batch|loop] [--count K] [--quick]
 *
 * One op = allocate `depth` blocks of `block` bytes in sequence, writing each
 * block's first cache line (a new "frame") and checking its first word, then
 * free them in reverse order (stack unwinding).
 *
 * batch mode (default, the 2011 Go form): N ops are split into batches of
 * 1000 taken from a shared atomic counter by P threads, each batch preceded
 * by sched_yield(). loop mode (modern RunParallel form): threads claim chunks
 * of ops from the counter without yielding.
 *
 * N grows like Go's testing package until one run lasts >= --benchtime; that
 * run is reported as Benchmark<name>[-P] N <ns/op> ns/op <cpu> cpu-ns/op,
 * ns/op = wall time of the run / N (total ops of all threads), so perfect
 * scaling shows as ns/op falling in proportion to P; cpu-ns/op = the CPU
 * time the process used in the run (all threads, user and system) / N,
 * which on a machine shared with other jobs does not count the time the
 * threads waited for a CPU (on C cores with P > C it stays flat where the
 * wall figure stops falling: more threads than cores is contention, not
 * parallelism).
 *
 * Batch mode also times each batch of 1000 ops on the thread that runs it
 * and prints, after the Benchmark line, the fastest and the median batch
 * of the run (`# batches: ...`, ns per op of one thread): the fastest is
 * the op's cost where no other job took the CPU or its caches, steady
 * within a few per cent from run to run on a loaded 2-core machine where
 * ns/op wanders 30 % (docs/design.md, "Threads", compares it with a free
 * list that does nothing else, build/libbench-floor-lifo.so).
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BATCH 1000

static long g_depth = 3;
static size_t g_block = 4096;
static int g_loop_mode;

static pthread_barrier_t g_start, g_done;
static int g_P;
static atomic_int g_quit;
static long g_N;           /* ops in this run */
static long g_grain;       /* loop mode chunk */
static atomic_long g_next; /* next batch (batch mode) or next op (loop mode) */
static atomic_long g_ops_done;
static void ***g_stacks; /* per-thread block stacks, mmap'd */
/* batch mode: each thread's batch times of the current run, ns per op */
#define BATCH_SAMPLES 4096
static float **g_batch_ns;
static long *g_batch_n;

static inline void one_op(void **stack) {
  long d = g_depth;
  size_t line = g_block < 64 ? g_block : 64;
  for (long i = 0; i < d; i++) {
    long *p = malloc(g_block);
    memset(p, 0, line);
    if (line >= sizeof(long) && p[0] != 0) bench_die("block not written");
    stack[i] = p;
  }
  for (long i = d - 1; i >= 0; i--) free(stack[i]);
}

static void worker_run(int tid) {
  void **stack = g_stacks[tid];
  long done = 0;
  if (!g_loop_mode) {
    long nb = (g_N + BATCH - 1) / BATCH;
    for (;;) {
      long b = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed);
      if (b >= nb) break;
      sched_yield();
      long lo = b * BATCH, hi = lo + BATCH < g_N ? lo + BATCH : g_N;
      uint64_t t0 = bench_now_ns();
      for (long k = lo; k < hi; k++) one_op(stack);
      uint64_t dt = bench_now_ns() - t0;
      if (hi - lo == BATCH && g_batch_n[tid] < BATCH_SAMPLES)
        g_batch_ns[tid][g_batch_n[tid]++] = (float)dt / BATCH;
      done += hi - lo;
    }
  } else {
    for (;;) {
      long lo = atomic_fetch_add_explicit(&g_next, g_grain, memory_order_relaxed);
      if (lo >= g_N) break;
      long hi = lo + g_grain < g_N ? lo + g_grain : g_N;
      for (long k = lo; k < hi; k++) one_op(stack);
      done += hi - lo;
    }
  }
  atomic_fetch_add(&g_ops_done, done);
}

static void *pool_main(void *arg) {
  int tid = (int)(intptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&g_start);
    if (atomic_load(&g_quit)) break;
    worker_run(tid);
    pthread_barrier_wait(&g_done);
  }
  return NULL;
}

static uint64_t cpu_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t g_cpu_ns; /* CPU time of the last run_n */

static uint64_t run_n(long n) {
  g_N = n;
  for (int t = 0; t < g_P; t++) g_batch_n[t] = 0;
  long g = n / (100L * g_P);
  g_grain = g < 1 ? 1 : g > 10000 ? 10000 : g;
  atomic_store(&g_next, 0);
  atomic_store(&g_ops_done, 0);
  uint64_t c0 = cpu_now_ns(), t0 = bench_now_ns();
  pthread_barrier_wait(&g_start);
  pthread_barrier_wait(&g_done);
  uint64_t dt = bench_now_ns() - t0;
  g_cpu_ns = cpu_now_ns() - c0;
  if (atomic_load(&g_ops_done) != n) bench_die("ran %ld ops of %ld", atomic_load(&g_ops_done), n);
  return dt;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* The fastest and the median batch of the last run, all threads' together. */
static void print_batches(void) {
  long n = 0;
  for (int t = 0; t < g_P; t++) n += g_batch_n[t];
  if (n == 0) return; /* loop mode, or no whole batch */
  float *all = bench_map((size_t)n * sizeof(float));
  long k = 0;
  for (int t = 0; t < g_P; t++)
    for (long i = 0; i < g_batch_n[t]; i++) all[k++] = g_batch_ns[t][i];
  qsort(all, (size_t)n, sizeof(float), cmp_float);
  printf("# batches: %ld of %d ops, fastest %.1f median %.1f ns/op of a thread\n", n, BATCH,
         (double)all[0], (double)all[n / 2]);
  bench_unmap(all, (size_t)n * sizeof(float));
}

/* Go testing's predictN: aim 20 % past the goal, grow at most 100x. */
static long predict_n(double goal_ns, long prev_iters, double prev_ns, long last) {
  if (prev_ns <= 0) prev_ns = 1;
  double n = goal_ns * (double)prev_iters / prev_ns;
  n += n / 5;
  if (n > 100.0 * (double)last) n = 100.0 * (double)last;
  if (n < (double)last + 1) n = (double)last + 1;
  if (n > 1e9) n = 1e9;
  return (long)n;
}

static int parse_cpus(const char *s, int *out, int max) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1) bench_die("bad --cpu list");
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  int cpus[64] = {1, 2, 4, 8, 16}, ncpus = 5, count = 1, quick = 0, deep = 0, depth_set = 0;
  double benchtime_s = 1.0;
  long fixed_n = 0; /* --benchtime Nx */
  int benchtime_set = 0;
  const char *v;
  for (int i = 1; i < argc; i++) {
    if ((v = bench_opt(argc, argv, &i, "--cpu"))) ncpus = parse_cpus(v, cpus, 64);
    else if ((v = bench_opt(argc, argv, &i, "--depth"))) g_depth = atol(v), depth_set = 1;
    else if ((v = bench_opt(argc, argv, &i, "--block"))) g_block = (size_t)atol(v);
    else if ((v = bench_opt(argc, argv, &i, "--count"))) count = atoi(v);
    else if ((v = bench_opt(argc, argv, &i, "--mode"))) {
      if (!strcmp(v, "loop")) g_loop_mode = 1;
      else if (!strcmp(v, "batch")) g_loop_mode = 0;
      else bench_die("--mode batch|loop");
    } else if ((v = bench_opt(argc, argv, &i, "--benchtime"))) {
      char *end;
      double x = strtod(v, &end);
      benchtime_set = 1;
      if (!strcmp(end, "x")) fixed_n = (long)x;
      else if (!strcmp(end, "ms")) benchtime_s = x / 1e3;
      else if (!strcmp(end, "s") || !*end) benchtime_s = x;
      else bench_die("bad --benchtime %s", v);
    } else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--deep")) deep = 1;
    else if ((v = bench_opt(argc, argv, &i, "--format"))) { /* always gobench */ }
    else
      bench_die("usage: bench-scaling [--cpu=1,2,4,8,16] [--depth N] [--block B] [--deep]\n"
                "       [--benchtime 1s|500ms|1000x] [--mode batch|loop] [--count K] [--quick]");
  }
  if (deep && !depth_set) g_depth = 256;
  if (quick && !benchtime_set) benchtime_s = 0.05;
  if (g_depth < 1 || g_block < 1) bench_die("depth and block must be >= 1");
  const char *name = deep ? "fixed_block_scaling_deep" : "fixed_block_scaling";
  static char outbuf[8192];
  setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
  printf("# malloc: %s\n", bench_malloc_from());
  printf("# note: %s mode, depth %ld, block %zu, benchtime %s%.3gs, %d CPUs online\n",
         g_loop_mode ? "loop" : "batch", g_depth, g_block, fixed_n ? "fixed N, " : "",
         benchtime_s, bench_ncpu());

  for (int c = 0; c < ncpus; c++) {
    g_P = cpus[c];
    pthread_t *th = bench_map((size_t)g_P * sizeof(pthread_t));
    g_stacks = bench_map((size_t)g_P * sizeof(void **));
    for (int t = 0; t < g_P; t++) g_stacks[t] = bench_map((size_t)g_depth * sizeof(void *));
    g_batch_ns = bench_map((size_t)g_P * sizeof(float *));
    g_batch_n = bench_map((size_t)g_P * sizeof(long));
    for (int t = 0; t < g_P; t++) g_batch_ns[t] = bench_map(BATCH_SAMPLES * sizeof(float));
    pthread_barrier_init(&g_start, NULL, (unsigned)g_P + 1);
    pthread_barrier_init(&g_done, NULL, (unsigned)g_P + 1);
    atomic_store(&g_quit, 0);
    for (int t = 0; t < g_P; t++)
      if (pthread_create(&th[t], NULL, pool_main, (void *)(intptr_t)t) != 0)
        bench_die("pthread_create failed");

    for (int rep = 0; rep < count; rep++) {
      long n = 1;
      uint64_t dt;
      if (fixed_n > 0) {
        n = fixed_n;
        dt = run_n(n);
      } else {
        double goal = benchtime_s * 1e9;
        dt = run_n(n);
        while ((double)dt < goal && n < 1000000000L) {
          long last = n;
          n = predict_n(goal, n, (double)dt, last);
          dt = run_n(n);
        }
      }
      char suffix[16] = "";
      if (g_P > 1) snprintf(suffix, sizeof suffix, "-%d", g_P);
      printf("Benchmark%s%s %ld %.1f ns/op %.1f cpu-ns/op\n", name, suffix, n, (double)dt / (double)n,
             (double)g_cpu_ns / (double)n);
      print_batches();
    }

    atomic_store(&g_quit, 1);
    pthread_barrier_wait(&g_start);
    for (int t = 0; t < g_P; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&g_start);
    pthread_barrier_destroy(&g_done);
    for (int t = 0; t < g_P; t++) bench_unmap(g_stacks[t], (size_t)g_depth * sizeof(void *));
    for (int t = 0; t < g_P; t++) bench_unmap(g_batch_ns[t], BATCH_SAMPLES * sizeof(float));
    bench_unmap(g_batch_ns, (size_t)g_P * sizeof(float *));
    bench_unmap(g_batch_n, (size_t)g_P * sizeof(long));
    bench_unmap(g_stacks, (size_t)g_P * sizeof(void **));
    bench_unmap(th, (size_t)g_P * sizeof(pthread_t));
  }
  return 0;
}
