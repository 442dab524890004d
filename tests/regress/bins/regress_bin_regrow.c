/* SPDX-License-Identifier: MIT */
/* regress_bin_regrow — a bin the heap had to flush for another size does
 * not fill up again at the capacity it had grown to.
 *
 * Ten rounds of 40,000 blocks of 64 B allocated and freed grow the 64 B
 * bin (its capacity doubles each round its frees spilled past it) until
 * it holds all 40,000 (2.5 MiB).  Then 128 B blocks need spans: the bins
 * hold more than BIN_FLUSH_BYTES, so the heap flushes them into their
 * spans before taking fresh pages, and the 64 B spans go back.  A further
 * round of 40,000 blocks of 64 B, allocated and freed with the 128 B ones
 * still live, must give its spans back too: the flushed bin starts again
 * at its first capacity (256 blocks), so the frees past it reach their
 * spans.  Before, the bin kept its grown capacity: it took all 40,000
 * again and held ~40 spans of 64 KiB out of the page heap until the next
 * flush, which walked them block by block (replay_python: 11 flushes of
 * 610,000 blocks in a warm-up and one timed run; bench-mallocbench
 * realloc: 584).  Needs lithe.
 *
 * What the tests check, in detail:
 *
 * `regress_bin_regrow`: 10 rounds of 40,000 blocks of 64 B grow that bin
 * until it holds them all (40 spans); 20,000 blocks of 128 B then make the
 * heap flush its bins (1 span left); one more round of 40,000 x 64 B with
 * the 128 B blocks live must give its spans back (6 now: the flushed bin
 * starts at its first capacity, 256 blocks; before, it took all 40,000
 * again and kept 40 spans until the next flush, which walked them:
 * replay_python 11 flushes of 610,000 blocks a warm-up and run) */
#include "testutil.h"
#include <sys/mman.h>

#define N64 40000
#define N128 20000

static void *a[N64], *b[N128];

static void round64(void) {
  for (int i = 0; i < N64; i++) {
    a[i] = malloc(64);
    CHECK(a[i] != NULL);
    memset(a[i], i & 0xff, 64);
  }
  for (int i = 0; i < N64; i++) free(a[i]);
}

int main(void) {
  tu_require_lithe();
  for (int r = 0; r < 10; r++) round64();
  long grown = tu_class_field(64, "spans");
  /* the bin holds the 40,000 freed blocks: their spans stay */
  CHECKF(grown >= 20, "64 B spans after 10 rounds: %ld (the bin did not grow?)", grown);
  for (int i = 0; i < N128; i++) {
    b[i] = malloc(128);
    CHECK(b[i] != NULL);
    memset(b[i], 0x5a, 128);
  }
  long flushed = tu_class_field(64, "spans");
  round64();
  long again = tu_class_field(64, "spans");
  printf("64 B spans: %ld with the grown bin full, %ld after the 128 B blocks took spans "
         "(bins flushed), %ld after one more round of 40,000\n",
         grown, flushed, again);
  CHECKF(flushed < grown / 2, "the 128 B spans did not flush the bins (%ld -> %ld spans)", grown, flushed);
  /* the current span, those of the 256 blocks the bin keeps, the cached */
  CHECKF(again <= 8, "64 B spans after the round: %ld (the bin took the round's frees again)", again);
  for (int i = 0; i < N128; i++) {
    CHECK(((unsigned char *)b[i])[127] == 0x5a);
    free(b[i]);
  }
  return 0;
}
