/* SPDX-License-Identifier: MIT */
/* api_align: posix_memalign, aligned_alloc, memalign, valloc, pvalloc —
 * alignments 1..4 MiB honoured, bad alignments refused with EINVAL.
 *
 * What the tests check, in detail:
 *
 * `api_align`: posix_memalign / aligned_alloc / memalign for alignments up
 * to 4 MiB (and 8..256 MiB), also reallocated; EINVAL for bad alignments
 * (posix_memalign leaves `*out` alone; aligned_alloc / memalign: lithe
 * only); valloc / pvalloc page rounding */
#include "testutil.h"

#include <malloc.h>

static size_t page;

static void check_block(void *p, size_t align, size_t n, const char *fn) {
  CHECKF(p != NULL, "%s(align %zu, size %zu) failed", fn, align, n);
  size_t need = align < 16 ? 16 : align;
  CHECKF(((uintptr_t)p & (need - 1)) == 0, "%s(align %zu, size %zu) = %p: misaligned", fn,
         align, n, p);
  size_t u = malloc_usable_size(p);
  CHECKF(u >= n, "%s(align %zu, size %zu): usable %zu < size", fn, align, n, u);
}

typedef void *(*alloc_fn)(size_t align, size_t n);
static void *via_posix(size_t align, size_t n) {
  void *p = (void *)0x77;
  int rc = posix_memalign(&p, align, n);
  CHECKF(rc == 0, "posix_memalign(%zu, %zu) = %d", align, n, rc);
  return p;
}
static void *via_aligned_alloc(size_t align, size_t n) { return aligned_alloc(align, n); }
static void *via_memalign(size_t align, size_t n) { return memalign(align, n); }

/* Every power-of-two alignment up to 4 MiB, several sizes each, all blocks
 * of one alignment live at once and checked for overlap. */
static void sweep(alloc_fn f, const char *name, size_t min_align) {
  size_t count = 0;
  for (size_t align = min_align; align <= ((size_t)1 << 22); align <<= 1) {
    size_t sizes[] = {1,         8,         align / 2 ? align / 2 : 1, align - 1 ? align - 1 : 1,
                      align,     align + 1, 3 * align + 7,             100000,
                      16,        align * 2};
    enum { NS = sizeof sizes / sizeof *sizes, REP = 3 };
    void *ps[NS * REP];
    for (int r = 0; r < REP; r++)
      for (int i = 0; i < NS; i++) {
        void *p = f(align, sizes[i]);
        check_block(p, align, sizes[i], name);
        tu_fill(p, sizes[i], tu_seed(p, sizes[i]));
        ps[r * NS + i] = p;
        count++;
      }
    for (int r = 0; r < REP; r++)
      for (int i = 0; i < NS; i++) {
        void *p = ps[r * NS + i];
        long off = tu_check(p, sizes[i], tu_seed(p, sizes[i]));
        CHECKF(off < 0, "%s(align %zu) block %p size %zu overwritten at %ld", name, align, p,
               sizes[i], off);
      }
    /* aligned blocks realloc like any other: grown, shrunk, contents kept */
    for (int r = 0; r < REP; r++)
      for (int i = 0; i < NS; i++) {
        void *p = ps[r * NS + i];
        size_t n = sizes[i];
        uint64_t seed = tu_seed(p, n);
        size_t to = r == 0 ? 2 * n + 100 : r == 1 ? n / 2 + 1 : n + 1;
        void *q = realloc(p, to);
        CHECKF(q != NULL && ((uintptr_t)q & 15) == 0, "realloc(%s block) failed", name);
        size_t keep = to < n ? to : n;
        CHECKF(tu_check(q, keep, seed) < 0, "realloc of a %s(align %zu) block lost data", name,
               align);
        CHECK(malloc_usable_size(q) >= to);
        ps[r * NS + i] = q;
      }
    for (int i = 0; i < NS * REP; i++) free(ps[i]);
  }
  printf("%s: alignments %zu..4 MiB, %zu blocks OK (also reallocated)\n", name, min_align, count);
}

static void bad_alignments(void) {
  /* posix_memalign: not a power of two, or not a multiple of sizeof(void*) */
  const size_t bad_posix[] = {0, 1, 2, 4, 3, 12, 24, 48, 100, 4095, 4097, ((size_t)1 << 20) + 8,
                              SIZE_MAX, SIZE_MAX / 2};
  for (size_t i = 0; i < sizeof bad_posix / sizeof *bad_posix; i++) {
    if (sizeof(void *) == 4 && bad_posix[i] == 4) continue;
    void *p = (void *)0x1234;
    int rc = posix_memalign(&p, bad_posix[i], 64);
    CHECKF(rc == EINVAL, "posix_memalign(&p, %zu, 64) = %d, expected EINVAL", bad_posix[i], rc);
    CHECKF(p == (void *)0x1234, "posix_memalign changed *out on failure (align %zu)",
           bad_posix[i]);
  }
  /* sizeof(void*) itself is fine */
  void *p = NULL;
  CHECK(posix_memalign(&p, sizeof(void *), 10) == 0);
  check_block(p, sizeof(void *), 10, "posix_memalign");
  free(p);
  printf("posix_memalign: %zu bad alignments -> EINVAL, *out untouched\n",
         sizeof bad_posix / sizeof *bad_posix);

#ifdef HAVE_LITHE
  /* lithe refuses a non-power-of-two alignment in aligned_alloc and memalign
   * (glibc before 2.38 rounds it up instead, so only checked with lithe) */
  const size_t bad[] = {0, 3, 12, 24, 48, 100, 4095, 4097, ((size_t)1 << 20) + 16, SIZE_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    errno = 0;
    void *q = aligned_alloc(bad[i], 256);
    int e = errno;
    CHECKF(q == NULL && e == EINVAL, "aligned_alloc(%zu, 256) = %p errno %d, expected NULL/EINVAL",
           bad[i], q, e);
    errno = 0;
    q = memalign(bad[i], 256);
    e = errno;
    CHECKF(q == NULL && e == EINVAL, "memalign(%zu, 256) = %p errno %d, expected NULL/EINVAL",
           bad[i], q, e);
  }
  printf("aligned_alloc/memalign: %zu bad alignments -> NULL/EINVAL\n", sizeof bad / sizeof *bad);
#endif
}

static void page_allocs(void) {
  const size_t sizes[] = {0, 1, 100, page - 1, page, page + 1, 5 * page + 3, 1 << 20, (1 << 20) + 1,
                          (size_t)70 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    char *v = valloc(n);
    check_block(v, page, n, "valloc");
    memset(v, 0x11, n);
    char *pv = pvalloc(n);
    CHECKF(pv != NULL && ((uintptr_t)pv & (page - 1)) == 0, "pvalloc(%zu) = %p", n, (void *)pv);
    size_t rounded = (n + page - 1) & ~(page - 1);
    size_t u = malloc_usable_size(pv);
    CHECKF(u >= rounded, "pvalloc(%zu): usable %zu < %zu (rounded to pages)", n, u, rounded);
    memset(pv, 0x22, rounded); /* the whole rounded size is usable */
    for (size_t j = 0; j < n; j++)
      if ((unsigned char)v[j] != 0x11) FAIL("valloc block changed at %zu", j);
    free(v);
    free(pv);
  }
#ifdef HAVE_LITHE
  char *z = pvalloc(0); /* lithe: one page */
  CHECKF(z && malloc_usable_size(z) >= page, "pvalloc(0) = %p, usable %zu", (void *)z,
         z ? malloc_usable_size(z) : 0);
  memset(z, 1, page);
  free(z);
#endif
  printf("valloc/pvalloc: page-aligned, pvalloc rounds up to whole pages\n");
}

/* Alignments past the arena and page-run sizes: 8 MiB .. 256 MiB. */
static void huge_alignments(void) {
  int count = 0;
  for (size_t align = (size_t)1 << 23; align <= ((size_t)1 << 28); align <<= 1) {
    const size_t sizes[] = {100, (size_t)3 << 20, (size_t)20 << 20};
    for (int i = 0; i < 3; i++) {
      void *p = NULL;
      int rc = posix_memalign(&p, align, sizes[i]);
      CHECKF(rc == 0, "posix_memalign(%zu MiB, %zu) = %d", align >> 20, sizes[i], rc);
      check_block(p, align, sizes[i], "posix_memalign");
      tu_fill(p, sizes[i] < 65536 ? sizes[i] : 65536, 5);
      void *q = aligned_alloc(align, sizes[i]);
      check_block(q, align, sizes[i], "aligned_alloc");
      memset(q, 1, sizes[i] < 65536 ? sizes[i] : 65536);
      CHECK(tu_check(p, sizes[i] < 65536 ? sizes[i] : 65536, 5) < 0);
      free(q);
      free(p);
      count += 2;
    }
  }
  printf("huge alignments 8 MiB .. 256 MiB: %d blocks OK\n", count);
}

/* Mixed aligned and plain blocks, freed in random order. */
static void mixed(void) {
  enum { N = 4000 };
  static void *ps[N];
  static size_t ns[N];
  uint64_t rng = 777;
  for (int i = 0; i < N; i++) {
    size_t n = 1 + tu_rand(&rng) % 3000;
    size_t align = (size_t)16 << (tu_rand(&rng) % 9); /* 16 .. 4096 */
    int kind = (int)(tu_rand(&rng) % 4);
    void *p;
    if (kind == 0) p = malloc(n);
    else if (kind == 1) p = via_posix(align, n);
    else if (kind == 2) p = aligned_alloc(align, n);
    else p = memalign(align, n);
    check_block(p, kind ? align : 16, n, "mixed");
    ns[i] = n;
    ps[i] = p;
    tu_fill(p, n, tu_seed(p, n));
  }
  for (int i = N - 1; i > 0; i--) { /* shuffle */
    int j = (int)(tu_rand(&rng) % (uint64_t)(i + 1));
    void *tp = ps[i];
    ps[i] = ps[j];
    ps[j] = tp;
    size_t tn = ns[i];
    ns[i] = ns[j];
    ns[j] = tn;
  }
  for (int i = 0; i < N; i++) {
    CHECKF(tu_check(ps[i], ns[i], tu_seed(ps[i], ns[i])) < 0, "mixed block %p overwritten", ps[i]);
    free(ps[i]);
  }
  printf("mixed aligned/plain: %d blocks, random free order OK\n", N);
}

/* lithe documents (docs/semantics.md) that posix_memalign leaves errno alone */
static void posix_memalign_errno(void) {
#ifdef HAVE_LITHE
  /* lithe documents that posix_memalign leaves errno alone */
  for (int i = 0; i < 2; i++) {
    void *q = NULL;
    errno = 12345;
    int rc = i ? posix_memalign(&q, 64, SIZE_MAX - 10) : posix_memalign(&q, 24, 10);
    CHECKF(rc == (i ? ENOMEM : EINVAL) && errno == 12345,
           "posix_memalign failing with %d changed errno to %d", rc, errno);
    errno = 12345;
    CHECK(posix_memalign(&q, 64, 100) == 0 && errno == 12345);
    free(q);
  }
  printf("posix_memalign leaves errno alone\n");
#endif
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  page = (size_t)sysconf(_SC_PAGESIZE);
  tu_require_lithe();
  sweep(via_posix, "posix_memalign", sizeof(void *));
  sweep(via_aligned_alloc, "aligned_alloc", 1);
  sweep(via_memalign, "memalign", 1);
  bad_alignments();
  page_allocs();
  mixed();
  huge_alignments();
  posix_memalign_errno();
  printf("api_align: OK\n");
  return 0;
}
