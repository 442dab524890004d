/* SPDX-License-Identifier: MIT */
/* regress_realloc_top — a large block at the arena's top grows into
 * freed pages that are still resident, not into fresh ones above it.
 *
 * A 1 MiB block is written and freed (a run in the thread's large-run
 * cache, all of it resident), then a 128 KiB block that lies above it, at
 * the top, is grown to 768 KiB by realloc and the new part written.
 * Growing in place took 640 KiB of fresh pages past the top, 160
 * faults, while 1 MiB of resident pages lay free below; a program that
 * frees and reallocs the same way round after round pushed the top up in
 * each round (lithe-replay python, 8 runs with no purging: RssAnon 15.8
 * -> 21.4 MB; flat at 17.4 MB after the first now).  Now the block moves
 * into the freed run: a copy of 128 KiB, and (almost) no fault.  (Up to
 * large_max, 1 MiB: larger blocks take no fresh arena pages, large.c.) */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"

#define FREED ((size_t)1 * MiB)
#define OLD ((size_t)128 * KiB)
#define NEW ((size_t)768 * KiB)

int main(void) {
  tu_require_lithe();
  /* never purge on its own: the freed run must stay resident */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  char *a = malloc(FREED);
  char *b = malloc(OLD);
  CHECK(a != NULL && b != NULL);
  memset(a, 1, FREED);
  tu_fill(b, OLD, 7);
  CHECKF(b == a + FREED, "the 128 KiB block (%p) does not lie right above the 1 MiB one (%p)", (void *)b,
         (void *)a);
  free(a);
  long f0 = tu_minflt();
  char *c = realloc(b, NEW);
  CHECK(c != NULL);
  memset(c + OLD, 2, NEW - OLD);
  long faults = tu_minflt() - f0;
  printf("128 KiB block at %p grown to 768 KiB at %p, 1 MiB freed at %p: %ld faults\n", (void *)b,
         (void *)c, (void *)a, faults);
  CHECK(tu_check(c, OLD, 7));
  /* 160 before (640 KiB of fresh pages); the move faults in at most the
   * page heap's own metadata */
  CHECKF(faults <= 32, "growing the top block faulted %ld pages in while %zu KiB lay free and resident",
         faults, FREED / KiB);
  free(c);
  lithe_collect(true);
  printf("regress_realloc_top: OK\n");
  return 0;
}
