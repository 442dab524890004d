/* SPDX-License-Identifier: MIT */
/* api_prefixed: the lithe_ forms of the API (same semantics as the plain
 * ones), lithe_free_sized, lithe_collect, lithe_stats_get / _print and
 * lithe_version. Needs lithe.
 *
 * What the tests check, in detail:
 *
 * `api_prefixed`: the `lithe_` functions, `lithe_collect`,
 * `lithe_stats_get` (counters move as expected), `lithe_stats_print`,
 * `lithe_version`; documented details: 64/4096-multiple size classes
 * aligned to that, impossible sizes make no system call, `malloc_trim`
 * returns 1 after freeing */
#include "testutil.h"

#include <malloc.h>
#include <stdbool.h>

#ifndef HAVE_LITHE
#error "api_prefixed needs lithe"
#endif

static volatile size_t vSIZE_MAX = SIZE_MAX;

static void check_ptr(const void *p, size_t n) {
  CHECKF(p != NULL, "allocation of %zu failed", n);
  CHECKF(((uintptr_t)p & 15) == 0, "%p not 16-byte aligned", p);
  CHECKF(lithe_malloc_usable_size(p) >= n, "usable %zu < %zu", lithe_malloc_usable_size(p), n);
}

#define EXPECT_NULL_ERRNO(expr, err)                                                         \
  do {                                                                                       \
    errno = 0;                                                                               \
    void *r_ = (expr);                                                                       \
    int e_ = errno;                                                                          \
    CHECKF(r_ == NULL && e_ == (err), "%s = %p errno %d (%s), expected NULL and %s", #expr, \
           r_, e_, strerror(e_), #err);                                                      \
  } while (0)

static void semantics(void) {
  /* malloc(0) unique and freeable */
  void *z1 = lithe_malloc(0), *z2 = lithe_malloc(0);
  CHECK(z1 && z2 && z1 != z2);
  lithe_free(z1);
  lithe_free(z2);
  lithe_free(NULL);
  CHECK(lithe_malloc_usable_size(NULL) == 0);

  /* sizes, contents, usable size */
  for (size_t n = 1; n < 300000; n = n * 3 / 2 + 1) {
    char *p = lithe_malloc(n);
    check_ptr(p, n);
    tu_fill(p, n, n);
    char *q = lithe_realloc(p, n * 2);
    check_ptr(q, n * 2);
    CHECK(tu_check(q, n, n) < 0);
    q = lithe_realloc(q, n / 2 + 1);
    CHECK(tu_check(q, n / 2 + 1, n) < 0);
    lithe_free(q);
    char *c = lithe_calloc(n, 1);
    check_ptr(c, n);
    CHECK(tu_nonzero(c, n) < 0);
    lithe_free_sized(c, n);
  }
  /* realloc(NULL, n) = malloc, realloc(p, 0) frees and returns NULL */
  char *p = lithe_realloc(NULL, 64);
  check_ptr(p, 64);
  CHECK(lithe_realloc(p, 0) == NULL);
  int *a = lithe_reallocarray(NULL, 100, sizeof(int));
  check_ptr(a, 100 * sizeof(int));
  lithe_free(a);

  /* failures */
  EXPECT_NULL_ERRNO(lithe_malloc(vSIZE_MAX), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_malloc((size_t)PTRDIFF_MAX + 1), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_malloc((size_t)1 << 47), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_calloc(vSIZE_MAX / 2, 3), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_calloc((size_t)1 << 32, (size_t)1 << 32), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_reallocarray(NULL, vSIZE_MAX / 2, 3), ENOMEM);
  p = lithe_malloc(100);
  tu_fill(p, 100, 5);
  EXPECT_NULL_ERRNO(lithe_realloc(p, vSIZE_MAX - 8), ENOMEM);
  CHECK(tu_check(p, 100, 5) < 0);
  lithe_free(p);
  EXPECT_NULL_ERRNO(lithe_aligned_alloc(64, vSIZE_MAX - 100), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_memalign(4096, (size_t)1 << 47), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_valloc(vSIZE_MAX), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_pvalloc(vSIZE_MAX - 100), ENOMEM);
  EXPECT_NULL_ERRNO(lithe_aligned_alloc(24, 100), EINVAL);
  EXPECT_NULL_ERRNO(lithe_memalign(48, 100), EINVAL);
  void *out = (void *)0x99;
  CHECK(lithe_posix_memalign(&out, 24, 100) == EINVAL && out == (void *)0x99);
  CHECK(lithe_posix_memalign(&out, 4, 100) == EINVAL && out == (void *)0x99);
  CHECK(lithe_posix_memalign(&out, 0, 100) == EINVAL && out == (void *)0x99);
  CHECK(lithe_posix_memalign(&out, 64, vSIZE_MAX) == ENOMEM && out == (void *)0x99);

  /* alignment */
  for (size_t al = 16; al <= ((size_t)1 << 22); al <<= 1) {
    void *x = NULL;
    CHECK(lithe_posix_memalign(&x, al, al + 5) == 0);
    CHECKF(((uintptr_t)x & (al - 1)) == 0, "lithe_posix_memalign(%zu) = %p", al, x);
    check_ptr(x, al + 5);
    lithe_free(x);
    x = lithe_aligned_alloc(al, 2 * al);
    CHECK(x && ((uintptr_t)x & (al - 1)) == 0);
    lithe_free(x);
    x = lithe_memalign(al, 100);
    CHECK(x && ((uintptr_t)x & (al - 1)) == 0);
    lithe_free(x);
  }
  long pg = sysconf(_SC_PAGESIZE);
  void *v = lithe_valloc(10);
  CHECK(v && ((uintptr_t)v & (uintptr_t)(pg - 1)) == 0);
  lithe_free(v);
  v = lithe_pvalloc(10);
  CHECK(v && ((uintptr_t)v & (uintptr_t)(pg - 1)) == 0 && lithe_malloc_usable_size(v) >= (size_t)pg);
  lithe_free(v);
  int t = lithe_malloc_trim(0);
  CHECK(t == 0 || t == 1);

  /* the plain and prefixed forms are the same allocator */
  p = malloc(1000);
  CHECK(lithe_malloc_usable_size(p) >= 1000);
  lithe_free(p);
  p = lithe_malloc(1000);
  CHECK(malloc_usable_size(p) >= 1000);
  free(p);
  printf("lithe_ prefixed API: semantics OK\n");

  /* docs/semantics.md: a size class that is a multiple of 64 (or 4096)
   * gives blocks aligned to 64 (or 4096) */
  int classes = 0;
  for (size_t n = 1; n <= 300000; n += n < 2048 ? 16 : n < 65536 ? 256 : 4096) {
    void *bl[3];
    for (int i = 0; i < 3; i++) {
      bl[i] = malloc(n);
      CHECK(bl[i] != NULL);
      size_t u = malloc_usable_size(bl[i]);
      size_t want = u % 4096 == 0 ? 4096 : u % 64 == 0 ? 64 : 16;
      CHECKF(((uintptr_t)bl[i] & (want - 1)) == 0,
             "malloc(%zu) = %p, usable %zu: not aligned to %zu as documented", n, bl[i], u, want);
    }
    for (int i = 0; i < 3; i++) free(bl[i]);
    classes++;
  }
  printf("size classes that are multiples of 64 / 4096 give aligned blocks (%d sizes)\n", classes);

  /* an impossible size costs no system call */
  lithe_stats_t sa, sb;
  lithe_stats_get(&sa);
  errno = 0;
  CHECK(lithe_malloc((size_t)1 << 47) == NULL && errno == ENOMEM);
  CHECK(lithe_calloc((size_t)1 << 24, (size_t)1 << 24) == NULL);
  lithe_stats_get(&sb);
  CHECKF(sb.os_calls == sa.os_calls, "os_calls %zu -> %zu for impossible sizes", sa.os_calls,
         sb.os_calls);
}

static void stats(void) {
  lithe_stats_t s0, s1, s2;
  lithe_stats_get(&s0);
  CHECK(s0.reserved >= s0.committed);
  CHECK(s0.committed > 0 && s0.arenas > 0 && s0.heaps_live >= 1 && s0.heaps_created >= 1);
  CHECK(s0.metadata > 0 && s0.metadata <= s0.committed);
  CHECK(s0.os_calls > 0);
  void *large[3], *xl[2];
  for (int i = 0; i < 3; i++) {
    large[i] = lithe_malloc(MiB / 2 + (size_t)i * 4096); /* page runs: under any large max */
    CHECK(large[i] != NULL);
    memset(large[i], 1, MiB / 2);
  }
  for (int i = 0; i < 2; i++) {
    xl[i] = lithe_malloc(100 * MiB + (size_t)i);
    CHECK(xl[i] != NULL);
    memset(xl[i], 1, MiB);
  }
  lithe_stats_get(&s1);
  for (int i = 0; i < 3; i++) lithe_free(large[i]);
  for (int i = 0; i < 2; i++) lithe_free(xl[i]);
  lithe_collect(true);
  lithe_stats_get(&s2);
  printf("stats before: committed %zu KiB, reserved %zu KiB, large %zu, xlarge %zu (%zu KiB), "
         "os_calls %zu\n",
         s0.committed >> 10, s0.reserved >> 10, s0.large_live, s0.xlarge_live,
         s0.xlarge_bytes >> 10, s0.os_calls);
  printf("with 3 x 512 KiB + 2 x 100 MiB: committed %zu KiB, large %zu, xlarge %zu (%zu KiB)\n",
         s1.committed >> 10, s1.large_live, s1.xlarge_live, s1.xlarge_bytes >> 10);
  printf("after free + lithe_collect(true): committed %zu KiB, purged %zu KiB, large %zu, "
         "xlarge %zu, purges %zu\n",
         s2.committed >> 10, s2.purged >> 10, s2.large_live, s2.xlarge_live, s2.purges);
  CHECKF(s1.large_live >= s0.large_live + 3, "large_live %zu -> %zu after 3 large blocks",
         s0.large_live, s1.large_live);
  CHECKF(s1.xlarge_live == s0.xlarge_live + 2, "xlarge_live %zu -> %zu after 2 xlarge blocks",
         s0.xlarge_live, s1.xlarge_live);
  CHECKF(s1.xlarge_bytes >= s0.xlarge_bytes + 200 * MiB, "xlarge_bytes %zu -> %zu",
         s0.xlarge_bytes, s1.xlarge_bytes);
  CHECKF(s1.committed >= s0.committed + 200 * MiB, "committed %zu -> %zu with 201.5 MiB more",
         s0.committed, s1.committed);
  CHECK(s1.reserved >= s1.committed);
  CHECKF(s2.large_live <= s0.large_live && s2.xlarge_live == s0.xlarge_live,
         "after frees: large %zu xlarge %zu", s2.large_live, s2.xlarge_live);
  CHECKF(s2.committed < s1.committed - 190 * MiB, "committed %zu KiB after freeing 201.5 MiB",
         s2.committed >> 10);
  CHECK(s2.os_calls > s0.os_calls);

  /* malloc_trim = lithe_collect(true), 1 when memory was given back */
  void *lg[8];
  for (int i = 0; i < 8; i++) {
    lg[i] = lithe_malloc(2 * MiB);
    CHECK(lg[i] != NULL);
    memset(lg[i], 3, 2 * MiB);
  }
  for (int i = 0; i < 8; i++) lithe_free(lg[i]);
  int t1 = lithe_malloc_trim(0);
  int t2 = malloc_trim(0);
  printf("malloc_trim after freeing 16 MiB of large blocks: %d, then again: %d\n", t1, t2);
  CHECKF(t1 == 1, "lithe_malloc_trim(0) = %d after 16 MiB were freed", t1);

  /* lithe_collect(false) is harmless at any time */
  void *p = lithe_malloc(100);
  lithe_collect(false);
  CHECK(lithe_malloc_usable_size(p) >= 100);
  lithe_free(p);

  /* lithe_stats_print writes something readable to the fd */
  int fds[2];
  CHECK(pipe(fds) == 0);
  lithe_stats_print(fds[1]);
  close(fds[1]);
  char buf[16384];
  ssize_t got = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  CHECK(got > 0);
  buf[got] = 0;
  CHECKF(strstr(buf, "lithe") != NULL, "lithe_stats_print wrote:\n%s", buf);
  printf("lithe_stats_print (%zd bytes):\n%s", got, buf);

  const char *ver = lithe_version();
  CHECK(ver != NULL && strncmp(ver, "lithe ", 6) == 0);
  char want[32];
  snprintf(want, sizeof want, "lithe %d.%d.", LITHE_VERSION_MAJOR, LITHE_VERSION_MINOR);
  CHECKF(strncmp(ver, want, strlen(want)) == 0, "lithe_version() = \"%s\"", ver);
  printf("lithe_version: %s\n", ver);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  semantics();
  stats();
  printf("api_prefixed: OK\n");
  return 0;
}
