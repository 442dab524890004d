/* purge_thread_collect — the purge thread is started at load or never.
 *
 * No thread may be started or joined inside an allocation call (glibc
 * holds locks around its own free calls that pthread_create and
 * pthread_join take: regress_purge_join_hang).  So, by default, freeing
 * 32 MiB of page runs and going quiet leaves the process with one thread,
 * and the calls that follow purge what waited.  With LITHE_PURGE_THREAD=1
 * the thread is there before the first allocation of main, stays through
 * lithe_collect(true) (which purges everything itself and joins nothing),
 * and purges a quiet program's 32 MiB within the delay + 3 s, three times
 * over.  The test runs itself in two children, one for each setting. */
#include "testutil.h"

static void churn(void) {
  tu_free_32mib_of_runs();
  void *p = malloc(MiB / 2);
  CHECK(p != NULL);
  free(p);
}

static long purged_within(long rss_freed, long ms) {
  long rss = tu_status_kb("RssAnon");
  for (long waited = 0; rss > rss_freed - 16 * 1024 && waited < ms; waited += 10) {
    tu_sleep_ms(10);
    rss = tu_status_kb("RssAnon");
  }
  return rss;
}

static int child(bool on) {
  long delay = tu_purge_delay_ms(), want = on ? 2 : 1;
  CHECKF(tu_status_kb("Threads") == want, "Threads: %ld at the start of main", tu_status_kb("Threads"));
  for (int round = 0; round < 3; round++) {
    churn();
    long rss_freed = tu_status_kb("RssAnon");
    long rss = on ? purged_within(rss_freed, delay + 3000) : (tu_sleep_ms(delay + 100), rss_freed);
    long t = tu_status_kb("Threads");
    printf("round %d: Threads %ld, RssAnon %ld -> %ld kB quiet\n", round, t, rss_freed, rss);
    CHECKF(t == want, "Threads: %ld after freeing 32 MiB (a thread started or ended by a call)", t);
    if (on) CHECKF(rss < rss_freed - 16 * 1024, "RssAnon %ld -> %ld kB: not purged while quiet", rss_freed, rss);
    lithe_collect(true);
    t = tu_status_kb("Threads");
    CHECKF(t == want, "Threads: %ld after lithe_collect(true)", t);
  }
  if (!on) { /* the calls purge: one large call after the delay */
    churn();
    long rss_freed = tu_status_kb("RssAnon");
    tu_sleep_ms(delay + 100);
    void *p = malloc(MiB / 2);
    CHECK(p != NULL);
    free(p);
    long rss = tu_status_kb("RssAnon");
    printf("no thread: RssAnon %ld -> %ld kB after one call past the delay\n", rss_freed, rss);
    CHECKF(rss < rss_freed - 16 * 1024, "RssAnon %ld -> %ld kB: a call past the delay purged nothing",
           rss_freed, rss);
  }
  printf("purge thread %s: ok\n", on ? "on" : "off");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) return child(!strcmp(argv[1], "on"));
  tu_require_lithe();
  static tu_child r;
  for (int on = 0; on < 2; on++) {
    const char *env[] = {on ? "LITHE_PURGE_THREAD=1" : "LITHE_PURGE_THREAD", NULL};
    char *argv2[] = {argv[0], on ? "on" : "off", NULL};
    CHECK(tu_run_exec(&r, argv2, env, 60) == 0);
    char how[64];
    tu_describe(&r, how, sizeof how);
    fputs(r.out, stdout);
    fputs(r.err, stdout);
    CHECKF(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "thread %s: %s",
           on ? "on" : "off", how);
  }
  return 0;
}
