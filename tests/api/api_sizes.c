/* SPDX-License-Identifier: MIT */
/* api_sizes: every size-class boundary. Sizes 1..1040 one by one, n-1/n/n+1
 * around every power of two and every multiple of 16 up to 1024, a stride up
 * to 70000, large sizes 64 KiB..64 MiB and xlarge sizes past 64 MiB. Each
 * block is filled over its whole usable size with a pattern and verified
 * while its neighbours live, then calloc of the same size must read zero; then a realloc chain walks the same sizes up
 * and down checking the contents survive.
 *
 * What the tests check, in detail:
 *
 * `api_sizes`: sizes 1..1040 one by one, n-1/n/n+1 around powers of two, a
 * stride to 70000, large 64 KiB..64 MiB, xlarge to 130 MiB: alignment,
 * usable size, whole usable size written and verified; a realloc chain up
 * and down all of them */
#include "testutil.h"

#include <malloc.h>

#define MAXSIZES 4096
static size_t sizes[MAXSIZES];
static int nsizes;

static void add(size_t n) {
  if (n == 0) return;
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] == n) return;
  CHECK(nsizes < MAXSIZES);
  sizes[nsizes++] = n;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static void build_sizes(void) {
  for (size_t n = 1; n <= 1040; n++) add(n); /* covers n-1,n,n+1 of 16k <= 1024 */
  for (int k = 0; k <= 16; k++) {              /* powers of two to 64 KiB: closely */
    size_t p = (size_t)1 << k;
    add(p - 1), add(p), add(p + 1);
    if (k >= 12) add(p - 4096), add(p + 4096), add(p - 16), add(p + 16);
    if (k >= 2) add(p + p / 2), add(p + p / 4), add(p + p / 2 - 1), add(p + p / 2 + 1);
  }
  for (int k = 17; k <= 26; k++) {             /* large: 128 KiB .. 64 MiB */
    size_t p = (size_t)1 << k;
    add(p - 1), add(p), add(p + 1), add(p + 4096), add(p + p / 2 + 1);
  }
  for (size_t n = 1024; n <= 70000; n += 16 * 7) add(n); /* stride through 1K..70K */
  for (size_t n = 4096; n <= 70000; n += 4096) add(n - 1), add(n), add(n + 1);
  /* large and xlarge */
  add(64 * MiB - 1), add(64 * MiB), add(64 * MiB + 1), add(65 * MiB), add(100 * MiB + 3),
      add(130 * MiB + 1);
  qsort(sizes, (size_t)nsizes, sizeof *sizes, cmp_size);
}

static void one_size(size_t n) {
  int cnt = n <= 4096 ? 8 : n <= 70000 ? 4 : n <= ((size_t)1 << 20) ? 2 : 1;
  void *ps[8];
  size_t us[8];
  for (int i = 0; i < cnt; i++) {
    char *p = malloc(n);
    CHECKF(p != NULL, "malloc(%zu) failed", n);
    CHECKF(((uintptr_t)p & 15) == 0, "malloc(%zu) = %p: not 16-byte aligned", n, (void *)p);
    us[i] = malloc_usable_size(p);
    CHECKF(us[i] >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, us[i]);
    CHECKF(us[i] <= n + n / 2 + 4096 || us[i] <= 2 * n + 64,
           "malloc_usable_size(malloc(%zu)) = %zu: absurdly large", n, us[i]);
    tu_fill(p, us[i], tu_seed(p, us[i]));
    ps[i] = p;
  }
  for (int i = 0; i < cnt; i++) {
    long off = tu_check(ps[i], us[i], tu_seed(ps[i], us[i]));
    CHECKF(off < 0, "block %p of size %zu (usable %zu) overwritten at offset %ld", ps[i], n,
           us[i], off);
    free(ps[i]);
  }
  /* the same size again with calloc, over the dirty memory just freed */
  for (int i = 0; i < cnt; i++) {
    ps[i] = calloc(1, n);
    CHECKF(ps[i] != NULL, "calloc(1, %zu) failed", n);
    long off = tu_nonzero(ps[i], n);
    CHECKF(off < 0, "calloc(1, %zu) = %p: byte %ld not zero", n, ps[i], off);
  }
  for (int i = 0; i < cnt; i++) free(ps[i]);
}

static void realloc_chain(void) {
  const uint64_t seed = 0xABCDEF;
  char *p = NULL;
  size_t have = 0, moves = 0;
  for (int i = 0; i < nsizes; i++) {
    size_t n = sizes[i];
    char *q = realloc(p, n);
    CHECKF(q != NULL, "realloc(%p, %zu) failed", (void *)p, n);
    CHECKF(((uintptr_t)q & 15) == 0, "realloc result %p misaligned", (void *)q);
    CHECK(malloc_usable_size(q) >= n);
    long off = tu_check(q, have, seed);
    CHECKF(off < 0, "realloc grow %zu -> %zu lost byte %ld", have, n, off);
    tu_fill_from(q, have, n, seed); /* extend the pattern over the new tail */
    moves += q != p;
    p = q;
    have = n;
  }
  for (int i = nsizes; i-- > 0;) {
    size_t n = sizes[i];
    char *q = realloc(p, n);
    CHECKF(q != NULL, "realloc(%p, %zu) failed", (void *)p, n);
    CHECK(((uintptr_t)q & 15) == 0);
    CHECK(malloc_usable_size(q) >= n);
    long off = tu_check(q, n, seed);
    CHECKF(off < 0, "realloc shrink %zu -> %zu lost byte %ld", have, n, off);
    moves += q != p;
    p = q;
    have = n;
  }
  free(p);
  printf("realloc chain: %d sizes up and down, %zu moves\n", nsizes, moves);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  build_sizes();
  printf("sizes: %d, from %zu to %zu\n", nsizes, sizes[0], sizes[nsizes - 1]);
  double t0 = tu_now();
  for (int i = 0; i < nsizes; i++) one_size(sizes[i]);
  /* and interleaved: a live block of every size below 1 MiB at once */
  static void *live[MAXSIZES];
  static size_t lu[MAXSIZES];
  int nlive = 0;
  for (int i = 0; i < nsizes && sizes[i] < ((size_t)1 << 20); i++, nlive++) {
    live[i] = malloc(sizes[i]);
    CHECK(live[i] != NULL);
    lu[i] = malloc_usable_size(live[i]);
    CHECK(lu[i] >= sizes[i]);
    tu_fill(live[i], lu[i], tu_seed(live[i], lu[i]));
  }
  for (int i = 0; i < nlive; i++) {
    long off = tu_check(live[i], lu[i], tu_seed(live[i], lu[i]));
    CHECKF(off < 0, "live block %p size %zu overwritten at %ld", live[i], sizes[i], off);
    free(live[i]);
  }
  printf("size sweep: %d sizes (+%d live at once) in %.2f s\n", nsizes, nlive, tu_now() - t0);
  realloc_chain();
  printf("api_sizes: OK\n");
  return 0;
}
