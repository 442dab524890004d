/* SPDX-License-Identifier: MIT */
/* regress_split_edge (Debug build, white box: linked with the Debug
 * liblithe.a) — a split must not read an interior page of the run it is
 * cut from.
 *
 * A merge frees the absorbed run's descriptor and leaves its first page
 * naming it: that page is now inside the merged run, and the descriptor is
 * recycled by the next span_desc_alloc, which fills it in outside
 * pages_lock.  When pages_alloc then took the merged run and split its
 * tail off, the new tail looked for a free neighbour on both sides, and on
 * the kept part's side read exactly such a page: TSan saw span_kind() in
 * free_neighbour race with span_desc_alloc's memset for an xlarge block
 * (tsan_fork_threads, 1 run in 4).  Splits now look only away from the kept
 * part, and the Debug build asserts that every page free_neighbour reads
 * is an edge of the live run it names, so the read is caught here in one
 * thread, without waiting for a race:
 *
 *   A (40 pages) | B (13 pages) | C: free B, free A (A absorbs B; B's
 *   first page, A + 40 pages, still names B's freed descriptor), then
 *   malloc 41 pages: the 53-page run is split after page 41, whose last
 *   page is that stale one.
 *
 * What the tests check, in detail:
 *
 * `regress_split_edge`: (Debug, white box) with `mallopt(M_TRIM_THRESHOLD,
 * 0)` (freed large blocks straight to the page heap, not the thread's
 * large-run cache) large A (40 pages) and B (13) side by side, B freed, A
 * freed, malloc of 41 pages: the split must not read B's stale pagemap
 * entry inside the merged run (free_neighbour's assertion; it fires with
 * the split merging on both sides, as before 94a2cbe: the race TSan saw in
 * tsan_fork_threads) */
#include "testutil.h"
#include <malloc.h>
#define LITHE_DEBUG 1 /* lithe_verify(): this test links the Debug liblithe.a */
#include "internal.h"

int main(void) {
  /* purge at once (delay 0): freed large blocks go straight back to the
   * page heap, not into the thread's large-run cache (src/large.c), so the
   * frees below merge there as described */
  CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1);
  char *a = malloc(40 * PAGE_SIZE), *b = malloc(13 * PAGE_SIZE), *c = malloc(7 * PAGE_SIZE);
  CHECK(a && b && c);
  CHECKF(b == a + 40 * PAGE_SIZE && c == b + 13 * PAGE_SIZE, "large blocks not side by side: %p %p %p",
         (void *)a, (void *)b, (void *)c);
  free(b);
  free(a);
  const span_t *stale = pagemap_lookup(b);
  CHECKF(stale && stale->kind == SPAN_DEAD, "the merged run's page %p names %p (kind %d), not a freed descriptor",
         (void *)b, (const void *)stale, stale ? (int)stale->kind : -1);
  char *d = malloc(41 * PAGE_SIZE); /* the split: its kept part ends on the stale page */
  CHECKF(d == a, "malloc(41 pages) = %p, not the merged run at %p", (void *)d, (void *)a);
  lithe_verify();
  memset(d, 1, 41 * PAGE_SIZE);
  free(d);
  free(c);
  lithe_verify();
  printf("split of a 53-page run after page 41 (stale entry at %p) read only run edges\n", (void *)b);
  return 0;
}
