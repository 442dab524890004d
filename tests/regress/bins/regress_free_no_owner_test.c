/* SPDX-License-Identifier: MIT */
/* regress_free_no_owner_test — free()'s fast path (fastpath.h) pushes a
 * small block on the freeing thread's bin without comparing the block's
 * owner with the thread's heap: the owner's block and another heap's go
 * the same way (heap_free_remote did that for the others already).  Two
 * kinds must still stay out of every bin, and come to heap_bin_spill:
 *
 *  - a block of a first-class heap (lithe_heap_t): destroy frees its spans
 *    whole, so one left in a thread's bin would be handed out again after
 *    its pages went elsewhere.  Freed here by a thread with a heap of its
 *    own and room in its bin, the thread's next mallocs of that size must
 *    return none of them, and the heap's must reuse them;
 *  - a block freed by a thread with no heap (the shared empty heap's bins
 *    stay empty: their room counts never go above 0, whatever number of
 *    such frees run at once): 4 threads that never allocate free 50,000
 *    blocks each, then every block the main thread allocates must be
 *    distinct and keep its contents. */
#include "testutil.h"
#include <pthread.h>

#define N 512
#define SIZE 64

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static bool in_sorted(void *const *set, size_t n, const void *p) {
  return bsearch(&p, set, n, sizeof *set, cmp_ptr) != NULL;
}

static void first_class_heap(void) {
  static void *a[N], *b[N], *c[N];
  /* this thread's heap, its bin of the size empty with room (a malloc
   * found it empty: the room is the whole capacity) */
  for (int i = 0; i < 4; i++) c[i] = malloc(SIZE);
  for (int i = 0; i < 4; i++) free(c[i]);
  for (int i = 0; i < 4; i++) c[i] = malloc(SIZE);
  lithe_heap_t *u = lithe_heap_new();
  CHECK(u != NULL);
  for (int i = 0; i < N; i++) CHECK((a[i] = lithe_heap_malloc(u, SIZE)) != NULL);
  for (int i = 0; i < N; i++) free(a[i]);
  qsort(a, N, sizeof a[0], cmp_ptr);
  int taken = 0;
  for (int i = 4; i < N; i++) {
    CHECK((c[i] = malloc(SIZE)) != NULL);
    if (in_sorted(a, N, c[i]) && taken++ < 5)
      fprintf(stderr, "malloc returned %p, a block of the first-class heap\n", c[i]);
  }
  for (int i = 0; i < N; i++) CHECK((b[i] = lithe_heap_malloc(u, SIZE)) != NULL);
  int reused = 0;
  for (int i = 0; i < N; i++) reused += in_sorted(a, N, b[i]);
  printf("first-class heap: of %d blocks freed by this thread, %d came back from its own malloc, "
         "%d from the heap's\n", N, taken, reused);
  CHECKF(taken == 0, "%d blocks of a first-class heap went into this thread's bin", taken);
  /* it collects them when its span's own list runs dry (half of them
   * here, with the library before the change too) */
  CHECKF(reused > 0, "the heap got back none of the %d blocks freed", N);
  for (int i = 0; i < N; i++) free(c[i]);
  lithe_heap_destroy(u);
}

#define THREADS 4
#define PER_THREAD 50000
static void **g_blocks;
static void *g_own[THREADS][4];

/* frees only, then its first mallocs (heap-less: from the shared heap,
 * whose bins a free must never have filled) */
static void *free_only(void *arg) {
  size_t t = (size_t)arg;
  for (size_t i = t; i < (size_t)THREADS * PER_THREAD; i += THREADS) free(g_blocks[i]);
  for (int k = 0; k < 4; k++) {
    g_own[t][k] = malloc(SIZE);
    if (g_own[t][k]) memset(g_own[t][k], (int)(0x10 + t * 4 + (size_t)k), SIZE);
  }
  return NULL;
}

static void heapless_frees(void) {
  size_t n = (size_t)THREADS * PER_THREAD;
  g_blocks = malloc(n * sizeof *g_blocks);
  CHECK(g_blocks != NULL);
  for (size_t i = 0; i < n; i++) CHECK((g_blocks[i] = malloc(SIZE)) != NULL);
  pthread_t th[THREADS];
  for (size_t t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, free_only, (void *)t) == 0);
  for (size_t t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
  for (size_t t = 0; t < THREADS; t++)
    for (int k = 0; k < 4; k++) CHECK(g_own[t][k] != NULL);
  /* the freed blocks come back through their spans: all distinct, all kept */
  for (size_t i = 0; i < n; i++) {
    CHECK((g_blocks[i] = malloc(SIZE)) != NULL);
    memcpy(g_blocks[i], &i, sizeof i);
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    size_t v;
    memcpy(&v, g_blocks[i], sizeof v);
    if (v != i && bad++ < 5) fprintf(stderr, "block %zu at %p holds %zu\n", i, g_blocks[i], v);
  }
  for (size_t t = 0; t < THREADS; t++)
    for (int k = 0; k < 4; k++) {
      const unsigned char *q = g_own[t][k];
      for (int j = 0; j < SIZE; j++)
        if (q[j] != (unsigned char)(0x10 + t * 4 + (size_t)k) && bad++ < 5)
          fprintf(stderr, "thread %zu's block %p byte %d overwritten\n", t, (const void *)q, j);
      free(g_own[t][k]);
    }
  printf("heap-less frees: %zu blocks freed by %d threads without a heap, %zu reused blocks clobbered\n",
         n, THREADS, bad);
  CHECKF(bad == 0, "%zu blocks handed out twice after heap-less frees", bad);
  for (size_t i = 0; i < n; i++) free(g_blocks[i]);
  free(g_blocks);
}

int main(void) {
  tu_require_lithe();
  first_class_heap();
  heapless_frees();
  return 0;
}
