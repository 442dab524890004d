/* SPDX-License-Identifier: MIT */
/* regress_large_cache — a thread's freed large blocks are kept for reuse
 * (the large-run cache, src/large.c) and still given back.
 *
 * A 128 KiB malloc+free pair went through the page heap every time: its
 * lock, its bins, and 32 pagemap entries rewritten (1,055 instructions a
 * pair under callgrind, against 80 for tcmalloc).  Now a freed large block
 * stays its thread's, counted in the stats' pages.large_cached, and a
 * malloc of the same size takes it back.  Checked, with
 * LITHE_PURGE_DELAY_MS=200 (the test's environment):
 *   1. malloc + free of 128 KiB, 1,000 times: one block, always the same
 *      address; after the last free large_cached is 1 (128 KiB) and
 *      large_live back to its start;
 *   2. a second free of the cached block is still a double free (the
 *      misuse tests run that: misuse_double_free_large);
 *   3. lithe_collect(true) empties the cache: large_cached 0, and the
 *      pages are purged (free_dirty_bytes 0);
 *   4. a thread's cache is emptied when it exits;
 *   5. the purge delay: 20 MiB freed (a cached mapping, which starts the
 *      purge thread), then a cached 200 KiB block, then no call for 4
 *      delays: large_cached 0 (the purge thread gave it back);
 *   6. a request the page heap's free runs cannot serve takes the caches
 *      back before fresh pages: 8 cached 512 KiB blocks, then 1 MiB blocks
 *      in another thread leave none cached.
 *
 * What the tests check, in detail:
 *
 * `regress_large_cache`: with `LITHE_PURGE_DELAY_MS=200`: 1,000 pairs of
 * `malloc(128 KiB)` + free reuse the first block every time, leaving
 * `pages.large_cached` 1 (131,072 bytes) and `large_live` at its start;
 * `lithe_collect(true)` leaves none cached and `free_dirty_bytes` 0; a
 * thread's cached block is gone once it exits; a cached 200 KiB block
 * (after a 20 MiB one freed, which starts the purge thread) is gone after 4
 * delays with no call; 8 cached 512 KiB blocks are taken back when another
 * thread's 1 MiB blocks find no free run */
#include "testutil.h"
#include <pthread.h>
#include <lithe.h>


static long field(const char *key) { return tu_json_field(tu_stats_json(), key); }

static void *thread_churn(void *arg) {
  size_t n = *(size_t *)arg;
  for (int i = 0; i < 100; i++) {
    char *p = malloc(n);
    CHECK(p != NULL);
    p[0] = 1;
    free(p);
  }
  return (void *)(uintptr_t)field("large_cached");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  long delay = tu_purge_delay_ms();
  CHECKF(delay > 0, "LITHE_PURGE_DELAY_MS %ld: the test needs a delay", delay);
  lithe_collect(true);
  long live0 = field("large_live");

  /* 1. reuse */
  char *first = malloc(128 * KiB);
  CHECK(first != NULL);
  memset(first, 1, 128 * KiB);
  free(first);
  int same = 0;
  for (int i = 0; i < 1000; i++) {
    char *p = malloc(128 * KiB);
    CHECK(p != NULL);
    p[i] = 2;
    same += p == first;
    free(p);
  }
  long cached = field("large_cached"), cached_bytes = field("large_cached_bytes");
  long live = field("large_live");
  printf("1,000 pairs of 128 KiB: %d at the first block's address; large_cached %ld (%ld bytes), "
         "large_live %ld (start %ld)\n", same, cached, cached_bytes, live, live0);
  CHECKF(same == 1000, "%d of 1000 mallocs reused the freed block", same);
  CHECKF(cached == 1 && cached_bytes == (long)(128 * KiB), "large_cached %ld, %ld bytes", cached, cached_bytes);
  CHECKF(live == live0, "large_live %ld, %ld at the start", live, live0);

  /* 3. lithe_collect(true) */
  lithe_collect(true);
  cached = field("large_cached");
  long dirty = field("free_dirty_bytes");
  printf("after lithe_collect(true): large_cached %ld, free_dirty_bytes %ld\n", cached, dirty);
  CHECKF(cached == 0, "large_cached %ld after lithe_collect(true)", cached);
  CHECKF(dirty == 0, "free_dirty_bytes %ld after lithe_collect(true)", dirty);

  /* 4. thread exit */
  pthread_t t;
  size_t n = 96 * KiB;
  void *in_thread;
  CHECK(pthread_create(&t, NULL, thread_churn, &n) == 0);
  CHECK(pthread_join(t, &in_thread) == 0);
  cached = field("large_cached");
  printf("a thread's 100 pairs of 96 KiB: large_cached %ld before it exits, %ld after\n",
         (long)(uintptr_t)in_thread, cached);
  CHECKF((uintptr_t)in_thread == 1, "the thread cached %ld blocks", (long)(uintptr_t)in_thread);
  CHECKF(cached == 0, "large_cached %ld after the thread exited", cached);

  /* 5. the purge delay */
  char *big = malloc(20 * MiB); /* (first: a mapping takes the cache back, 6.) */
  CHECK(big != NULL);
  memset(big, 4, 20 * MiB);
  free(big);
  char *p = malloc(200 * KiB);
  CHECK(p != NULL);
  memset(p, 3, 200 * KiB);
  free(p);
  cached = field("large_cached");
  tu_sleep_ms(4 * delay + 200);
  long later = field("large_cached");
  printf("200 KiB cached (%ld), 20 MiB freed, %ld ms with no call: large_cached %ld\n", cached,
         4 * delay + 200, later);
  CHECKF(cached == 1, "large_cached %ld after the free", cached);
  CHECKF(later == 0, "large_cached %ld after 4 purge delays", later);

  /* 6. a request the free runs cannot serve */
  lithe_collect(true);
  char *b[8];
  for (int i = 0; i < 8; i++) {
    b[i] = malloc(512 * KiB);
    CHECK(b[i] != NULL);
    memset(b[i], 5, 512 * KiB);
  }
  for (int i = 0; i < 8; i++) free(b[i]);
  cached = field("large_cached");
  n = 1 * MiB; /* another thread, another size: the page heap has no free run of it */
  CHECK(pthread_create(&t, NULL, thread_churn, &n) == 0);
  CHECK(pthread_join(t, &in_thread) == 0);
  later = field("large_cached");
  printf("8 x 512 KiB cached (%ld), then 1 MiB blocks in another thread: large_cached %ld\n", cached, later);
  CHECKF(cached == 8, "large_cached %ld after 8 frees", cached);
  CHECKF(later == 0, "large_cached %ld: the 1 MiB blocks took fresh pages beside the cache", later);
  puts("ok");
  return 0;
}
