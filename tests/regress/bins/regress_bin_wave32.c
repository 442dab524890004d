/* SPDX-License-Identifier: MIT */
/* regress_bin_wave32 — a bin of 32-byte blocks holds a wave of 4 MiB of
 * them (BIN_MAX_BYTES), as a bin of 64 B blocks does.
 *
 * A round allocates 131,072 blocks of 32 B (4 MiB) and frees them all,
 * bench-mallocbench fragment's last loop of a round.  The first round's
 * frees past the bin's first capacity (512 blocks) go to their spans and
 * empty them; the refill after it grows the bin by as many as spilled.
 * With the bin's block count capped at 65,536 (what BIN_MAX_BLOCKS was,
 * below BIN_MAX_BYTES / 32), half of the second round's frees went past
 * the bin too, each through heap_bin_spill to its span (fragment: 1.6 M
 * of those a run, 37.9 M of its 355.2 M instructions), and emptied half
 * the spans, which the next round carved again.  Now the bin takes the
 * whole wave and keeps its 64 spans.  Needs lithe. */
#include "testutil.h"

#define N 131072

static void *a[N];

int main(void) {
  tu_require_lithe();
  tu_wave(a, N, 32);
  long first = tu_class_field(32, "spans");
  tu_wave(a, N, 32);
  long second = tu_class_field(32, "spans");
  printf("32 B spans after a round of %d blocks: %ld after the first, %ld after the second\n", N, first,
         second);
  /* the first round's frees past the bin's 512 blocks emptied their spans */
  CHECKF(first <= 8, "32 B spans after the first round: %ld (the bin took the frees?)", first);
  /* the second round's frees stayed in the grown bin, with their 64 spans
   * of 64 KiB (with the bin capped at 65,536 blocks: about half of them) */
  CHECKF(second >= 60, "32 B spans after the second round: %ld (the bin did not take the wave)", second);
  return 0;
}
