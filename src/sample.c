/* SPDX-License-Identifier: MIT */
/* sample.c — when the profiler samples (prof.c): its mode, its random
 * intervals, and each thread's countdown.  Below the heaps, which start a
 * thread's countdown (prof_heap_start) and count its heapless blocks; the
 * profiler above records what is sampled. */
#define _GNU_SOURCE
#include <string.h>
#include "internal.h"

/* -DLITHE_PROF_DEFAULT=1 builds a library that profiles unless told
 * LITHE_PROF=0 (how the benchmark compares profiling on and off) */
#ifndef LITHE_PROF_DEFAULT
#define LITHE_PROF_DEFAULT PROF_OFF
#endif
int prof_mode = LITHE_PROF_DEFAULT;
size_t prof_rate = 512 * KiB; /* as jemalloc's lg_prof_sample 19 and Go */
__thread int prof_busy __attribute__((tls_model("initial-exec"))); /* in the profiler: none sampled */
/* The profiler's sampled malloc (prof.c, prof_malloc), set by prof_init
 * before the first allocation: a thread's first block, made where its
 * heap is made (thread.c), is sampled too, and the profiler allocates
 * through the heaps, above them: so a hook, not a call. */
static void *no_sample(size_t n, heap_t *h) { (void)n, (void)h; return NULL; }
void *(*prof_sampled_malloc)(size_t n, heap_t *h) = no_sample;
static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

/* ---- random intervals -------------------------------------------------- */

/* A thread's generator starts from the process's seed (one getrandom at
 * start-up) and a count of threads seeded, mixed by splitmix64's finaliser:
 * a getrandom call per thread was most of a profiled thread's first
 * malloc/free pair (docs/lab/2026-11-29-threads.md). */
uint64_t rng_seed; /* set by prof_init */
static _Atomic uint64_t rng_threads;

static uint64_t rng_next(void) {
  uint64_t x = rng_state;
  if (x == 0) {
    x = rng_seed + atomic_fetch_add_explicit(&rng_threads, 1, memory_order_relaxed) * 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    if (x == 0) x = 0x9e3779b97f4a7c15u;
  }
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27; /* xorshift64* */
  rng_state = x;
  return x * 0x2545f4914f6cdd1du;
}

/* -ln(u) for u uniform in (0, 1]: u = 2^e * m, ln m by its atanh series
 * (error < 1e-6; libm is not ours to use). */
static double neg_log_uniform(void) {
  double u = (double)((rng_next() >> 11) + 1) * (1.0 / 9007199254740992.0);
  uint64_t bits;
  memcpy(&bits, &u, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
  double m, t, t2;
  memcpy(&m, &bits, sizeof m);
  t = (m - 1) / (m + 1);
  t2 = t * t;
  double ln_m = 2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9)))));
  return -(e * 0.69314718055994531 + ln_m);
}

static intptr_t next_interval(void) {
  double v = neg_log_uniform() * (double)prof_rate;
  return v < 1 ? 1 : (intptr_t)v;
}

bool prof_tick_slow(heap_t *h) {
  if (prof_mode == PROF_OFF) { h->bins->prof_left = INTPTR_MAX; return false; }
  if (prof_mode == PROF_LEAKS) { h->bins->prof_left = -1; return !prof_busy; }
  /* the interval starts at the sampled allocation: the overshoot past 0
   * belongs to it (a memoryless process, as tcmalloc does) */
  h->bins->prof_left = next_interval();
  return !prof_busy;
}

/* A thread's first small allocations may come from the shared heap, before
 * it has a heap of its own (thread.c, HEAPLESS_ALLOCS).  Those count against
 * the thread's first interval here, by their class size, and are never
 * sampled themselves: one that would end the interval is refused, the
 * thread makes its heap, whose prof_left continues the interval from what
 * is left (prof_heap_start), and that allocation, counted by its class
 * size too, is the sample (thread.c).  So a thread that allocates a little
 * is sampled as one with a heap from the start, its heapless blocks
 * standing for the interval's bytes as any unsampled block does. */
static __thread intptr_t heapless_left __attribute__((tls_model("initial-exec")));
static __thread bool heapless_drawn __attribute__((tls_model("initial-exec")));

bool prof_heapless_take(size_t n) {
  if (!heapless_drawn) {
    heapless_left = next_interval();
    heapless_drawn = true;
  }
  if ((size_t)heapless_left < n) return false;
  heapless_left -= (intptr_t)n;
  return true;
}

intptr_t prof_heap_start(void) {
  if (prof_mode == PROF_SAMPLE && heapless_drawn) {
    heapless_drawn = false; /* a later heap of this thread draws anew */
    return heapless_left;
  }
  return prof_mode == PROF_SAMPLE ? next_interval() : prof_mode == PROF_LEAKS ? -1 : INTPTR_MAX;
}
