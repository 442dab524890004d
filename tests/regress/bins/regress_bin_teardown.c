/* SPDX-License-Identifier: MIT */
/* regress_bin_teardown — a thread that frees more than its bins may hold,
 * with no malloc between, leaves its bins small when it stops.
 *
 * Two rounds each allocate 4,000 blocks of 16 KiB (62.5 MiB: a program's
 * data), write them and free them all, then the thread calls nothing
 * more.  The second round's frees fill the 16 KiB bin, grown by the first
 * round's spills to its largest (4 MiB: 256 blocks), and the rest go past
 * it to the spans.  A thread's bins are out of the purge thread's reach,
 * so what they hold then stays resident while the thread is quiet: before,
 * 256 blocks, each holding its span (64 KiB, 4 blocks): 64 spans, 4 MiB;
 * bench-mallocbench big ended its pause with 13,232 kB resident against
 * glibc's 2,288.  Now frees that pushed BIN_TEARDOWN_BYTES (8 MiB) past
 * full bins since the last refill send the bins back to their spans and
 * first capacities (heap.c, heap_bin_spill): 7 spans stay after either
 * round (at most 16 checked).  Needs lithe. */
#include "testutil.h"

#define N 4000
#define SIZE (16 * KiB)

static void *a[N];

int main(void) {
  tu_require_lithe();
  tu_wave(a, N, SIZE);
  long first = tu_class_field(SIZE, "spans");
  tu_wave(a, N, SIZE);
  long second = tu_class_field(SIZE, "spans");
  printf("16 KiB spans after a round of %d blocks: %ld after the first, %ld after the second\n", N,
         first, second);
  CHECKF(first <= 16, "16 KiB spans after the first round: %ld (the bins kept a tear-down's blocks)", first);
  CHECKF(second <= 16, "16 KiB spans after the second round: %ld (the bins kept a tear-down's blocks)", second);
  return 0;
}
