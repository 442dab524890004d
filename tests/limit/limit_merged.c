/* SPDX-License-Identifier: MIT */
/* limit_merged — a free run merged from purged pages and a freed block
 * counts only the block's pages as resident, and hands them out first
 * (LITHE_MEMORY_LIMIT=64m, set by the test's environment: under a limit the
 * large-run cache is off, so a freed 1 MiB block goes to the page heap).
 *
 * Counted whole, such a run made the limit (limit.c) purge other runs'
 * resident pages for pages that were not there: bench-limitcycle under
 * LITHE_MEMORY_LIMIT=80m kept 41-49 MB after a phase's frees where 72 are
 * allowed, and faulted the difference in.  And cut from its front, the run
 * handed out the purged pages and kept the resident ones.
 *
 * Checked with mallinfo2's keepcost (the free runs' resident bytes, as
 * lithe counts them) and the minor faults of touching the next block;
 * counted, not timed. */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"


int main(void) {
  tu_require_lithe();
  tu_require_env("LITHE_MEMORY_LIMIT", "64m");
  enum { N = 12 };
  static char *m[N];
  for (int i = 0; i < N; i++) {
    m[i] = malloc(MiB); /* (page runs: at most large_max, 1 MiB) */
    CHECK(m[i] != NULL);
    tu_touch_pages(m[i], MiB);
  }
  for (int i = 1; i < 9; i++)
    if (m[i] != m[i - 1] + MiB) {
      printf("limit_merged: blocks not side by side (%p after %p): skipped\n", (void *)m[i], (void *)m[i - 1]);
      return 77;
    }
  /* 8 MiB freed and purged: a clean run, blocks 8.. still live above it */
  for (int i = 0; i < 8; i++) free(m[i]);
  lithe_collect(true);
  size_t k0 = mallinfo2().keepcost;
  /* block 8 freed beside it: one run of 9 MiB, 1 MiB of it resident */
  free(m[8]);
  size_t k1 = mallinfo2().keepcost;
  printf("resident free bytes: %zu after the purge, %zu after freeing the 1 MiB block beside it\n", k0, k1);
  CHECKF(k1 - k0 <= MiB, "the merged run counts %zu resident bytes for a freed 1 MiB block", k1 - k0);
  /* the next 1 MiB block is the freed one's pages, not purged ones */
  long f0 = tu_minflt();
  char *p = malloc(MiB);
  CHECK(p != NULL);
  tu_touch_pages(p, MiB);
  long f1 = tu_minflt() - f0;
  printf("a 1 MiB block from that run: %ld minor faults for %zu pages (at %p, the freed block was at %p)\n", f1,
         MiB / 4096, (void *)p, (void *)m[8]);
  CHECKF(f1 < (long)(MiB / 4096) / 2, "%ld faults: the run's purged pages were handed out", f1);
  free(p);
  for (int i = 9; i < N; i++) free(m[i]);
  printf("limit_merged: OK\n");
  return 0;
}
