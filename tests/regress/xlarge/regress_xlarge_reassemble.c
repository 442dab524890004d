/* SPDX-License-Identifier: MIT */
/* regress_xlarge_reassemble — a block made of freed xlarge mappings, freed
 * and asked for again, is reused where its pieces lie.
 *
 * lithe builds a block no single freed mapping holds from several of them
 * (mremap moves them side by side); its free caches each piece apart.  The
 * next request of that size found no single range that holds it and moved
 * every piece again: MallocBench's stress_aligned asks 22 times at each
 * size from 16 MiB to 2 GiB, freeing each at once, and made 2,035 mremaps
 * a run (1.9x glibc's time).  Now ranges that lie side by side serve the
 * block together: same address, no system call, no page faulted in.
 *
 * What the tests check, in detail:
 *
 * `regress_xlarge_reassemble`: freed 6, 5 and 4 MiB blocks assembled into a
 * 15 MiB one, freed: three more mallocs of 15 MiB (the last 100 KiB less)
 * get the same address with no system call (`os_calls` unchanged) and under
 * 1/10 of the pages faulted in, usable size the request in pages, contents
 * written and read; a calloc of it reads zero (each request moved every
 * piece again with mremap: MallocBench's stress_aligned, 2,035 mremaps a
 * run); then a block of 4 MiB + 8 KiB freed and asked for 4 times: same
 * address, no system call (its odd tail, a piece of its own once freed, was
 * given back at the second free, and every second request moved the block
 * to grow it) */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"


int main(void) {
  tu_require_lithe();
  /* never purge on its own: a loaded machine must not expire the cache
   * between the frees and the mallocs */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);

  /* three freed blocks of 6, 5 and 4 MiB, kept apart by live ones, so no
   * two are one mapping */
  static const size_t mb[3] = {6, 5, 4};
  char *sep[3];
  tu_free_apart(mb, 3, sep);

  /* 15 MiB: all three, assembled (the biggest grown, the others moved) */
  size_t n = 15 * MiB;
  char *q = malloc(n);
  CHECK(q != NULL);
  memset(q, 0x5C, n);
  free(q);

  for (int round = 0; round < 3; round++) {
    lithe_stats_t s0, s1;
    lithe_stats_get(&s0);
    long f0 = tu_minflt();
    /* the same size, and a little less (the rest stays in the block) */
    size_t m = round == 2 ? n - 100 * 1024 : n;
    unsigned char *r = malloc(m);
    lithe_stats_get(&s1);
    CHECK(r != NULL);
    memset(r, round, m);
    long faults = tu_minflt() - f0;
    size_t calls = s1.os_calls - s0.os_calls;
    printf("round %d: malloc(%zu) at %p (first block %p): %zu system calls, %ld minor faults "
           "(%zu pages of 4 KiB)\n", round, m, (void *)r, (void *)q, calls, faults, m / 4096);
    CHECKF((char *)r == q, "round %d: block at %p, the pieces lie at %p", round, (void *)r, (void *)q);
    CHECKF(calls == 0, "round %d: %zu system calls to reuse cached pieces where they lie", round, calls);
    CHECKF(faults < (long)(m / 4096) / 10, "round %d: %ld minor faults: the pieces were not reused", round,
           faults);
    CHECKF(malloc_usable_size(r) == m / 8192 * 8192 + (m % 8192 ? 8192 : 0), "round %d: usable %zu for %zu",
           round, malloc_usable_size(r), m);
    for (size_t i = 0; i < m; i += 4093) CHECKF(r[i] == round, "round %d: byte %zu is %d", round, i, r[i]);
    free(r);
  }
  /* calloc of the block: every byte of the reused pieces zeroed */
  unsigned char *z = calloc(1, n);
  CHECK(z != NULL);
  size_t nonzero = 0;
  for (size_t i = 0; i < n; i++) nonzero += z[i] != 0;
  printf("calloc(15 MiB) at %p: %zu non-zero bytes\n", (void *)z, nonzero);
  CHECKF(nonzero == 0, "calloc: %zu bytes not zero", nonzero);
  free(z);
  for (int i = 0; i < 3; i++) free(sep[i]);

  /* a block of whole huge pages and a bit: freed, its odd tail is a range
   * of its own beside the rest; freed again (as two pieces), that tail
   * must stay cached too, or every second request of the size grows the
   * rest by moving it (stress_aligned's sweep: 4 MiB + 8 KiB, 22 times) */
  lithe_collect(true);
  size_t odd = 4 * MiB + 8192;
  char *first = malloc(odd);
  CHECK(first != NULL);
  memset(first, 1, odd);
  free(first);
  for (int round = 0; round < 4; round++) {
    lithe_stats_t a, b;
    lithe_stats_get(&a);
    char *r = malloc(odd);
    lithe_stats_get(&b);
    CHECK(r != NULL);
    memset(r, 2, odd);
    printf("4 MiB + 8 KiB, round %d: at %p (first %p), %zu system calls\n", round, (void *)r, (void *)first,
           b.os_calls - a.os_calls);
    CHECKF(r == first && b.os_calls == a.os_calls, "round %d: block at %p (first %p), %zu system calls",
           round, (void *)r, (void *)first, b.os_calls - a.os_calls);
    free(r);
  }

  lithe_collect(true);
  lithe_stats_t s2;
  lithe_stats_get(&s2);
  CHECKF(s2.xlarge_live == 0, "%zu xlarge blocks live after all were freed", s2.xlarge_live);
  printf("regress_xlarge_reassemble: OK\n");
  return 0;
}
