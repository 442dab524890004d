/* SPDX-License-Identifier: MIT */
/* regress_xlarge_from_runs — freed page runs serve blocks above large max.
 *
 * Blocks above large max (1 MiB) took a mapping of their own (cached or
 * fresh) even while the page heap held enough free pages for them: a
 * program whose small and large objects had grown the arenas and been
 * freed kept those pages resident and mapped as much again for its big
 * blocks (replay_sqlite, a 1 -> 16 MiB realloc ladder among small objects:
 * peak 163.7 MB and 8,490 faults a run, against 132.7 MB and 934 when page
 * runs served blocks up to 16 MiB).  Here 48 MiB of 512 KiB blocks are
 * freed; blocks of 2-8 MiB must then come from those pages (inside the
 * freed range, few faults), calloc must read zero there, and realloc must
 * keep the contents.
 *
 * What the tests check, in detail:
 *
 * `regress_xlarge_from_runs`: (review fix) 96 blocks of 512 KiB freed, then
 * blocks of 8 MiB, 2 MiB (calloc) and 5 MiB: each lies inside the freed
 * pages with under 1/10 of its pages faulted in, calloc reads zero there,
 * realloc to 12 MiB and back to 3 MiB keeps the contents, sized free of the
 * block passes (blocks above 1 MiB took a mapping while the page heap held
 * free pages for them: replay_sqlite peak 163.7 MB against 132.7) */
#include "testutil.h"
#include "lithe.h"

#define NRUNS 96

int main(void) {
  tu_require_lithe();
  static char *run[NRUNS];
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < NRUNS; i++) {
    run[i] = malloc(MiB / 2);
    CHECK(run[i] != NULL);
    memset(run[i], 0x5a, MiB / 2);
    if ((uintptr_t)run[i] < lo) lo = (uintptr_t)run[i];
    if ((uintptr_t)run[i] + MiB / 2 > hi) hi = (uintptr_t)run[i] + MiB / 2;
  }
  printf("%d blocks of 512 KiB in [%#lx, %#lx): %lu MiB\n", NRUNS, (unsigned long)lo,
         (unsigned long)hi, (unsigned long)((hi - lo) / MiB));
  for (int i = 0; i < NRUNS; i++) free(run[i]);

  static const size_t sizes[] = {8 * MiB + 100, 2 * MiB, 5 * MiB + 4096};
  char *big[3];
  for (int k = 0; k < 3; k++) {
    size_t n = sizes[k];
    long f0 = tu_minflt();
    big[k] = k == 1 ? calloc(1, n) : malloc(n);
    CHECK(big[k] != NULL);
    uintptr_t b = (uintptr_t)big[k];
    if (k == 1) CHECKF(tu_nonzero(big[k], n) < 0, "calloc(%zu) in freed pages: byte %ld not zero", n,
                       tu_nonzero(big[k], n));
    tu_fill(big[k], n, (uint64_t)k + 1);
    long faults = tu_minflt() - f0;
    printf("%s(%zu): %#lx, %s the freed runs, %ld faults for %zu pages\n", k == 1 ? "calloc" : "malloc",
           n, (unsigned long)b, b >= lo && b + n <= hi ? "inside" : "OUTSIDE", faults, n / 4096);
    CHECKF(b >= lo && b + n <= hi, "block of %zu at %#lx: not from the freed page runs [%#lx, %#lx)", n,
           (unsigned long)b, (unsigned long)lo, (unsigned long)hi);
    CHECKF(faults < (long)(n / 4096 / 10), "%ld faults for %zu pages of reused memory", faults, n / 4096);
  }
  /* realloc: grows (in place into free pages, or by a copy) and shrinks
   * with the contents kept */
  char *r = realloc(big[0], 12 * MiB);
  CHECK(r != NULL);
  CHECKF(tu_check(r, sizes[0], 1) < 0, "realloc to 12 MiB lost byte %ld", tu_check(r, sizes[0], 1));
  tu_fill(r, 12 * MiB, 4);
  r = realloc(r, 3 * MiB);
  CHECK(r != NULL);
  CHECKF(tu_check(r, 3 * MiB, 4) < 0, "realloc to 3 MiB lost byte %ld", tu_check(r, 3 * MiB, 4));
  CHECKF(tu_check(big[1], sizes[1], 2) < 0, "neighbour block changed at %ld", tu_check(big[1], sizes[1], 2));
  CHECKF(tu_check(big[2], sizes[2], 3) < 0, "neighbour block changed at %ld", tu_check(big[2], sizes[2], 3));
  free(r);
  free(big[1]);
  lithe_free_sized(big[2], sizes[2]); /* the block is the size asked, as an xlarge one */
  printf("regress_xlarge_from_runs: OK\n");
  return 0;
}
