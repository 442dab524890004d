/* SPDX-License-Identifier: MIT */
/* purge_exit — the process exits with the purge thread parked.
 *
 * With LITHE_PURGE_THREAD=1 (the test's environment) the thread starts
 * when lithe loads and lives as long as the process: it is never joined,
 * since no allocation call, malloc_trim or exit handler of lithe's may
 * join a thread (regress_purge_join_hang).  32 MiB of page runs are freed
 * and purged by it (LITHE_PURGE_DELAY_MS=100), then the process exits
 * while it waits: TSan must report neither a race nor a thread leak (exit
 * 66), and the exit must not hang. */
#include "testutil.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_free_32mib_of_runs();
  void *p = malloc(64);
  CHECK(p != NULL);
  free(p);
  long delay = tu_purge_delay_ms();
  tu_sleep_ms(delay + 1000); /* purged by the thread, which waits again */
  printf("purge_exit: slept %ld ms past the purge; exiting with the thread parked\n", delay + 1000);
  return 0;
}
