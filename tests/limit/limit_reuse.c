/* SPDX-License-Identifier: MIT */
/* limit_reuse — near the memory limit, freed memory serves the next
 * blocks with its resident pages instead of being purged and faulted in
 * again (LITHE_MEMORY_LIMIT=64m, set by the test's environment).
 *
 * 1. Freed xlarge blocks (16 MiB mappings) under pressure become free page
 *    runs with their pages (arena.c, pages_adopt): the 40 KiB blocks that
 *    follow fault in few pages.
 * 2. Free runs too small for the next blocks (600 KiB holes between live
 *    40 KiB blocks, then 1 MiB blocks) give their pages to them
 *    (pages_fill) instead of being purged first.
 * Before, both phases faulted in nearly all they touched
 * (bench-limitcycle under LITHE_MEMORY_LIMIT=80m: 93.7k faults, 65.8k
 * with this).  Minor faults are counted, not timed. */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"


int main(void) {
  tu_require_lithe();
  tu_require_env("LITHE_MEMORY_LIMIT", "64m");
  enum { NX = 3, NS = 800 };
  static char *x[NX], *s[NS], *m[32];
  /* 48 MiB of xlarge blocks and 10 MiB of 200 KiB ones: over 90 % of 64 MiB */
  for (int i = 0; i < NX; i++) {
    x[i] = malloc(16 * MiB);
    CHECK(x[i] != NULL);
    tu_touch_pages(x[i], 16 * MiB);
  }
  char *pad[50];
  for (int i = 0; i < 50; i++) {
    pad[i] = malloc(200 * KiB);
    CHECK(pad[i] != NULL);
    tu_touch_pages(pad[i], 200 * KiB);
  }
  free(x[0]);
  free(x[1]);
  /* 1: 31.25 MiB of 40 KiB blocks (8,000 pages of 4 KiB): nearly all
   * the two freed blocks held */
  long f0 = tu_minflt();
  for (int i = 0; i < NS; i++) {
    s[i] = malloc(40 * KiB);
    CHECK(s[i] != NULL);
    tu_touch_pages(s[i], 40 * KiB);
  }
  long f1 = tu_minflt() - f0;
  printf("40 KiB blocks after two freed 16 MiB blocks: %ld minor faults for %zu pages\n", f1,
         NS * 40 * KiB / 4096);
  CHECKF(f1 < (long)(NS * 40 * KiB / 4096) / 4, "%ld faults: the freed blocks' pages were not reused", f1);
  /* 2: holes of 15 blocks (600 KiB) between every 16th, then 1 MiB
   * blocks, still near the limit (the other blocks stay) */
  for (int i = 0; i < NS; i++)
    if (i % 16) free(s[i]);
  f0 = tu_minflt();
  for (int i = 0; i < 16; i++) {
    m[i] = malloc(1 * MiB);
    CHECK(m[i] != NULL);
    tu_touch_pages(m[i], 1 * MiB);
  }
  long f2 = tu_minflt() - f0;
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("16 x 1 MiB blocks among 600 KiB holes: %ld minor faults for %zu pages (%zu purges so far)\n", f2,
         16 * MiB / 4096, st.purges);
  CHECKF(f2 < (long)(16 * MiB / 4096) * 3 / 4, "%ld faults: the holes' pages were not moved into the blocks", f2);
  for (int i = 0; i < 16; i++) {
    for (size_t j = 0; j < MiB; j += 4096) CHECKF(m[i][j] == 1, "block %d byte %zu is %d", i, j, m[i][j]);
    free(m[i]);
  }
  for (int i = 0; i < NS; i += 16) free(s[i]);
  free(x[2]);
  for (int i = 0; i < 50; i++) free(pad[i]);
  /* calloc after all this reads zeros */
  unsigned char *z = calloc(1, 20 * MiB);
  CHECK(z != NULL);
  size_t nonzero = 0;
  for (size_t i = 0; i < 20 * MiB; i++) nonzero += z[i] != 0;
  CHECKF(nonzero == 0, "calloc(20 MiB): %zu bytes not zero", nonzero);
  free(z);
  printf("limit_reuse: OK\n");
  return 0;
}
