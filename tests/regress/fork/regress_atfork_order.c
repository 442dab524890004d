/* SPDX-License-Identifier: MIT */
/* regress_atfork_order — fork() must not deadlock when the program's own
 * pthread_atfork handlers, registered before lithe's first allocation,
 * allocate.
 *
 * Prepare handlers run in the reverse order of registration. Before the
 * fix lithe registered its handlers lazily, at the first allocation, so
 * handlers registered earlier ran after lithe's prepare handler, which
 * holds every lithe lock until the fork is done: a prepare handler that
 * allocated a large block waited for the page-heap lock forever. Now lithe
 * registers when the library is initialised (a constructor), before main:
 * its prepare runs last, its child and parent handlers first.
 *
 * main registers handlers that allocate and free a large and a small block
 * (prepare, parent and child) before anything else, then forks 3 times;
 * each child allocates and exits 0. A hang is ended by alarm() (SIGALRM).
 *
 * What the tests check, in detail:
 *
 * `regress_atfork_order`: (review fix) main's first call registers
 * `pthread_atfork` handlers that allocate a large and a small block
 * (prepare, parent, child); 3 forks must not deadlock (lithe registered
 * lazily, after them, so its prepare ran first and held the page-heap
 * lock), each child allocates; `alarm(30)` ends a hang */
#include "testutil.h"
#include <pthread.h>


static volatile int calls;

static void allocate(void) {
  char *big = malloc(200 * KiB); /* large: takes the page-heap lock */
  char *small = malloc(40);
  if (!big || !small) abort();
  memset(big, 1, 200 * KiB);
  free(small);
  free(big);
  calls++;
}

int main(void) {
  /* first: before any allocation of this program */
  CHECK(pthread_atfork(allocate, allocate, allocate) == 0);
  alarm(30);
  tu_require_lithe();
  for (int i = 0; i < 3; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      char *p = malloc(300 * KiB);
      _exit(p && calls == 2 * (i + 1) ? 0 : 1); /* prepare + child in this process */
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status 0x%x", i, st);
  }
  printf("3 forks with allocating atfork handlers registered first: %d handler calls\n", calls);
  CHECK(calls == 6);
  return 0;
}
