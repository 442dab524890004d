/* SPDX-License-Identifier: MIT */
/* regress_tsd_last_round — a thread whose first allocation happens in the
 * last round of pthread key destructors must not leak its heap.
 *
 * glibc runs key destructors in at most PTHREAD_DESTRUCTOR_ITERATIONS (4)
 * rounds. A thread that had not allocated before gets its heap (and lithe's
 * key set) in that allocation; in the last round no further round runs, so
 * lithe's key destructor never gave that heap back: before the fix one
 * heap (and its span) leaked per such thread. Now a heap whose thread is
 * gone is found (its TLS slot, in the dead thread's stack, no longer points
 * at it) and reused when a new heap is needed.
 *
 * 1000 threads, joined one by one; each sets a key whose destructor re-arms
 * itself without allocating in rounds 1..3 and allocates (and keeps, as a
 * leak of the program's own, 32 bytes) in round 4: afterwards heaps_live
 * stays <= 8 (figures printed).
 *
 * What the tests check, in detail:
 *
 * `regress_tsd_last_round`: (review fix) 1000 threads joined one by one,
 * each with a key destructor that re-arms itself without allocating in
 * rounds 1..3 and makes the thread's first allocation in round 4 (the
 * last): afterwards `heaps_live` <= 8 (2 now; it was 1001, one heap leaked
 * per thread) */
#include "testutil.h"
#include <limits.h>
#include <pthread.h>

#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4
#endif

static pthread_key_t key;
static __thread int round_no;
static volatile long last_round_allocs;

static void dtor(void *v) {
  (void)v;
  if (++round_no < PTHREAD_DESTRUCTOR_ITERATIONS) {
    pthread_setspecific(key, (void *)1); /* re-arm, no allocation */
    return;
  }
  void *p = malloc(32); /* the thread's first allocation, in the last round */
  if (p) __atomic_add_fetch(&last_round_allocs, 1, __ATOMIC_RELAXED);
}

static void *run(void *arg) {
  (void)arg;
  pthread_setspecific(key, (void *)1);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1000;
  tu_require_lithe();
  CHECK(pthread_key_create(&key, dtor) == 0);
  for (int i = 0; i < threads; i++) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
  }
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("after %d joined threads (%ld first allocations in the last destructor round): "
         "heaps live %zu, heaps created %zu, committed %zu KiB\n",
         threads, last_round_allocs, st.heaps_live, st.heaps_created, st.committed / 1024);
  CHECK(last_round_allocs == threads);
  CHECKF(st.heaps_live <= 8, "%zu heaps live after all threads exited: one leaked per thread",
         st.heaps_live);
  return 0;
}
