/* SPDX-License-Identifier: MIT */
/* regress_tsd_late_alloc — allocation in pthread key destructors that run
 * after lithe's own per-thread teardown.
 *
 * A key destructor that allocates and re-arms itself with pthread_setspecific
 * runs in every destructor round (as some libraries' do), also after lithe's
 * key destructor has released the thread's heap. Before the fix each such
 * late allocation created a new heap that was never released: one heap (and
 * its spans) leaked per thread. Now they use a shared fallback heap.
 *
 * 1000 threads, joined one by one; then heaps_live <= 2 and committed stays
 * under 16 MiB. */
#include "testutil.h"
#include <pthread.h>

static pthread_key_t key;
static volatile long dtor_calls;

static void dtor(void *v) {
  free(v);
  __atomic_add_fetch(&dtor_calls, 1, __ATOMIC_RELAXED);
  pthread_setspecific(key, malloc(32)); /* re-arms: runs in every round */
}

static void *run(void *arg) {
  (void)arg;
  pthread_setspecific(key, malloc(32));
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1000;
  tu_require_lithe(); /* lithe's own key exists before ours */
  CHECK(pthread_key_create(&key, dtor) == 0);
  lithe_stats_t st0;
  lithe_stats_get(&st0);
  for (int i = 0; i < threads; i++) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
  }
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("after %d joined threads (%ld destructor calls): heaps live %zu, heaps created %zu, "
         "committed %zu KiB (before: %zu KiB)\n",
         threads, dtor_calls, st.heaps_live, st.heaps_created, st.committed / 1024,
         st0.committed / 1024);
  CHECK(dtor_calls >= threads);
  CHECKF(st.heaps_live <= 2, "%zu heaps live after all threads exited: leaked per thread",
         st.heaps_live);
  CHECKF(st.committed < 16UL * 1024 * 1024, "committed %zu KiB >= 16 MiB", st.committed / 1024);
  return 0;
}
