/* SPDX-License-Identifier: MIT */
/* api_heaps: first-class heaps (src/userheap.c).
 *   content: 20,000 blocks of mixed sizes (small, large, xlarge; malloc,
 *     calloc, memalign, realloc) patterned and checked, calloc zero;
 *   alignment: memalign 16 .. 1 MiB;
 *   free() of heap blocks by this thread and by other threads (some onto
 *     full spans: the notification path), then destroy while other blocks'
 *     remote frees are still on their spans' lists;
 *   destroy then reuse: a new heap gets the memory back (committed bounded);
 *   5,000 heaps created and destroyed: committed and metadata stay bounded;
 *   misuse (in children): destroy twice, malloc from a destroyed heap,
 *     a Debug build: two threads allocating from one heap at once.
 * Needs lithe.
 *
 * What the tests check, in detail:
 *
 * `api_heaps`: first-class heaps: 20,000 blocks (small, large, 17 MiB
 * xlarge; malloc, calloc zero, memalign 64, realloc) patterned and checked;
 * memalign 16 B .. 1 MiB; EINVAL / ENOMEM; a quarter freed here, a quarter
 * by two other threads, destroy with those remote frees on the spans:
 * committed - purged back within 4 MiB of the start; 3 rounds of fill +
 * destroy; 5,000 heaps made and destroyed: metadata unchanged; in children:
 * destroy twice and malloc after destroy abort with the heap's address; a
 * Debug build: two threads allocating from one heap reported */
#include "testutil.h"
#include <malloc.h>
#include <pthread.h>

enum { NB = 20000 };
static void *blk[NB];
static size_t len[NB];

static size_t pick(uint64_t *r, int i) {
  uint64_t x = tu_rand(r);
  if (i % 997 == 0) return (size_t)17 << 20;          /* xlarge */
  if (i % 101 == 0) return 40000 + (size_t)(x % 300000); /* large */
  return 1 + (size_t)(x % (i % 7 == 0 ? 32768 : 512));
}

static void fill(lithe_heap_t *h) {
  uint64_t r = 42;
  for (int i = 0; i < NB; i++) {
    size_t n = pick(&r, i);
    void *p;
    switch (i % 4) {
      case 0: p = lithe_heap_malloc(h, n); break;
      case 1:
        p = lithe_heap_calloc(h, 1, n);
        CHECKF(p && tu_nonzero(p, n) < 0, "calloc(%zu) not zero", n);
        break;
      case 2: p = lithe_heap_memalign(h, 64, n); CHECK(((uintptr_t)p & 63) == 0); break;
      default:
        p = lithe_heap_realloc(h, lithe_heap_malloc(h, n / 2 + 1), n);
        break;
    }
    CHECKF(p != NULL, "block %d (%zu bytes) failed", i, n);
    CHECK(lithe_malloc_usable_size(p) >= n);
    tu_fill(p, n, (uint64_t)i);
    blk[i] = p;
    len[i] = n;
  }
  for (int i = 0; i < NB; i++) CHECKF(tu_check(blk[i], len[i], (uint64_t)i) < 0, "block %d overwritten", i);
}

struct range { int from, to; };
static void *free_range(void *arg) {
  struct range *r = arg;
  for (int i = r->from; i < r->to; i++) { free(blk[i]); blk[i] = NULL; }
  return NULL;
}

/* committed and not purged: what lithe holds that may be resident */
static size_t committed(void) {
  lithe_collect(true);
  lithe_stats_t st;
  lithe_stats_get(&st);
  return st.committed - st.purged;
}

static void misuse_destroy_twice(void *arg) {
  (void)arg;
  lithe_heap_t *h = lithe_heap_new();
  lithe_heap_malloc(h, 10);
  lithe_heap_destroy(h);
  lithe_heap_destroy(h);
}
static void misuse_use_destroyed(void *arg) {
  (void)arg;
  lithe_heap_t *h = lithe_heap_new();
  lithe_heap_destroy(h);
  lithe_heap_malloc(h, 10);
}
static lithe_heap_t *shared;
static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000000; i++) lithe_heap_malloc(shared, 16);
  return NULL;
}
static void misuse_two_threads(void *arg) {
  (void)arg;
  shared = lithe_heap_new();
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, hammer, NULL);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

static void expect_report(const char *name, void (*fn)(void *), const char *what) {
  static tu_child r;
  tu_run_fn(&r, fn, NULL, 60);
  char d[128];
  tu_describe(&r, d, sizeof d);
  printf("%s: %s; stderr: %.160s\n", name, d, r.err);
  CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "%s: want SIGABRT, got %s", name, d);
  CHECKF(strstr(r.err, what) != NULL, "%s: no '%s' in stderr", name, what);
}

int main(void) {
  tu_require_lithe();
  size_t c0 = committed();

  /* content, alignment */
  lithe_heap_t *h = lithe_heap_new();
  CHECK(h != NULL);
  fill(h);
  for (size_t a = 16; a <= (1u << 20); a <<= 1) {
    void *p = lithe_heap_memalign(h, a, 100);
    CHECKF(p && ((uintptr_t)p & (a - 1)) == 0, "memalign(%zu) = %p", a, p);
  }
  errno = 0;
  CHECK(lithe_heap_memalign(h, 48, 10) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(lithe_heap_malloc(h, SIZE_MAX) == NULL && errno == ENOMEM);
  CHECK(lithe_heap_calloc(h, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
  size_t c1 = committed();
  printf("heap with %d blocks: committed - purged %zu kB (start %zu kB)\n", NB, c1 >> 10, c0 >> 10);

  /* frees: a quarter here, a quarter by two other threads, then destroy
   * with those remote frees sitting on the spans */
  for (int i = 0; i < NB / 4; i++) { free(blk[i]); blk[i] = NULL; }
  struct range r1 = {NB / 4, 3 * NB / 8}, r2 = {3 * NB / 8, NB / 2};
  pthread_t t1, t2;
  CHECK(pthread_create(&t1, NULL, free_range, &r1) == 0 && pthread_create(&t2, NULL, free_range, &r2) == 0);
  CHECK(pthread_join(t1, NULL) == 0 && pthread_join(t2, NULL) == 0);
  for (int i = NB / 2; i < NB; i++) CHECKF(tu_check(blk[i], len[i], (uint64_t)i) < 0, "block %d overwritten", i);
  lithe_heap_destroy(h);
  size_t c2 = committed();
  printf("after destroy + collect: committed - purged %zu kB\n", c2 >> 10);
  CHECKF(c2 <= c0 + (4u << 20), "committed %zu kB after destroy, %zu kB at start", c2 >> 10, c0 >> 10);

  /* destroy then reuse */
  for (int round = 0; round < 3; round++) {
    h = lithe_heap_new();
    fill(h);
    lithe_heap_destroy(h);
  }
  size_t c3 = committed();
  printf("3 more rounds: committed %zu kB\n", c3 >> 10);
  CHECKF(c3 <= c0 + (4u << 20), "committed %zu kB after 3 rounds", c3 >> 10);

  /* thousands of heaps */
  lithe_stats_t s0, s1;
  lithe_stats_get(&s0);
  for (int i = 0; i < 5000; i++) {
    lithe_heap_t *x = lithe_heap_new();
    CHECK(x != NULL);
    for (int k = 0; k < 20; k++) CHECK(lithe_heap_malloc(x, 16 + 48 * (size_t)k) != NULL);
    if (i % 50 == 0) CHECK(lithe_heap_malloc(x, 100000) != NULL);
    lithe_heap_destroy(x);
  }
  size_t c4 = committed();
  lithe_stats_get(&s1);
  printf("5000 heaps: committed %zu kB, metadata %zu -> %zu kB\n", c4 >> 10, s0.metadata >> 10, s1.metadata >> 10);
  CHECKF(c4 <= c0 + (4u << 20), "committed %zu kB after 5000 heaps", c4 >> 10);
  CHECKF(s1.metadata <= s0.metadata + (256u << 10), "metadata grew %zu kB", (s1.metadata - s0.metadata) >> 10);

  /* misuse */
  expect_report("destroy twice", misuse_destroy_twice, "lithe_heap_destroy(");
  expect_report("use after destroy", misuse_use_destroyed, "heap already destroyed");
#ifndef NDEBUG
  expect_report("two threads", misuse_two_threads, "heap used by two threads at once");
#else
  (void)misuse_two_threads;
  printf("two threads at once: detected in a Debug build only (this is Release)\n");
#endif
  printf("api_heaps: OK\n");
  return 0;
}
