/* SPDX-License-Identifier: MIT */
/* regress_fork_orphans — after fork() the child must be able to reuse the
 * memory of the threads it does not have.
 *
 * A forked child has only the thread that called fork(); the parent's
 * other threads' heaps are copied but nobody owns them. Before the fix
 * they stayed as they were: blocks of such a thread freed in the child
 * went to spans of a heap nobody drains, so their memory was never
 * reused. Now the child abandons those heaps at the fork (as at a thread's
 * exit), and their spans are reclaimed and adopted.
 *
 * A thread allocates 64 MiB of 1000-byte blocks and waits; main forks; the
 * child frees all those blocks, calls malloc_trim(0), allocates and touches
 * 64 MiB of 1000-byte blocks again: its VmRSS must grow by less than
 * 16 MiB (it grew by ~66 MiB; glibc: +0.4 MiB).
 *
 * What the tests check, in detail:
 *
 * `regress_fork_orphans`: (review fix) a thread allocates 64 MiB of
 * 1000-byte blocks and waits; the forked child frees them all,
 * `malloc_trim(0)`, allocates and touches 64 MiB again: VmRSS growth < 16
 * MiB (+380 KiB now; it was +67,820 KiB: the other thread's heap was
 * stranded) */
#include "testutil.h"
#include <malloc.h>
#include <pthread.h>

#define MIB (1024L * 1024)
#define BLOCK 1000
#define COUNT (64 * MIB / BLOCK)

static char *theirs[COUNT], *mine[COUNT];
static int ready[2], done[2];

static void *owner(void *arg) {
  (void)arg;
  for (long i = 0; i < COUNT; i++) {
    theirs[i] = malloc(BLOCK);
    if (!theirs[i]) abort();
    memset(theirs[i], 0x5a, BLOCK);
  }
  char c = 1;
  if (write(ready[1], &c, 1) != 1) abort();
  if (read(done[0], &c, 1) < 0) abort(); /* stays alive over the fork */
  return NULL;
}

int main(void) {
  tu_require_lithe();
  CHECK(pipe(ready) == 0 && pipe(done) == 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, owner, NULL) == 0);
  char c;
  CHECK(read(ready[0], &c, 1) == 1);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    long rss0 = tu_status_kb("VmRSS");
    for (long i = 0; i < COUNT; i++) free(theirs[i]);
    malloc_trim(0);
    long rss_freed = tu_status_kb("VmRSS");
    for (long i = 0; i < COUNT; i++) {
      mine[i] = malloc(BLOCK);
      if (!mine[i]) _exit(2);
      memset(mine[i], 0x33, BLOCK);
    }
    long rss1 = tu_status_kb("VmRSS");
    long growth = rss1 - rss0;
    printf("child: VmRSS %ld KiB at fork, %ld KiB after freeing the other thread's 64 MiB and "
           "malloc_trim, %ld KiB after allocating 64 MiB again: growth %+ld KiB\n",
           rss0, rss_freed, rss1, growth);
    fflush(stdout);
    _exit(growth < 16 * 1024 ? 0 : 1);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  c = 1;
  CHECK(write(done[1], &c, 1) == 1);
  CHECK(pthread_join(t, NULL) == 0);
  for (long i = 0; i < COUNT; i++) free(theirs[i]);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0,
         "child status 0x%x: the other thread's freed memory was not reused", st);
  return 0;
}
