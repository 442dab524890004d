/* SPDX-License-Identifier: MIT */
/* regress_heapless [CASE] — a thread's first few small allocations come
 * from a shared heap (heap.c, HEAPLESS_ALLOCS); the thread makes a heap of
 * its own only after them.
 *
 * Without CASE: a thread that makes one malloc/free pair creates no heap
 * (heaps_created unchanged), one that makes 100 creates one; blocks a
 * heapless thread allocated and freed are reused (all contents checked).
 *
 * CASE overwritten_double_free (in a child, which must die by SIGABRT with
 * a report naming free, the address and "double free"): a heapless thread
 * frees a block, overwrites its first 16 bytes (the link and the free
 * key) and frees it again.  Its free goes to the span's remote list, and
 * without the check of that list's head the block was pushed twice: the
 * list looped onto itself.
 *
 * What the tests check, in detail:
 *
 * `regress_heapless`, `regress_heapless_double_free`: a thread's first 8
 * small allocations come from a shared heap: 20 threads of one malloc/free
 * pair make no heap (`heaps_created` unchanged), 20 threads of 100 blocks
 * make 20, contents checked; `_double_free` (review fix): such a thread
 * frees a block, overwrites its first 16 bytes and frees it again: SIGABRT
 * with a double-free report naming free and the address (the block was
 * pushed onto its span's remote list twice, a loop) */
#include "testutil.h"
#include <pthread.h>

static void *volatile sink;

static void *one_pair(void *arg) {
  (void)arg;
  char *p = malloc(1);
  CHECK(p != NULL);
  *p = 1;
  free(p);
  return NULL;
}

static void *many_pairs(void *arg) {
  (void)arg;
  char *keep[100];
  for (int i = 0; i < 100; i++) {
    keep[i] = malloc(48);
    CHECK(keep[i] != NULL);
    memset(keep[i], i, 48);
  }
  for (int i = 0; i < 100; i++) {
    for (int k = 0; k < 48; k++) CHECKF(keep[i][k] == (char)i, "block %d byte %d overwritten", i, k);
    free(keep[i]);
  }
  return NULL;
}

static void *overwritten(void *arg) {
  (void)arg;
  char *p = malloc(64); /* this thread's first allocation: no heap yet */
  sink = p;
  printf("ADDR %p\n", (void *)p);
  fflush(stdout);
  free(p);
  memset(sink, 0x41, 16); /* use after free: the link and the key */
  free(sink);
  printf("after: no report\n");
  fflush(stdout);
  return NULL;
}

static void run(void *(*fn)(void *)) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
  pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) {
    free(malloc(64));
    run(overwritten);
    return 0;
  }
  tu_require_lithe();
  if (argc > 1) {
    static tu_child r;
    char how[64];
    tu_run_self_child(&r, argv[1], how, sizeof how);
    tu_expect_report(&r, how, "free", "double free");
    return 0;
  }
  lithe_stats_t a, b, c;
  lithe_stats_get(&a);
  for (int i = 0; i < 20; i++) run(one_pair);
  lithe_stats_get(&b);
  for (int i = 0; i < 20; i++) run(many_pairs);
  lithe_stats_get(&c);
  printf("heaps_created: %zu at start, %zu after 20 threads of one pair, %zu after 20 of 100\n",
         a.heaps_created, b.heaps_created, c.heaps_created);
  CHECKF(b.heaps_created == a.heaps_created, "threads of one malloc/free pair made %zu heaps",
         b.heaps_created - a.heaps_created);
  CHECKF(c.heaps_created == b.heaps_created + 20, "20 threads of 100 blocks made %zu heaps",
         c.heaps_created - b.heaps_created);
  return 0;
}
