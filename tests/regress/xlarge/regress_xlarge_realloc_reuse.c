/* SPDX-License-Identifier: MIT */
/* regress_xlarge_realloc_reuse — a big block grown by realloc while the
 * xlarge cache holds the new size takes cached memory, not fresh pages.
 *
 * A 64 MiB block is written and freed (cached), then a 2 MiB block grows
 * by 1.5x per realloc to 22.8 MiB, written whole after each step.  The
 * growth used to come from mremap: grown in place or moved, the new tail
 * fresh pages, faulted in one by one (13-16 us a 4 KiB page here) while
 * the cache held 40 MiB and more of pages already resident: a realloc
 * ladder of 1 -> 64 MiB repeated 20 times took 10.6-13.3 s against
 * tcmalloc's 1.0-1.2 (it copies into memory it holds).  Now such a block
 * is copied into cached memory and the old one is cached in turn: the
 * growth, 21 MiB (5,300 pages of 4 KiB), takes under 1,000 faults.
 * Minor faults are counted, not timed: the count is stable.
 *
 * What the tests check, in detail:
 *
 * `regress_xlarge_realloc_reuse`: a 64 MiB block freed (cached), then a 2
 * MiB block grown by 1.5x per realloc to 22.8 MiB, written whole after each
 * step, contents checked: under 1,000 minor faults for its 5,320 pages of
 * growth (6 now; 5,324 before, when the growth was mremap's fresh tail
 * while the cache held the memory) */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"

static void fill(unsigned char *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i += 4096) p[i] = (unsigned char)(i >> 12);
  p[to - 1] = 0xA5;
}

int main(void) {
  tu_require_lithe();
  /* never purge on its own: a loaded machine must not expire the cache */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  size_t big = 64 * MiB;
  unsigned char *b = malloc(big);
  CHECK(b != NULL);
  fill(b, 0, big);
  free(b); /* cached: 64 MiB resident */
  size_t n = 2 * MiB;
  unsigned char *p = malloc(n);
  CHECK(p != NULL);
  fill(p, 0, n);
  long f0 = tu_minflt();
  size_t grown = 0;
  while (n < 20 * MiB) {
    size_t m = n + n / 2;
    unsigned char *q = realloc(p, m);
    CHECK(q != NULL);
    for (size_t i = 0; i + 1 < n; i += 4096)
      CHECKF(q[i] == (unsigned char)(i >> 12), "realloc to %zu lost byte %zu: %u", m, i, q[i]);
    CHECKF(q[n - 1] == 0xA5, "realloc to %zu lost the last byte", m);
    fill(q, 0, m);
    grown += m - n;
    p = q;
    n = m;
  }
  long faults = tu_minflt() - f0;
  printf("grown to %zu bytes (%zu bytes of growth, %zu pages of 4 KiB): %ld minor faults\n", n, grown,
         grown / 4096, faults);
  CHECKF(faults < 1000, "%ld minor faults for %zu pages of growth: the cache's memory was not used", faults,
         grown / 4096);
  free(p);
  lithe_collect(true);
  lithe_stats_t s;
  lithe_stats_get(&s);
  CHECKF(s.xlarge_live == 0, "%zu xlarge blocks live after all were freed", s.xlarge_live);
  printf("regress_xlarge_realloc_reuse: OK\n");
  return 0;
}
