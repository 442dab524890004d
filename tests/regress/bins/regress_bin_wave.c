/* SPDX-License-Identifier: MIT */
/* regress_bin_wave — a bin that a wave of frees overflowed holds the next
 * wave of that size.
 *
 * A round allocates 40,000 blocks of 64 B and frees them all.  The 64 B
 * bin starts at its first capacity (256 blocks), so the first round's
 * frees past it go to their spans (39,744 of them).  The next refill
 * grows the bin by as many blocks as spilled, so the second round's
 * 40,000 frees all stay in the bin, and with them the spans they hold
 * (2.5 MiB: ~39 spans of 64 KiB).  Before, the capacity only doubled at
 * each refill (256 -> 512 -> ... : 8 rounds to hold one), the second
 * round sent 39,488 frees to the spans, which went back to the page heap
 * and were carved again in the next round; tree_allocate's heap flushes
 * its bins (back to their first capacity) every 4-5 of its rounds of
 * 65,535 nodes, so 2,847,349 of its 3,145,680 frees a run took that way.
 * Needs lithe.
 *
 * What the tests check, in detail:
 *
 * `regress_bin_wave`: a round of 40,000 blocks of 64 B allocated and freed
 * overflows the bin's first 256 (the spans go back: 6 left); the next
 * refill grows the bin by the 39,744 that spilled, so a second round stays
 * in it with its spans (40; before, the capacity doubled once a refill and
 * the second round spilled 39,488 frees: tree_allocate 2.85 M of its 3.15 M
 * frees a run) */
#include "testutil.h"

#define N 40000

static void *a[N];

int main(void) {
  tu_require_lithe();
  tu_wave(a, N, 64);
  long first = tu_class_field(64, "spans");
  tu_wave(a, N, 64);
  long second = tu_class_field(64, "spans");
  printf("64 B spans after a round of %d blocks: %ld after the first, %ld after the second\n", N, first,
         second);
  /* the first round's frees past the bin's 256 blocks emptied their spans */
  CHECKF(first <= 8, "64 B spans after the first round: %ld (the bin took the frees?)", first);
  /* the second round's frees stayed in the grown bin, with their spans */
  CHECKF(second >= 30, "64 B spans after the second round: %ld (the bin did not grow to the wave)", second);
  return 0;
}
