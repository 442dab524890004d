/* SPDX-License-Identifier: MIT */
/* api_basic: C semantics of malloc, free, calloc, realloc, reallocarray,
 * malloc_usable_size and malloc_trim, including the failure cases
 * (overflow, impossible sizes) and their errno.
 *
 * What the tests check, in detail:
 *
 * `api_basic`: malloc(0) unique; free(NULL); realloc(NULL, n) / realloc(p,
 * 0); NULL + ENOMEM for impossible sizes (SIZE_MAX, PTRDIFF_MAX+1, 2^47
 * ...) in every function; calloc / reallocarray overflow; a failed realloc
 * leaves the block alone; calloc zero after reuse of dirty memory; realloc
 * keeps contents growing to 130 MiB and back; usable size writable, no
 * overlap */
#include "testutil.h"

#include <malloc.h>
#include <stdbool.h>

/* a failed realloc leaves the block valid: that is what is checked here */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

/* volatile sizes keep the compiler from reasoning about the calls */
static volatile size_t vSIZE_MAX = SIZE_MAX;

static void check_ptr(const void *p, size_t n) {
  CHECKF(p != NULL, "allocation of %zu bytes failed", n);
  CHECKF(((uintptr_t)p & 15) == 0, "%p (size %zu) is not 16-byte aligned", p, n);
  size_t u = malloc_usable_size((void *)p);
  CHECKF(u >= n, "malloc_usable_size(%p)=%zu < requested %zu", p, u, n);
}

static void test_malloc_zero(void) {
  enum { N = 1000 };
  static void *ps[N];
  for (int i = 0; i < N; i++) {
    ps[i] = malloc(0);
    check_ptr(ps[i], 0);
  }
  /* all distinct: sort-free O(n^2) on 1000 is fine */
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++)
      CHECKF(ps[i] != ps[j], "malloc(0) returned %p twice", ps[i]);
  for (int i = 0; i < N; i++) free(ps[i]);
  printf("malloc(0): %d unique, freeable pointers\n", N);
}

static void test_free_null(void) {
  for (int i = 0; i < 100000; i++) free(NULL);
  CHECK(malloc_usable_size(NULL) == 0);
  printf("free(NULL): no-op\n");
}

static void test_realloc_null_and_zero(void) {
  /* realloc(NULL, n) behaves like malloc(n) */
  char *p = realloc(NULL, 100);
  check_ptr(p, 100);
  tu_fill(p, 100, 42);
  CHECK(tu_check(p, 100, 42) < 0);
  free(p);
  p = realloc(NULL, 0);
  CHECK(p != NULL); /* = malloc(0): a unique pointer */
  free(p);

  /* realloc(p, 0) frees p and returns NULL. If it did not free, 200000
   * blocks of 1000 bytes (~200 MiB) would leak and show in RSS. */
  long rss0 = tu_status_kb("VmRSS");
  for (int i = 0; i < 200000; i++) {
    char *q = malloc(1000);
    CHECK(q != NULL);
    memset(q, 0x5a, 1000);
    errno = 0;
    char *r = realloc(q, 0);
    CHECKF(r == NULL, "realloc(p, 0) returned %p, expected NULL", (void *)r);
  }
  long rss1 = tu_status_kb("VmRSS");
  printf("realloc(p, 0) x200000 of 1000-byte blocks: VmRSS %ld -> %ld KiB\n", rss0, rss1);
  CHECKF(rss1 - rss0 < 32 * 1024, "RSS grew by %ld KiB: realloc(p, 0) does not free",
         rss1 - rss0);
}

static void expect_enomem(void *p, const char *what) {
  int e = errno;
  CHECKF(p == NULL, "%s returned %p, expected NULL", what, p);
  CHECKF(e == ENOMEM, "%s: errno=%d (%s), expected ENOMEM", what, e, strerror(e));
}

static void test_impossible_sizes(void) {
  const size_t pmax = (size_t)PTRDIFF_MAX;
  const size_t sizes[] = {
      vSIZE_MAX,          vSIZE_MAX - 1,        vSIZE_MAX - 15,      vSIZE_MAX - 16,
      vSIZE_MAX - 4095,   vSIZE_MAX - 4096,     vSIZE_MAX - (1u << 20),
      vSIZE_MAX - ((size_t)64 << 20),           pmax + 1,            pmax,
      pmax - 4096,        (size_t)1 << 47,      ((size_t)1 << 47) + 1, (size_t)1 << 48,
      (size_t)1 << 56,    (size_t)1 << 62,      (size_t)3 << 62,
  };
  char msg[128];
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    errno = 0;
    snprintf(msg, sizeof msg, "malloc(%#zx)", n);
    expect_enomem(malloc(n), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "calloc(1, %#zx)", n);
    expect_enomem(calloc(1, n), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "calloc(%#zx, 1)", n);
    expect_enomem(calloc(n, 1), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "realloc(NULL, %#zx)", n);
    expect_enomem(realloc(NULL, n), msg);

    /* a failed realloc leaves the block alone */
    char *p = malloc(200);
    check_ptr(p, 200);
    tu_fill(p, 200, 7 + i);
    errno = 0;
    snprintf(msg, sizeof msg, "realloc(p, %#zx)", n);
    expect_enomem(realloc(p, n), msg);
    CHECKF(tu_check(p, 200, 7 + i) < 0, "block changed by a failed realloc");
    errno = 0;
    snprintf(msg, sizeof msg, "reallocarray(p, 1, %#zx)", n);
    expect_enomem(reallocarray(p, 1, n), msg);
    CHECKF(tu_check(p, 200, 7 + i) < 0, "block changed by a failed reallocarray");
    free(p);

    void *q = (void *)0x1234;
    int rc = posix_memalign(&q, 64, n);
    CHECKF(rc == ENOMEM, "posix_memalign(64, %#zx) returned %d, expected ENOMEM", n, rc);
    CHECKF(q == (void *)0x1234, "posix_memalign changed *out on failure");
    errno = 0;
    snprintf(msg, sizeof msg, "aligned_alloc(4096, %#zx)", n);
    expect_enomem(aligned_alloc(4096, n), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "memalign(65536, %#zx)", n);
    expect_enomem(memalign(65536, n), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "valloc(%#zx)", n);
    expect_enomem(valloc(n), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "pvalloc(%#zx)", n);
    expect_enomem(pvalloc(n), msg);
  }
  printf("impossible sizes: %zu sizes x 10 functions -> NULL/ENOMEM\n",
         sizeof sizes / sizeof *sizes);
}

static void test_calloc_overflow(void) {
  const struct { size_t a, b; } cases[] = {
      {vSIZE_MAX, vSIZE_MAX},
      {vSIZE_MAX / 2, 3},
      {3, vSIZE_MAX / 2},
      {(size_t)1 << 32, (size_t)1 << 32},
      {((size_t)1 << 32) + 1, (size_t)1 << 32},
      {2, vSIZE_MAX / 2 + 1},
      {vSIZE_MAX / 16 + 1, 16},
      {65537, 281470681808895ULL}, /* product wraps to a small number */
      {(size_t)1 << 24, (size_t)1 << 40},
  };
  char msg[128];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    errno = 0;
    snprintf(msg, sizeof msg, "calloc(%#zx, %#zx)", cases[i].a, cases[i].b);
    expect_enomem(calloc(cases[i].a, cases[i].b), msg);
    errno = 0;
    snprintf(msg, sizeof msg, "reallocarray(NULL, %#zx, %#zx)", cases[i].a, cases[i].b);
    expect_enomem(reallocarray(NULL, cases[i].a, cases[i].b), msg);
    char *p = malloc(50);
    check_ptr(p, 50);
    tu_fill(p, 50, 99);
    errno = 0;
    snprintf(msg, sizeof msg, "reallocarray(p, %#zx, %#zx)", cases[i].a, cases[i].b);
    expect_enomem(reallocarray(p, cases[i].a, cases[i].b), msg);
    CHECK(tu_check(p, 50, 99) < 0);
    free(p);
  }
  /* and the non-overflowing forms work */
  int *a = reallocarray(NULL, 1000, sizeof(int));
  check_ptr(a, 1000 * sizeof(int));
  for (int i = 0; i < 1000; i++) a[i] = i * 3;
  a = reallocarray(a, 100000, sizeof(int));
  check_ptr(a, 100000 * sizeof(int));
  for (int i = 0; i < 1000; i++) CHECK(a[i] == i * 3);
  free(a);
  char *c = calloc(37, 113);
  check_ptr(c, 37 * 113);
  CHECK(tu_nonzero(c, 37 * 113) < 0);
  free(c);
  c = calloc(0, 0);
  CHECK(c != NULL);
  free(c);
  printf("calloc/reallocarray overflow: %zu cases -> NULL/ENOMEM\n",
         sizeof cases / sizeof *cases);
}

/* Dirty blocks of each size, freed, then calloc'd: must read zero. */
static void test_calloc_zero_after_reuse(void) {
  static const size_t sizes[] = {1,     8,      16,     24,      48,      100,
                                 256,   512,    1000,   1024,    2000,    4000,
                                 4096,  8192,   10000,  16384,   40000,   65536,
                                 100000, 262144, 300000, 1 << 20, 3 << 20, 9 << 20};
  enum { MAXN = 256 };
  static char *ps[MAXN];
  size_t total = 0;
  for (int round = 0; round < 3; round++) {
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      size_t n = sizes[si];
      int cnt = n <= 4096 ? MAXN : n <= 65536 ? 64 : 8;
      for (int i = 0; i < cnt; i++) {
        ps[i] = malloc(n);
        check_ptr(ps[i], n);
        memset(ps[i], 0xA5, malloc_usable_size(ps[i]));
      }
      for (int i = 0; i < cnt; i++) free(ps[i]);
      for (int i = 0; i < cnt; i++) {
        ps[i] = round == 1 ? calloc(n, 1) : calloc(1, n);
        check_ptr(ps[i], n);
        long off = tu_nonzero(ps[i], n);
        CHECKF(off < 0, "calloc(%zu) block %p has byte %ld = 0x%02x, not zero", n,
               (void *)ps[i], off, (unsigned char)ps[i][off]);
        total++;
      }
      for (int i = 0; i < cnt; i++) {
        memset(ps[i], 0x3C, n);
        free(ps[i]);
      }
    }
  }
  printf("calloc after reuse of dirty memory: %zu blocks zeroed\n", total);
}

/* Grows a block step by step and shrinks it back; contents survive. */
static void test_realloc_preserves(void) {
  static const size_t steps[] = {1,      10,     16,     17,      100,      1000,
                                 4095,   4097,   20000,  65536,   70000,    200000,
                                 1 << 20, 5 << 20, 16 << 20, 70 << 20, 130 << 20};
  const size_t ns = sizeof steps / sizeof *steps;
  const uint64_t seed = 0xC0FFEE;
  char *p = NULL;
  size_t have = 0;
  for (size_t i = 0; i < ns; i++) {
    char *q = realloc(p, steps[i]);
    check_ptr(q, steps[i]);
    long off = tu_check(q, have, seed);
    CHECKF(off < 0, "grow %zu -> %zu: byte %ld changed", have, steps[i], off);
    tu_fill(q, steps[i], seed);
    p = q;
    have = steps[i];
  }
  for (size_t i = ns; i-- > 0;) {
    char *q = realloc(p, steps[i]);
    check_ptr(q, steps[i]);
    long off = tu_check(q, steps[i], seed);
    CHECKF(off < 0, "shrink %zu -> %zu: byte %ld changed", have, steps[i], off);
    p = q;
    have = steps[i];
  }
  free(p);
  /* in-place-ish small changes on a block with neighbours */
  char *a = malloc(300), *b = malloc(300), *c = malloc(300);
  tu_fill(a, 300, 1);
  tu_fill(b, 300, 2);
  tu_fill(c, 300, 3);
  for (size_t n = 300; n < 5000; n += 37) {
    b = realloc(b, n);
    check_ptr(b, n);
    CHECK(tu_check(b, 300, 2) < 0);
    CHECK(tu_check(a, 300, 1) < 0);
    CHECK(tu_check(c, 300, 3) < 0);
  }
  for (size_t n = 5000; n > 300; n -= 41) {
    b = realloc(b, n);
    check_ptr(b, n);
    CHECK(tu_check(b, 300, 2) < 0);
  }
  free(a);
  free(b);
  free(c);
  printf("realloc preserves contents: %zu steps up and down to %zu MiB\n", ns,
         steps[ns - 1] >> 20);
}

/* The whole usable size is writable and blocks never overlap. */
static void test_usable_and_overlap(void) {
  enum { N = 20000 };
  static char *ps[N];
  static size_t us[N];
  uint64_t rng = 12345;
  for (int i = 0; i < N; i++) {
    size_t n = 1 + tu_rand(&rng) % (i % 50 == 0 ? 100000 : 2000);
    ps[i] = malloc(n);
    check_ptr(ps[i], n);
    us[i] = malloc_usable_size(ps[i]);
    tu_fill(ps[i], us[i], tu_seed(ps[i], us[i]));
  }
  for (int i = 0; i < N; i++) {
    long off = tu_check(ps[i], us[i], tu_seed(ps[i], us[i]));
    CHECKF(off < 0, "block %p (usable %zu) overwritten at %ld: blocks overlap", (void *)ps[i],
           us[i], off);
  }
  for (int i = 0; i < N; i += 2) free(ps[i]);
  for (int i = 1; i < N; i += 2) {
    CHECK(tu_check(ps[i], us[i], tu_seed(ps[i], us[i])) < 0);
    free(ps[i]);
  }
  int r = malloc_trim(0);
  CHECK(r == 0 || r == 1);
  printf("usable size writable, no overlap: %d blocks; malloc_trim(0)=%d\n", N, r);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  test_free_null();
  test_malloc_zero();
  test_realloc_null_and_zero();
  test_impossible_sizes();
  test_calloc_overflow();
  test_calloc_zero_after_reuse();
  test_realloc_preserves();
  test_usable_and_overlap();
  printf("api_basic: OK\n");
  return 0;
}
