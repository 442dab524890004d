/* SPDX-License-Identifier: MIT */
/* regress_fork_userheap — a fork while other threads use first-class heaps
 * (lithe_heap_*) leaves the child able to use them.  lithe's fork handler
 * took the allocator's own locks but not userheap.c's: the pool lock
 * (lithe_heap_new / _destroy) and each heap's large lock (its large
 * objects' list: a large malloc from it, a free of one, destroy).  A fork
 * while another thread held one left it held for good in the child: the
 * child's next lithe_heap_new, or its free of that heap's large object,
 * hung.
 *
 * Threads hammer lithe_heap_new / malloc / free / destroy (and large
 * objects of a heap of their own); the main thread forks, again and again,
 * a child that frees a large object of each hammered heap (made before the
 * threads started), then makes, uses and destroys a heap.  Each child must
 * exit 0 within its timeout: a hang fails the test, it does not stall it. */
#include "testutil.h"
#include <pthread.h>
#include <stdatomic.h>

#define THREADS 2
#define FORKS 4000
#define SECONDS 12.0

static lithe_heap_t *own[THREADS]; /* each hammer thread's long-lived heap */
static void *victim[THREADS];      /* a large object of own[t], for the children */
static atomic_int stop;
static atomic_long rounds;

static void *hammer(void *arg) {
  int t = (int)(intptr_t)arg;
  long n = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    lithe_heap_t *u = lithe_heap_new();
    CHECK(u);
    void *a = lithe_heap_malloc(u, 100), *b = lithe_heap_malloc(u, 200 * KiB);
    CHECK(a && b);
    if (n & 1) free(b); /* the large list's removal, from free() */
    lithe_heap_destroy(u); /* the pool's push, the large list emptied */
    void *p = lithe_heap_malloc(own[t], 96 * KiB); /* own[t]'s large list */
    CHECK(p);
    free(p);
    n++;
  }
  atomic_fetch_add(&rounds, n);
  return NULL;
}

static void child(void *arg) {
  (void)arg;
  for (int t = 0; t < THREADS; t++) free(victim[t]); /* own[t]'s large lock */
  for (int i = 0; i < 3; i++) {
    lithe_heap_t *u = lithe_heap_new(); /* the pool lock */
    if (!u) _exit(2);
    char *a = lithe_heap_malloc(u, 64), *b = lithe_heap_malloc(u, 300 * KiB);
    if (!a || !b) _exit(3);
    memset(b, 7, 300 * KiB);
    free(b);
    lithe_heap_destroy(u);
  }
  _exit(0);
}

int main(void) {
  tu_require_lithe();
  for (int t = 0; t < THREADS; t++) {
    own[t] = lithe_heap_new();
    CHECK(own[t]);
    victim[t] = lithe_heap_malloc(own[t], 256 * KiB);
    CHECK(victim[t]);
  }
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, hammer, (void *)(intptr_t)t) == 0);
  static tu_child r;
  double t0 = tu_now();
  int forks = 0, bad = 0;
  for (; forks < FORKS && tu_now() - t0 < SECONDS; forks++) {
    CHECK(tu_run_fn(&r, child, NULL, 10) == 0);
    if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
      char how[64];
      tu_describe(&r, how, sizeof how);
      printf("fork %d: child %s\nstdout: %s\nstderr: %s\n", forks, how, r.out, r.err);
      bad = 1;
      break;
    }
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  printf("%d forks in %.1f s while %d threads made %ld rounds of lithe_heap_*: %s\n", forks,
         tu_now() - t0, THREADS, atomic_load(&rounds), bad ? "a child failed" : "every child ok");
  CHECKF(!bad, "a child forked while threads used lithe_heap_* hung or failed");
  for (int t = 0; t < THREADS; t++) {
    free(victim[t]);
    lithe_heap_destroy(own[t]);
  }
  return 0;
}
