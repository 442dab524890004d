/* SPDX-License-Identifier: MIT */
/* regress_fork_purge_off — LITHE_PURGE_THREAD=0 holds in a forked child.
 *
 * The child of fork is told to start the purge thread when memory waits
 * to be purged (pages_fork_child: the parent's thread did not come along),
 * and it did so without asking whether a thread is allowed at all: with
 * LITHE_PURGE_THREAD=0 (the test's environment), and in the valgrind
 * build (which never starts one: glibc's TLS vector of a thread alive at
 * exit is reported as possibly lost), a child's first free after the fork
 * started one whenever the parent had freed pages not yet due, which the
 * calls into lithe purge on their own here.  memcheck caught it now and
 * then in api_cxx's new_handler child (a 352-byte TLS vector "possibly
 * lost", under load only, as it depends on when the parent last purged).
 * Here the parent frees 32 MiB of page runs (enough to start a thread
 * when one is allowed) and forks at once, well inside the purge delay
 * (LITHE_PURGE_DELAY_MS=300); the child frees more and makes more calls,
 * and must stay single-threaded. */
#include "testutil.h"


static void child(void *arg) {
  (void)arg;
  long before = tu_status_kb("Threads");
  void *p = malloc(MiB / 2); /* calls with no lock held: where a thread starts */
  CHECK(p != NULL);
  free(p);
  tu_free_32mib_of_runs();
  p = malloc(MiB / 2);
  CHECK(p != NULL);
  free(p);
  long after = tu_status_kb("Threads");
  printf("child: Threads %ld before its frees, %ld after\n", before, after);
  CHECKF(before == 1 && after == 1,
         "LITHE_PURGE_THREAD=0, yet the forked child has threads: %ld before, %ld after", before, after);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  const char *pt = getenv("LITHE_PURGE_THREAD");
  CHECKF(pt && !strcmp(pt, "0"), "needs LITHE_PURGE_THREAD=0 (got %s)", pt ? pt : "unset");
  (void)tu_purge_delay_ms();
  tu_free_32mib_of_runs();
  void *p = malloc(MiB / 2);
  CHECK(p != NULL);
  free(p);
  CHECKF(tu_status_kb("Threads") == 1, "Threads: %ld in the parent", tu_status_kb("Threads"));
  tu_run_fn_ok(child, NULL, 30, "child", "");
  printf("regress_fork_purge_off: OK\n");
  return 0;
}
