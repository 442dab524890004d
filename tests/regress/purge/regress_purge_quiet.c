/* SPDX-License-Identifier: MIT */
/* regress_purge_quiet — freed memory goes back while the program is quiet.
 *
 * Free page runs and cached xlarge mappings waited for the purge delay and
 * were purged only by later calls into lithe: a program that freed its
 * memory and then made no call kept all it had freed in its last delay
 * (replay_sqlite, 1.1 s pause with nothing called: 163 MB still resident
 * of a 133 MB peak; glibc had trimmed).  Here, with
 * LITHE_PURGE_DELAY_MS=300 (the test's environment), 64 MiB of large
 * blocks, two 24 MiB xlarge blocks and 20,000 small ones are touched and
 * freed, then nothing of lithe's is called (the samples use open/read on
 * /proc/self/status, no stdio): RssAnon must come back within 8 MiB of the
 * start within the delay + 3 s.  The purge thread (LITHE_PURGE_THREAD=1,
 * the test's environment) was started when lithe loaded: Threads: 2 from
 * the start to the end, none started or ended by a call.  Then
 * mallopt(M_TRIM_THRESHOLD, 0) while the thread waits must still purge at
 * the next free.
 *
 * What the tests check, in detail:
 *
 * `regress_purge_quiet`: (review fix) with `LITHE_PURGE_DELAY_MS=300`: 64
 * MiB of 512 KiB blocks, two 24 MiB blocks and 20,000 small ones touched
 * and freed, then no call into lithe (samples read with open/read): RssAnon
 * back within 8 MiB of the start within the delay + 3 s, with
 * `LITHE_PURGE_THREAD=1`; `Threads:` 2 from start to end, the thread
 * started at load (freed memory stayed resident until the next call:
 * replay_sqlite kept 133 MB through a 1.1 s pause); then, with 32 MiB
 * waiting for the thread, `mallopt(M_TRIM_THRESHOLD, 0)` and 32 MiB more
 * freed: RssAnon back within 8 MiB right after the frees (66 MB stayed: the
 * callers left all purging to the running thread) */
#include "testutil.h"
#include <malloc.h>

#define NB 128
#define NS 20000

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  long delay = tu_purge_delay_ms();
  static void *big[NB], *small[NS], *huge[2];
  long base = tu_status_kb("RssAnon");
  CHECKF(tu_status_kb("Threads") == 2, "Threads: %ld at the start (the purge thread starts at load)",
         tu_status_kb("Threads"));
  for (int i = 0; i < NB; i++) {
    big[i] = malloc(MiB / 2);
    CHECK(big[i] != NULL);
    memset(big[i], 0x6b, MiB / 2);
  }
  for (int i = 0; i < 2; i++) {
    huge[i] = malloc(24 * MiB); /* more than the free page runs hold: a mapping */
    CHECK(huge[i] != NULL);
    memset(huge[i], 0x6c, 24 * MiB);
  }
  for (int i = 0; i < NS; i++) {
    small[i] = malloc(200 + (size_t)(i % 7) * 100);
    CHECK(small[i] != NULL);
    memset(small[i], 1, 200);
  }
  long peak = tu_status_kb("RssAnon");
  for (int i = 0; i < NB; i++) free(big[i]);
  for (int i = 0; i < 2; i++) free(huge[i]);
  for (int i = 0; i < NS; i++) free(small[i]);
  /* from here on nothing of lithe's is called until the checks */
  double t0 = tu_now();
  long first = tu_status_kb("RssAnon"), now = first;
  double limit = delay / 1000.0 + 3.0; /* generous for a loaded machine */
  while (now - base > 8 * 1024 && tu_now() - t0 < limit) {
    tu_sleep_ms(20);
    now = tu_status_kb("RssAnon");
  }
  double took = tu_now() - t0;
  long threads = tu_status_kb("Threads");
  printf("LITHE_PURGE_DELAY_MS=%ld: RssAnon at start %ld KiB, with 64 + 48 MiB live %ld KiB, "
         "right after the frees %ld KiB, %.3f s later (no call) %ld KiB; threads then %ld\n",
         delay, base, peak, first, took, now, threads);
  CHECKF(now - base <= 8 * 1024,
         "RssAnon still %ld KiB above the start %.1f s after the frees, with no call made",
         now - base, took);
  CHECKF(threads == 2, "%ld threads: the purge thread started at load is the only other", threads);

  /* mallopt(M_TRIM_THRESHOLD, 0) while the thread waits: the next free
   * purges at once, all that waits too (the callers left all purging to
   * the thread while it ran, so this waited for the old delay) */
  for (int i = 0; i < NB; i++) {
    big[i] = malloc(MiB / 2);
    CHECK(big[i] != NULL);
    memset(big[i], 0x6d, MiB / 2);
  }
  for (int i = 0; i < NB / 2; i++) free(big[i]); /* 32 MiB wait for the thread */
  CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1);
  for (int i = NB / 2; i < NB; i++) free(big[i]);
  long at_once = tu_status_kb("RssAnon");
  threads = tu_status_kb("Threads");
  printf("M_TRIM_THRESHOLD 0, then the other 32 MiB freed: RssAnon %ld KiB right after (start %ld), "
         "threads %ld\n", at_once, base, threads);
  CHECKF(at_once - base <= 8 * 1024, "RssAnon %ld KiB above the start right after the frees with "
         "M_TRIM_THRESHOLD 0", at_once - base);
  CHECKF(threads == 2, "Threads: %ld at the end", threads);
  printf("regress_purge_quiet: OK\n");
  return 0;
}
