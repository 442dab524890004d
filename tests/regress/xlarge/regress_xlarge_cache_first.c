/* SPDX-License-Identifier: MIT */
/* regress_xlarge_cache_first — a big block asked again is taken from
 * the freed mapping of a block of its size before the free page runs of
 * the arenas.
 *
 * 64 blocks of 1 MiB (page runs) are written, a 16 MiB block (a mapping
 * of its own) is written and freed (cached), then the 64 are freed: free
 * runs that could hold 16 MiB.  The next malloc(16 MiB) must be the cached
 * mapping, at the first block's address.  Before, free page runs served
 * blocks above large max first: the block came from the arena while the
 * cached mapping stayed resident beside it, and the small objects that
 * would have reused those pages carved never-touched ones instead
 * (bench-mallocbench medium's 16 MiB record table: 8,021 faults in a run
 * that repeats the warm-up's work, peak +19 MB; 4,091 with this). */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"

#define SMALL_N 64

int main(void) {
  tu_require_lithe();
  /* never purge on its own: a loaded machine must not expire the cache */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  size_t big = 16 * MiB;
  /* the page runs first and live, so that the mapping is made (no free
   * run holds it) and cached, and no arena grows after that (fresh arena
   * pages take back as many cached bytes: xcache_yield) */
  char *run[SMALL_N];
  for (int i = 0; i < SMALL_N; i++) {
    run[i] = malloc(MiB);
    CHECK(run[i] != NULL);
    memset(run[i], 2, MiB);
  }
  char *a = malloc(big);
  CHECK(a != NULL);
  memset(a, 1, big);
  free(a);
  for (int i = 0; i < SMALL_N; i++) free(run[i]);
  printf("freed: a 16 MiB block at %p, then %d of 1 MiB (run[0] %p)\n", (void *)a, SMALL_N, (void *)run[0]);
  long f0 = tu_minflt();
  char *b = malloc(big);
  CHECK(b != NULL);
  memset(b, 3, big);
  long faults = tu_minflt() - f0;
  printf("malloc(16 MiB) again: %p, %ld minor faults writing it\n", (void *)b, faults);
  CHECKF(b == a, "malloc(16 MiB) = %p, not the cached block %p: a free page run was taken first", (void *)b,
         (void *)a);
  free(b);
  lithe_collect(true);
  printf("regress_xlarge_cache_first: OK\n");
  return 0;
}
