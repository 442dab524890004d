/* regress_purger_tls — the purge thread leaves nothing of its own behind
 * after lithe_collect(true).
 *
 * glibc calloc's a thread's TLS vector (~300 bytes) from the thread that
 * creates it.  On a stack glibc allocated, the vector stays with the
 * stack in glibc's cache when the thread is gone, so one block of lithe's
 * stayed live for good: after lithe_collect(true) its span (64 KiB,
 * resident when cut from dirty pages), its span descriptor's unit of 20
 * KiB and glibc's 8 KiB of cached stack (bench-mallocbench tree_allocate,
 * end-kB with the thread started for any amount waiting, 196 kB against
 * 160 without it).  The thread now runs on a stack of lithe's, and glibc
 * frees the vector when it is joined: by lithe_collect(true), and by the
 * next start when it exited on its own.  Both ways, the process holds no
 * small block after lithe_collect(true) (JSON small_live_bytes 320
 * before: the vector).  stdout has a static buffer, so that nothing else
 * is live.  Needs lithe. */
#include "testutil.h"

static char outbuf[4096];

static void churn(void) {
  tu_free_32mib_of_runs();
  void *p = malloc(1 << 19); /* a call with no lock held: the thread starts */
  CHECK(p != NULL);
  free(p);
}

static void collected(const char *when) {
  lithe_collect(true);
  const char *json = tu_stats_json();
  long live = tu_json_field(json, "small_live_bytes"), spans = tu_json_field(json, "spans_small");
  printf("%s, then lithe_collect(true): small_live_bytes %ld, spans_small %ld\n", when, live, spans);
  CHECKF(live == 0 && spans == 0, "%s: %ld bytes of small blocks live in %ld spans after lithe_collect(true), "
         "with nothing allocated", when, live, spans);
}

int main(void) {
  setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
  tu_require_lithe();
  long delay = tu_purge_delay_ms();

  churn();
  CHECKF(tu_status_kb("Threads") == 2, "the purge thread did not start (Threads: %ld)", tu_status_kb("Threads"));
  collected("32 MiB freed, the purge thread started");

  churn();
  for (long waited = 0; tu_status_kb("Threads") != 1 && waited < delay + 3000; waited += 10) tu_sleep_ms(10);
  CHECKF(tu_status_kb("Threads") == 1, "the purge thread did not exit on its own (Threads: %ld)",
         tu_status_kb("Threads"));
  churn(); /* the next start joins the one that exited */
  collected("a thread gone on its own, another started");
  return 0;
}
