/* purge_exit — a purge thread that exits on its own is joined by the
 * process's exit.
 *
 * 32 MiB of page runs freed start the purge thread; once they are purged
 * (LITHE_PURGE_DELAY_MS, 100 ms here) nothing waits and it exits on its
 * own.  It stays joinable (its stack is lithe's, and the join is when
 * glibc frees its TLS vector), and a finished thread nobody joined is a
 * thread leak to TSan when the process exits (the test then exits 66): so
 * lithe's atexit handler joins it (arena.c, purger_at_exit).  CI's
 * tsan_fork_threads caught the leak once, by chance of timing, when the
 * thread had not yet detached itself; this test makes the case happen
 * every run. */
#include "testutil.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_free_32mib_of_runs();
  void *p = malloc(64); /* a call with no lock held: the thread starts */
  CHECK(p != NULL);
  free(p);
  long delay = tu_purge_delay_ms();
  tu_sleep_ms(delay + 1000); /* purged, and the thread gone on its own */
  printf("purge_exit: slept %ld ms past the purge; exiting with the thread gone\n", delay + 1000);
  return 0;
}
