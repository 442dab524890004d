/* SPDX-License-Identifier: MIT */
/* regress_xlarge_align_commit — an aligned xlarge block must be charged
 * its size, not its size plus its alignment.
 *
 * An xlarge block with a large alignment (memalign(256 MiB, 32 MiB)) is
 * mapped with room to trim to the alignment. Before the fix that room was
 * mapped read/write, so the kernel charged size + alignment (strict
 * overcommit: Committed_AS; and RLIMIT_DATA), and the call failed when
 * only the size was available. Now it is over-mapped PROT_NONE and only
 * the block is made read/write.
 *
 * In a child, RLIMIT_DATA = the current data size + 48 MiB: memalign of
 * 32 MiB aligned to 256 MiB must succeed (aligned, writable); the old code
 * asked for 288 MiB of writable mapping and got ENOMEM. Exit 77 if the
 * kernel does not enforce RLIMIT_DATA. */
#include "testutil.h"
#include <malloc.h>
#include <sys/mman.h>


static void child(void *arg) {
  (void)arg;
  tu_limit_data_or_skip(48 * MiB);
  errno = 0;
  char *p = memalign(256 * MiB, 32 * MiB);
  int err = errno;
  printf("memalign(256 MiB, 32 MiB) under a 48 MiB data allowance = %p (errno %d)\n", (void *)p,
         p ? 0 : err);
  fflush(stdout);
  if (!p) _exit(5);
  if ((uintptr_t)p & (256 * MiB - 1)) _exit(6);
  memset(p, 1, 32 * MiB);
  free(p);
  _exit(0);
}

int main(void) {
  tu_require_lithe();
  static tu_child r;
  if (tu_run_fn_skipped(&r, child, NULL, 60, "this kernel does not enforce RLIMIT_DATA")) return 77;
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
         "child status 0x%x (5: memalign failed, 6: misaligned)", r.status);
  return 0;
}
