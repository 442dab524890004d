/* SPDX-License-Identifier: MIT */
/* regress_purge_on_time — memory freed in a burst is gone by its due
 * time, not a purge pass after it.
 *
 * The purge thread woke when the oldest waiting memory was due and only
 * then began madvise(MADV_DONTNEED), which takes time in proportion (1
 * GiB in 213 ms on a loaded 2-core machine): bench-mallocbench medium and
 * big free 1.1 GB in ~100 ms and go quiet, and their sample 100 ms after
 * the delay found 120-750 MB still resident one run in two (3.5 MB
 * now).  The thread now starts ahead of the due time by what waits at
 * 4 MiB a millisecond (arena.c, PURGE_BYTES_PER_MS), a quarter of the
 * delay at most.  Here 256 MiB of page runs (512 KiB blocks, written) are
 * freed at once: a lead of 64 ms, so at the due time of the first of them
 * the thread has been purging for ~60 ms (before, it had not begun); at
 * least a quarter of them must be gone then, and all but 16 MiB a second
 * later.  Needs lithe.
 *
 * What the tests check, in detail:
 *
 * `regress_purge_on_time`: 256 MiB of 512 KiB blocks written and freed at
 * once (`LITHE_PURGE_DELAY_MS` default 1000, `LITHE_PURGE_THREAD=1`): at
 * the first block's due time at least a quarter of it is purged, all but 16
 * MiB a second later (the purge thread starts ahead of the due time by what
 * waits; before, 237-244 MB were still resident at that moment) */
#include "testutil.h"

#define BLOCK (MiB / 2)
#define NBLOCK 512

static char *blk[NBLOCK];

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  long delay = tu_purge_delay_ms();
  for (int i = 0; i < NBLOCK; i++) {
    blk[i] = malloc(BLOCK);
    CHECK(blk[i] != NULL);
    tu_touch_pages(blk[i], BLOCK);
  }
  long rss_live = tu_status_kb("RssAnon");
  double t0 = tu_now();
  for (int i = 0; i < NBLOCK; i++) free(blk[i]);
  free(malloc(64)); /* a call with no lock held: the thread starts */
  double t1 = tu_now();
  long freed_kb = (long)(NBLOCK * BLOCK >> 10);
  long ahead = (long)(t0 * 1000) + delay - (long)(tu_now() * 1000);
  if (ahead > 0) tu_sleep_ms(ahead);
  long rss_due = tu_status_kb("RssAnon");
  tu_sleep_ms(1000);
  long rss_later = tu_status_kb("RssAnon");
  printf("%ld kB freed in %.1f ms; RssAnon %ld kB live, %ld at the first block's due time (%ld ms), %ld a "
         "second later\n",
         freed_kb, (t1 - t0) * 1000, rss_live, rss_due, delay, rss_later);
  CHECKF(rss_live - rss_due >= freed_kb / 4, "only %ld of %ld kB purged at the due time: the purge began "
         "no sooner", rss_live - rss_due, freed_kb);
  CHECKF(rss_live - rss_later >= freed_kb - 16 * 1024, "only %ld of %ld kB purged a second after the due "
         "time", rss_live - rss_later, freed_kb);
  return 0;
}
