/* SPDX-License-Identifier: MIT */
/* regress_owner_free_spans — a thread that frees its own blocks gets its
 * spans back into the page heap, while another thread heap is live.
 *
 * A worker (the main thread's heap is live too) allocates 16,384 blocks of
 * 1-8 KiB (about 74 MiB, 13 classes), touches them, and frees them in the
 * order it allocated them, as bench-mallocbench medium --parallel does.
 * The first spans its frees bring back from the full list keep a few
 * blocks in the worker's bin, so they stay on the heap's list of spans
 * with room; a later span coming back found that list "crowded" and was
 * given away (abandoned), the rest of its frees went the remote way, and
 * the span, emptied, sat on the abandoned list until lithe_collect, out of
 * reach of the page heap's reuse and of its purge: 53 spans here (97 spans
 * holding small objects after the frees); with two such threads of
 * 256 MiB each, 2,033 of 2,076.  A span the owner's own frees bring back is kept now and goes back
 * to the page heap once empty (0 abandoned, 44 spans left: the classes'
 * current spans, those of the blocks in the bins, the 4 cached); only
 * remote frees give spans away. */
#include "testutil.h"
#include <pthread.h>

#define NBLOCKS 16384
#define BLOCK_MAX 8192

static size_t abandoned_after, small_after, small_before;

static void *worker(void *arg) {
  (void)arg;
  static void *blocks[NBLOCKS];
  lithe_stats_t st;
  lithe_stats_get(&st);
  small_before = st.spans_small;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < NBLOCKS; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = 1024 + (size_t)(x >> 33) % (BLOCK_MAX - 1024);
    blocks[i] = malloc(n);
    CHECK(blocks[i] != NULL);
    memset(blocks[i], i & 0xff, n);
  }
  for (int i = 0; i < NBLOCKS; i++) free(blocks[i]);
  lithe_stats_get(&st); /* before this thread's exit gives its spans away */
  abandoned_after = st.spans_abandoned;
  small_after = st.spans_small;
  return NULL;
}

int main(void) {
  tu_require_lithe(); /* (the main thread's heap: live from here on) */
  void *keep = malloc(64);
  CHECK(keep != NULL);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  printf("spans of small objects: %zu before, %zu after the frees; abandoned: %zu\n",
         small_before, small_after, abandoned_after);
  CHECKF(abandoned_after <= 8, "%zu spans given away while their owner freed them", abandoned_after);
  CHECKF(small_after <= small_before + 64, "%zu spans still hold small objects after every block was freed",
         small_after - small_before);
  free(keep);
  return 0;
}
