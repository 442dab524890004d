/* SPDX-License-Identifier: MIT */
/* purge_thread_collect — the purge thread starts at load, at the
 * program's first pthread_create, or never; never inside malloc or free.
 *
 * No thread may be started or joined inside an allocation call (glibc
 * holds locks around its own free calls that pthread_create and
 * pthread_join take: regress_purge_join_hang).  So with
 * LITHE_PURGE_THREAD=0, and by default (auto) in a program that makes no
 * thread, freeing 32 MiB of page runs and going quiet leaves the process
 * with one thread, and the calls that follow purge what waited.  With
 * LITHE_PURGE_THREAD=1 the thread is there before main; by default it
 * comes with the program's first pthread_create.  Then it stays through
 * lithe_collect(true) (which purges everything itself and joins nothing),
 * and purges a quiet program's 32 MiB within the delay + 3 s, three times
 * over.  The test runs itself in four children, one for each case. */
#include "testutil.h"
#include <pthread.h>

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

static void *nothing(void *arg) { return arg; }

static int child(const char *mode) {
  bool threaded = !strcmp(mode, "auto-threaded"), on = threaded || !strcmp(mode, "on");
  if (threaded) { /* the program's first thread: the purge thread comes with it */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, nothing, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    for (int i = 0; i < 100 && tu_status_kb("Threads") != 2; i++) tu_sleep_ms(10);
  }
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
  printf("purge thread, %s: ok\n", mode);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) return child(argv[1]);
  tu_require_lithe();
  static tu_child r;
  static const char *const modes[][2] = {{"off", "LITHE_PURGE_THREAD=0"},
                                         {"auto-single", "LITHE_PURGE_THREAD"},
                                         {"auto-threaded", "LITHE_PURGE_THREAD"},
                                         {"on", "LITHE_PURGE_THREAD=1"}};
  for (int m = 0; m < 4; m++) {
    const char *env[] = {modes[m][1], NULL};
    char *argv2[] = {argv[0], (char *)modes[m][0], NULL};
    CHECK(tu_run_exec(&r, argv2, env, 60) == 0);
    char how[64];
    tu_describe(&r, how, sizeof how);
    fputs(r.out, stdout);
    fputs(r.err, stdout);
    CHECKF(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s: %s", modes[m][0], how);
  }
  return 0;
}
