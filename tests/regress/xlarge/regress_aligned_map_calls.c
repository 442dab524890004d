/* SPDX-License-Identifier: MIT */
/* regress_aligned_map_calls — an aligned block with a mapping of its own
 * costs the system calls it needs, and a size the kernel will not commit
 * fails at the first one.
 *
 * Such a block (alignment above 1 MiB, or size above 1 MiB at an alignment
 * above 8 KiB) was reserved PROT_NONE first and made read/write after: a
 * system call more for every one, and for a size the kernel refuses the
 * reservation (free of charge, so it succeeds), its trimming and its
 * unmapping came before the mprotect that failed.  MallocBench's
 * stress_aligned asks for every size up to 2^45 at every alignment up to
 * 2^44: 14.9k system calls a sweep, 10.6k now.  The plain and the hinted
 * try now map read/write at once (the charge the block takes anyway);
 * only an over-map is PROT_NONE.
 *
 * What the tests check, in detail:
 *
 * `regress_aligned_map_calls`: 16 blocks of 8 KiB at 4 MiB alignment
 * (mappings of their own): aligned, written, at most 8 system calls each;
 * `posix_memalign(64 KiB, 8 TiB)`: ENOMEM after at most 1 system call
 * (overcommit mode 1 may allocate it: then it is freed) (the block was
 * reserved PROT_NONE and committed after: a size the kernel refuses cost
 * its reservation, trimming and unmapping first; MallocBench's
 * stress_aligned sweep 14.9k system calls, 10.6k now) */
#include "testutil.h"
#include <errno.h>
#include "lithe.h"

static int overcommit_mode(void) {
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  int m = -1;
  if (f) {
    if (fscanf(f, "%d", &m) != 1) m = -1;
    fclose(f);
  }
  return m;
}

int main(void) {
  tu_require_lithe();
  lithe_stats_t s0, s1;

  /* 8 KiB at 4 MiB alignment: a mapping of its own, read/write, aligned */
  size_t most = 0;
  for (int i = 0; i < 16; i++) {
    void *p = NULL;
    lithe_stats_get(&s0);
    int rc = posix_memalign(&p, (size_t)4 << 20, 8192);
    lithe_stats_get(&s1);
    CHECKF(rc == 0 && p != NULL, "posix_memalign(4 MiB, 8 KiB): %d", rc);
    CHECKF(((uintptr_t)p & ((4u << 20) - 1)) == 0, "block %p not 4 MiB aligned", p);
    memset(p, 0x5A, 8192);
    size_t calls = s1.os_calls - s0.os_calls;
    if (calls > most) most = calls;
    free(p);
  }
  /* a plain try (aligned by luck), a hinted one after it (mmap, munmap,
   * mmap: 3 here, on a quiet address space), or the over-map (the two
   * tries, its mmap, two munmaps, mprotect: 8), and the first block may
   * commit a page of descriptors or of the pagemap */
  printf("posix_memalign(4 MiB, 8 KiB): at most %zu system calls in 16 tries\n", most);
  CHECKF(most <= 10, "%zu system calls for one aligned mapping", most);

  /* 8 TiB at 64 KiB alignment: below lithe's ALLOC_MAX, above what the
   * heuristic (mode 0) or strict (mode 2) overcommit commits on any
   * machine this runs on; mode 1 commits anything */
  int mode = overcommit_mode();
  void *p = NULL;
  lithe_stats_get(&s0);
  int rc = posix_memalign(&p, (size_t)64 << 10, (size_t)8 << 40);
  lithe_stats_get(&s1);
  size_t calls = s1.os_calls - s0.os_calls;
  printf("posix_memalign(64 KiB, 8 TiB), overcommit mode %d: %s, %zu system calls\n", mode,
         rc == 0 ? "allocated" : rc == ENOMEM ? "ENOMEM" : "other error", calls);
  if (rc == 0) {
    CHECKF(mode == 1, "8 TiB allocated under overcommit mode %d", mode);
    free(p);
  } else {
    CHECKF(rc == ENOMEM, "posix_memalign(64 KiB, 8 TiB): %d, not ENOMEM", rc);
    /* the refused read/write try is the only call (there were 3 or more:
     * the reservation, any second try or trimming, the mprotect refused,
     * the unmap) */
    CHECKF(calls <= 1, "%zu system calls for a size the kernel refuses", calls);
  }
  printf("regress_aligned_map_calls: OK\n");
  return 0;
}
