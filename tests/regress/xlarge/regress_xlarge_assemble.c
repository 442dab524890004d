/* SPDX-License-Identifier: MIT */
/* regress_xlarge_assemble — a block made of several freed xlarge mappings.
 *
 * When no freed mapping holds a request, lithe builds the block from the
 * biggest ones (mremap grows one and moves the others over its fresh
 * tail), so the program's churn of big blocks of varying sizes does not
 * fault their pages in again.  Such a block spans several kernel mappings
 * side by side: calloc must zero the parts that held old data, realloc
 * must keep the contents when it shrinks it in place or copies it to grow
 * it, free must give every piece back to the cache (and lithe_collect(true)
 * unmap them all), and the pages it reused must not be faulted in again.
 * Minor faults are counted, not timed: the count is stable.
 *
 * What the tests check, in detail:
 *
 * `regress_xlarge_assemble`: freed xlarge blocks of 6, 5 and 4 MiB serve a
 * 13 MiB calloc none of them holds (one mapping grown by mremap, the others
 * moved over its tail): all zero, under 1/10 of its pages faulted in (the
 * old page-run path: 6,661 faults for 3,328 pages), realloc shrinks it in
 * place and grows it by copying with the contents kept, its pieces serve
 * the next 13 MiB block again, a churn of 60 blocks of 2-16 MiB leaves
 * every one on an 8 KiB page (a grown block that mremap placed 4 KiB
 * aligned made 2 of 60 misaligned, and later moves fail: bench-bigchurn
 * --ops 400 67k faults instead of 15k), and `lithe_collect(true)` gives it
 * all back */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"


int main(void) {
  tu_require_lithe();
  /* never purge on its own: a loaded machine must not expire the cache
   * between the frees and the malloc */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  lithe_stats_t s0, s1, s2;
  lithe_stats_get(&s0);

  /* three freed blocks of 6, 5 and 4 MiB (kept apart by live ones, so no
   * two are one mapping) */
  static const size_t mb[3] = {6, 5, 4};
  char *sep[3];
  tu_free_apart(mb, 3, sep);

  /* 13 MiB: more than any of them, less than all three */
  size_t n = 13 * MiB + 100;
  long f0 = tu_minflt();
  unsigned char *q = calloc(1, n);
  CHECK(q != NULL);
  size_t nonzero = 0;
  for (size_t i = 0; i < n; i++) nonzero += q[i] != 0;
  memset(q, 0x5C, n);
  long faults = tu_minflt() - f0;
  size_t usable = malloc_usable_size(q);
  printf("calloc(13 MiB) after freeing 6+5+4 MiB: %zu non-zero bytes, %ld minor faults "
         "(%zu pages of 4 KiB), usable %zu\n", nonzero, faults, n / 4096, usable);
  CHECKF(nonzero == 0, "calloc: %zu bytes not zero", nonzero);
  CHECKF(usable == ((n + 8191) & ~(size_t)8191), "usable %zu for %zu", usable, n);
  /* on a lithe page, as posix_memalign(8192) takes it (fuzz_alloc: a block
   * where mremap put it was only 4 KiB aligned) */
  CHECKF(((uintptr_t)q & 8191) == 0, "block at %p: not 8 KiB aligned", (void *)q);
  /* 15 MiB freed hold it: only the bookkeeping faults (the block would
   * fault 3,300 pages if it were fresh) */
  CHECKF(faults < (long)(n / 4096) / 10, "%ld minor faults: the freed pages were not reused", faults);

  /* shrink in place: the contents stay, the tail goes */
  unsigned char *r = realloc(q, 7 * MiB);
  CHECK(r != NULL);
  for (size_t i = 0; i < 7 * MiB; i += 4093)
    CHECKF(r[i] == 0x5C, "realloc(7 MiB): byte %zu is %d", i, r[i]);
  CHECKF(malloc_usable_size(r) == 7 * MiB, "usable %zu after realloc(7 MiB)", malloc_usable_size(r));
  /* grow: copied (or moved), contents kept */
  unsigned char *g = realloc(r, 20 * MiB);
  CHECK(g != NULL);
  for (size_t i = 0; i < 7 * MiB; i += 4093)
    CHECKF(g[i] == 0x5C, "realloc(20 MiB): byte %zu is %d", i, g[i]);
  memset(g, 1, 20 * MiB);
  lithe_free_sized(g, 20 * MiB);

  /* again: the pieces went back to the cache, and serve the next block */
  f0 = tu_minflt();
  q = malloc(n);
  CHECK(q != NULL);
  memset(q, 0x33, n);
  faults = tu_minflt() - f0;
  printf("malloc(13 MiB) again: %ld minor faults\n", faults);
  CHECKF(faults < (long)(n / 4096) / 10, "%ld minor faults: freed pieces not reused", faults);
  free(q);
  for (int i = 0; i < 3; i++) free(sep[i]);

  /* a churn of such blocks: every one on a lithe page (where mremap
   * placed a grown block, 4 KiB aligned, later moves of its pieces failed
   * and bench-bigchurn --ops 400 faulted 67k pages instead of 15k) */
  {
    char *live[4] = {0};
    unsigned seed = 1;
    int misaligned = 0;
    for (int i = 0; i < 60; i++) {
      int k = i % 4;
      free(live[k]);
      seed = seed * 1103515245u + 12345u;
      size_t sz = (2 + (seed >> 16) % 14) * MiB + ((seed >> 8) & 0xff) * 4096;
      live[k] = malloc(sz);
      CHECK(live[k] != NULL);
      memset(live[k], i, sz);
      misaligned += ((uintptr_t)live[k] & 8191) != 0;
    }
    for (int k = 0; k < 4; k++) free(live[k]);
    printf("churn of 60 blocks of 2-16 MiB: %d not 8 KiB aligned\n", misaligned);
    CHECKF(misaligned == 0, "%d blocks not on a lithe page", misaligned);
  }

  lithe_stats_get(&s1);
  lithe_collect(true);
  lithe_stats_get(&s2);
  printf("committed: start %zu KiB, all freed %zu KiB, after lithe_collect(true) %zu KiB\n",
         s0.committed >> 10, s1.committed >> 10, s2.committed >> 10);
  CHECKF(s2.committed < s0.committed + 2 * MiB, "committed %zu KiB after lithe_collect(true), %zu at start",
         s2.committed >> 10, s0.committed >> 10);
  CHECK(s2.xlarge_live == s0.xlarge_live);
  printf("regress_xlarge_assemble: OK\n");
  return 0;
}
