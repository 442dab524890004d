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

#define MIB (1024UL * 1024)

static void child(void *arg) {
  (void)arg;
  long data_kb = tu_status_kb("VmData");
  if (data_kb <= 0) _exit(3);
  struct rlimit rl;
  getrlimit(RLIMIT_DATA, &rl);
  rl.rlim_cur = (rlim_t)data_kb * 1024 + 48 * MIB;
  if (setrlimit(RLIMIT_DATA, &rl) != 0) _exit(4);
  void *probe = mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe != MAP_FAILED) _exit(77); /* RLIMIT_DATA not enforced here */
  errno = 0;
  char *p = memalign(256 * MIB, 32 * MIB);
  int err = errno;
  printf("memalign(256 MiB, 32 MiB) under a 48 MiB data allowance = %p (errno %d)\n", (void *)p,
         p ? 0 : err);
  fflush(stdout);
  if (!p) _exit(5);
  if ((uintptr_t)p & (256 * MIB - 1)) _exit(6);
  memset(p, 1, 32 * MIB);
  free(p);
  _exit(0);
}

int main(void) {
  tu_require_lithe();
  tu_child r;
  CHECK(tu_run_fn(&r, child, NULL, 60) == 0);
  char how[64];
  tu_describe(&r, how, sizeof how);
  printf("child: %s\n%s", how, r.out);
  if (r.errlen) printf("child stderr:\n%s", r.err);
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 77) {
    printf("SKIP: this kernel does not enforce RLIMIT_DATA\n");
    return 77;
  }
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
         "child %s (5: memalign failed, 6: misaligned)", how);
  return 0;
}
