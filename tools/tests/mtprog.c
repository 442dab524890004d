/* SPDX-License-Identifier: MIT */
/* Test program for the tracer round trip: 4 threads allocate, reallocate and
 * free (also across threads) objects of 5000 bytes or more, and count their
 * own operations and live bytes. Phases are separated by barriers and are
 * monotone (phase A only grows the live set, phase B only shrinks it), so the
 * peak of live bytes does not depend on how the threads interleave.
 * Output (one line, via write(2) so stdio allocates nothing):
 *   ops <N> peak <BYTES> end <BYTES>
 * Objects smaller than 5000 bytes are never allocated here, so the replayer's
 * --verify-min-size 5000 separates these from libc's own small allocations. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T 4
#define NOBJ 300
#define NPAIR 200

static void *objs[T][NOBJ];
static size_t sizes[T][NOBJ];
static atomic_ulong ops, live, peak;
static pthread_barrier_t bar;

static void add(long delta) {
  unsigned long v = atomic_fetch_add(&live, (unsigned long)delta) + (unsigned long)delta;
  unsigned long p = atomic_load(&peak);
  while (v > p && !atomic_compare_exchange_weak(&peak, &p, v)) {}
  atomic_fetch_add(&ops, 1);
}

static size_t size_of(unsigned t, unsigned i) { return 5000 + (i * 7919u + t * 104729u) % 30000u; }

static void *worker(void *arg) {
  unsigned t = (unsigned)(size_t)arg;
  /* phase 0: short-lived pairs */
  for (unsigned i = 0; i < NPAIR; i++) {
    size_t s = size_of(t, i + 1000);
    char *p = malloc(s);
    add((long)s);
    memset(p, 1, s);
    free(p);
    add(-(long)s);
  }
  pthread_barrier_wait(&bar);
  /* phase A: build, only growing */
  for (unsigned i = 0; i < NOBJ; i++) {
    size_t s = size_of(t, i);
    void *p = NULL;
    switch (i % 6) {
    case 0: p = calloc(1, s); break;
    case 1: if (posix_memalign(&p, 64, s)) p = NULL; break;
    case 2: s = (s + 255) & ~(size_t)255; p = aligned_alloc(256, s); break;
    case 3: p = memalign(4096, s); break;
    default: p = malloc(s); break;
    }
    if (!p) abort();
    memset(p, 2, s);
    objs[t][i] = p; sizes[t][i] = s;
    add((long)s);
    if (i % 3 == 0) {
      size_t ns = s + 1000 + i;
      void *q = (i % 2) ? realloc(p, ns) : reallocarray(p, 1, ns);
      if (!q) abort();
      objs[t][i] = q; sizes[t][i] = ns;
      add((long)(ns - s));
    }
  }
  pthread_barrier_wait(&bar);
  /* phase B: thread t releases thread t+1's objects, only shrinking */
  unsigned o = (t + 1) % T;
  for (unsigned i = 0; i < NOBJ; i++) {
    if (i % 7 == 0) {
      size_t s = sizes[o][i], ns = s - (s - 5000) / 2;
      void *q = realloc(objs[o][i], ns);
      if (!q) abort();
      objs[o][i] = q; sizes[o][i] = ns;
      add(-(long)(s - ns));
      if (i % 14 == 0) continue; /* stays live to the end */
    }
    free(objs[o][i]);
    add(-(long)sizes[o][i]);
  }
  return NULL;
}

int main(void) {
  pthread_t th[T];
  pthread_barrier_init(&bar, NULL, T);
  for (unsigned t = 0; t < T; t++) pthread_create(&th[t], NULL, worker, (void *)(size_t)t);
  for (unsigned t = 0; t < T; t++) pthread_join(th[t], NULL);
  char buf[128];
  int n = snprintf(buf, sizeof buf, "ops %lu peak %lu end %lu\n", atomic_load(&ops),
                   atomic_load(&peak), atomic_load(&live));
  return write(1, buf, (size_t)n) == n ? 0 : 1;
}
