/* purge_thread_collect — lithe_collect(true) ends the purge thread.
 *
 * 32 MiB of page runs freed start the purge thread (it starts once 1 MiB
 * wait, at the next call that holds no lock).  lithe_collect(true) gives
 * everything back, so nothing waits: the thread must be gone when it
 * returns (Threads: 1 at once, not a purge delay later), so that a
 * program that has given its memory back is single-threaded for what it
 * does next (unshare(CLONE_NEWUSER), fork without Python 3.12's warning).
 * Then the thread must start again for the next 32 MiB, exit on its own
 * once that is purged (left for the next start to join), and start
 * once more, with the memory purged each time. */
#include "testutil.h"


static void churn(void) {
  tu_free_32mib_of_runs();
  void *p = malloc(MiB / 2); /* a call with no lock held: the thread starts */
  CHECK(p != NULL);
  free(p);
}

/* Threads: `want` within `ms` (polled every 10 ms); the count seen */
static long threads_within(long want, long ms) {
  long t = tu_status_kb("Threads");
  for (long waited = 0; t != want && waited < ms; waited += 10) {
    tu_sleep_ms(10);
    t = tu_status_kb("Threads");
  }
  return t;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  long delay = tu_purge_delay_ms();
  CHECKF(tu_status_kb("Threads") == 1, "Threads: %ld at the start", tu_status_kb("Threads"));

  churn();
  long t = tu_status_kb("Threads");
  printf("after freeing 32 MiB: Threads %ld\n", t);
  CHECKF(t == 2, "the purge thread did not start (Threads: %ld)", t);
  lithe_collect(true);
  /* pthread_join returns once the kernel has cleared the thread's id,
   * a moment before it stops counting it: 100 ms, against the delay
   * (300 ms) the thread slept on before */
  t = threads_within(1, 100);
  printf("right after lithe_collect(true): Threads %ld\n", t);
  CHECKF(t == 1, "lithe_collect(true) returned with the purge thread still there (Threads: %ld)", t);

  churn();
  t = tu_status_kb("Threads");
  printf("32 MiB freed again: Threads %ld\n", t);
  CHECKF(t == 2, "the purge thread did not start again (Threads: %ld)", t);
  long rss_freed = tu_status_kb("RssAnon");
  t = threads_within(1, delay + 3000);
  long rss_quiet = tu_status_kb("RssAnon");
  printf("quiet for up to the delay + 3 s: Threads %ld, RssAnon %ld -> %ld kB\n", t, rss_freed,
         rss_quiet);
  CHECKF(t == 1, "the purge thread did not exit once nothing waited (Threads: %ld)", t);
  CHECKF(rss_quiet < rss_freed - 16 * 1024, "RssAnon %ld -> %ld kB: not purged", rss_freed, rss_quiet);

  churn(); /* a new thread: the one that exited on its own is joined first */
  t = tu_status_kb("Threads");
  printf("third time: Threads %ld\n", t);
  CHECKF(t == 2, "the purge thread did not start a third time (Threads: %ld)", t);
  lithe_collect(true);
  t = threads_within(1, 100);
  CHECKF(t == 1, "Threads: %ld after the second lithe_collect(true)", t);
  printf("purge thread joined by lithe_collect(true), restarted, exited, restarted\n");
  return 0;
}
