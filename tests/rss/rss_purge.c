/* SPDX-License-Identifier: MIT */
/* rss_purge: free pages go back to the OS on their own, without
 * lithe_collect or malloc_trim, as LITHE_PURGE_DELAY_MS says (set by the
 * test's environment): 0 = at once, N = after N ms. 256 MiB of large blocks
 * (and some small ones) are allocated, touched and freed; then, while the
 * program keeps allocating a little, VmRSS must come back within 8 MiB of
 * where it started, no later than the delay plus two seconds. */
#include "testutil.h"

#include <malloc.h>

#define NB 256
static const long SLACK_KB = 8 * 1024;

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  const char *d = getenv("LITHE_PURGE_DELAY_MS");
  long delay = d ? atol(d) : 1000;
  CHECKF(delay >= 0, "needs LITHE_PURGE_DELAY_MS >= 0 (got %s)", d);
  static void *big[NB];
  static void *small[20000];
  long base = tu_status_kb("VmRSS");
  for (int i = 0; i < NB; i++) {
    size_t n = ((size_t)64 << 10) + (size_t)i * 8192; /* 64 KiB .. 2.1 MiB, ~256 MiB */
    big[i] = malloc(n);
    CHECK(big[i] != NULL);
    memset(big[i], 0x6b, n);
  }
  for (int i = 0; i < 20000; i++) {
    small[i] = malloc(200 + (size_t)(i % 7) * 100);
    CHECK(small[i] != NULL);
    memset(small[i], 1, 200);
  }
  long peak = tu_status_kb("VmRSS");
  for (int i = 0; i < NB; i++) free(big[i]);
  for (int i = 0; i < 20000; i++) free(small[i]);
  double t0 = tu_now();
  long now = tu_status_kb("VmRSS");
  long first = now;
  double limit = delay / 1000.0 + 2.0; /* generous for a loaded machine */
  /* keep the allocator busy with a little work, as a program would */
  while (now - base > SLACK_KB && tu_now() - t0 < limit) {
    for (int i = 0; i < 100; i++) {
      void *p = malloc(64 + (size_t)i);
      void *q = malloc((size_t)100000 + (size_t)i * 64);
      CHECK(p && q);
      free(q);
      free(p);
    }
    usleep(5000);
    now = tu_status_kb("VmRSS");
  }
  double took = tu_now() - t0;
  printf("LITHE_PURGE_DELAY_MS=%ld: VmRSS before %ld KiB, with 256 MiB live %ld KiB, right after "
         "the frees %ld KiB, %.3f s later %ld KiB (limit %ld KiB within %.1f s)\n",
         delay, base, peak, first, took, now, base + SLACK_KB, limit);
#ifdef HAVE_LITHE
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("lithe: committed %zu KiB, purged %zu KiB, purges %zu\n", st.committed >> 10,
         st.purged >> 10, st.purges);
  /* the counters tell the same story as VmRSS: what was given back is
   * either no longer committed or counted as purged */
  CHECKF(st.committed - st.purged < ((size_t)64 << 20),
         "VmRSS is %ld KiB, but lithe counts %zu KiB committed and only %zu KiB purged",
         now, st.committed >> 10, st.purged >> 10);
#endif
  CHECKF(now - base <= SLACK_KB,
         "VmRSS still %ld KiB above the start %.1f s after 256 MiB were freed", now - base, took);
  printf("rss_purge: OK\n");
  return 0;
}
