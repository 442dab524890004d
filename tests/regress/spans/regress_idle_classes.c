/* SPDX-License-Identifier: MIT */
/* regress_idle_classes — the size classes a program stopped using give
 * their spans back before it takes fresh pages.
 *
 * 1,024 buffers grow from 16 B by 1.5x per step to 4,618 B, all of them
 * one step at a time (bench-mallocbench realloc's pattern), so each
 * step moves every buffer to the next class and leaves the last one.
 * Each class left kept a full bin of 16 KiB (its frees spilled past it
 * and nothing took them again) and, because of it, its current span: at
 * the end 93 small spans for 64 of live blocks, and 1,597-1,605 pages
 * faulted in for 1,280 pages of live blocks (the 5,120-byte class), the
 * 13 classes nothing used any more holding the difference.  Now, when the
 * heap takes pages for a span, full bins go back to their spans and a
 * current span with no block in use is released: 71 spans, 1,426-1,435
 * faults.  (Faults, not lithe_stats' committed bytes: the arena commits
 * ahead of its use by up to an eighth.) */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"

#define N 1024
#define STEPS 14

int main(void) {
  tu_require_lithe();
  static char *buf[N];
  static size_t len[N];
  /* nothing purged on its own: a page purged and taken again would
   * fault twice */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  long f0 = tu_minflt();
  for (int i = 0; i < N; i++) {
    len[i] = 16;
    buf[i] = malloc(16);
    CHECK(buf[i] != NULL);
    memset(buf[i], i & 0xff, 16);
  }
  for (int step = 0; step < STEPS; step++)
    for (int i = 0; i < N; i++) {
      size_t nl = len[i] + len[i] / 2;
      char *q = realloc(buf[i], nl);
      CHECK(q != NULL && q[len[i] - 1] == (char)(i & 0xff));
      memset(q + len[i], i & 0xff, nl - len[i]);
      buf[i] = q;
      len[i] = nl;
    }
  long faults = tu_minflt() - f0;
  lithe_stats_t st;
  lithe_stats_get(&st);
  size_t live = 0;
  for (int i = 0; i < N; i++) live += malloc_usable_size(buf[i]);
  long live_pages = (long)(live / 4096);
  printf("%d buffers of %zu B: %zu kB live (%ld pages), %ld faults, %zu small spans\n", N, len[0],
         live / KiB, live_pages, faults, st.spans_small);
  /* 317-325 pages more than the live blocks before, 146-155 now: the
   * last step's spans taken before the previous class's were free, the
   * page heap's metadata, the first spans of the start */
  CHECKF(faults <= live_pages + 220,
         "%ld pages faulted in for %ld pages of live blocks: the classes left keep their spans", faults,
         live_pages);
  for (int i = 0; i < N; i++) free(buf[i]);
  lithe_collect(true);
  printf("regress_idle_classes: OK\n");
  return 0;
}
