/* SPDX-License-Identifier: MIT */
/* regress_tsd_key_overwritten — a thread that overwrites lithe's pthread
 * key with a block of its own must still give its heap back at exit.
 *
 * lithe creates its key when it sets itself up, before the program's
 * first key: key 0 in a program that has made none.  A program that calls
 * pthread_setspecific on a pthread_key_t it has not created yet (0, as
 * api_lifecycle's first thread does) overwrites lithe's value, and the
 * key's destructor then gets the program's block.  Before the fix
 * heap_thread_exit took that block for the heap: with the bins behind a
 * pointer in the heap it followed the block's first word and crashed
 * (api_lifecycle, signal 11); it now takes the exiting thread's heap
 * from its own TLS slot.
 *
 * 50 threads, joined one by one; each allocates enough to make a heap of
 * its own, then sets key 0 to a block of 0xff bytes (freed by nobody:
 * the program's leak); afterwards heaps_live stays small (printed).
 *
 * What the tests check, in detail:
 *
 * `regress_tsd_key_overwritten`: 50 threads joined one by one, each makes
 * its heap and then sets key 0 (lithe's, made first) to a block of 0xff
 * bytes, as api_lifecycle's first thread does with a key it has not created
 * yet: heap_thread_exit took the block for the heap and crashed (signal 11
 * at 2784203); it takes the thread's heap from its TLS slot now,
 * `heaps_live` <= 8 afterwards (1) */
#include "testutil.h"
#include <pthread.h>

static void *run(void *arg) {
  (void)arg;
  void *keep[64];
  for (int i = 0; i < 64; i++) { /* past the heapless first allocations */
    keep[i] = malloc(48);
    CHECK(keep[i] != NULL);
  }
  for (int i = 0; i < 64; i++) free(keep[i]);
  void *junk = malloc(4096);
  CHECK(junk != NULL);
  memset(junk, 0xff, 4096);
  pthread_setspecific((pthread_key_t)0, junk); /* lithe's key */
  return NULL;
}

int main(void) {
  tu_require_lithe();
  for (int i = 0; i < 50; i++) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
  }
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("after 50 joined threads that overwrote key 0: heaps live %zu, heaps created %zu\n",
         st.heaps_live, st.heaps_created);
  CHECKF(st.heaps_live <= 8, "%zu heaps live after all threads exited", st.heaps_live);
  return 0;
}
