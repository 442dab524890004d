/* regress_heapless [CASE] — a thread's first few small allocations come
 * from a shared heap (heap.c, HEAPLESS_ALLOCS); the thread makes a heap of
 * its own only after them.
 *
 * Without CASE: a thread that makes one malloc/free pair creates no heap
 * (heaps_created unchanged), one that makes 100 creates one; blocks a
 * heapless thread allocated and freed are reused (all contents checked).
 * Blocks of the shared heap that the thread frees once it has its own
 * heap go back to the shared heap, not into the thread's bin (review fix:
 * they stayed there for good and every later free of them was a remote
 * free, two of the three frees of each bench-scaling op): the thread's
 * next mallocs of the size return none of them.
 *
 * CASE overwritten_double_free (in a child, which must die by SIGABRT with
 * a report naming free, the address and "double free"): a heapless thread
 * frees a block, overwrites its first 16 bytes (the link and the free
 * key) and frees it again.  Its free goes to the span's remote list, and
 * without the check of that list's head the block was pushed twice: the
 * list looped onto itself. */
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

/* 8 heapless blocks, then one from the thread's own heap; the 8 freed;
 * 8 more mallocs of the size must come from the thread's own heap */
static void *shared_blocks_go_back(void *arg) {
  (void)arg;
  char *first[8], *again[8];
  for (int i = 0; i < 8; i++) {
    first[i] = malloc(64);
    CHECK(first[i] != NULL);
    memset(first[i], 0x5a, 64);
  }
  char *own = malloc(64);
  CHECK(own != NULL);
  for (int i = 0; i < 8; i++) free(first[i]);
  for (int i = 0; i < 8; i++) {
    again[i] = malloc(64);
    CHECK(again[i] != NULL);
    for (int k = 0; k < 8; k++)
      CHECKF(again[i] != first[k], "malloc %d returned %p, shared block %d, freed into this thread's bin",
             i, (void *)again[i], k);
  }
  for (int i = 0; i < 8; i++) free(again[i]);
  free(own);
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
  run(shared_blocks_go_back);
  return 0;
}
