/* SPDX-License-Identifier: MIT */
/* regress_xlarge_churn_faults — a churn of big blocks of random sizes
 * faults in little more than its live set's growth.
 *
 * bench-bigchurn's shape: 16 live blocks of 1-32 MiB (4 KiB steps); each
 * op frees one at random and allocates another, which the program writes
 * (here one byte a 4 KiB page: the same faults as a memset).  A perfect
 * reuser of freed memory faults in only what the live set grows past its
 * high-water mark (the floor printed below).  When cached ranges lying
 * side by side served any block they held, cutting their last one
 * (xcache_take_adjacent, large.c), the cache broke into more, smaller
 * ranges, and bench-bigchurn's 400 ops faulted 20.1-21.7k times against
 * 15.4k before and since (its floor ~15.2k).  Minor faults are counted,
 * not timed: the count is stable. */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"

#define LIVE 16
#define OPS 400

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static size_t next_size(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return MiB + (size_t)(rng % (31 * 256 + 1)) * 4096; /* 1 .. 32 MiB */
}

static void touch(char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  p[n - 1] = 1;
}

int main(void) {
  tu_require_lithe();
  /* never purge on its own: a loaded machine must not expire the cache
   * between a free and the next malloc */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  char *slot[LIVE];
  size_t len[LIVE], live = 0, high;
  for (int i = 0; i < LIVE; i++) {
    len[i] = next_size();
    slot[i] = malloc(len[i]);
    CHECK(slot[i] != NULL);
    touch(slot[i], len[i]);
    live += len[i];
  }
  high = live;
  size_t floor_bytes = 0;
  long f0 = tu_minflt();
  for (int k = 0; k < OPS; k++) {
    int i = (int)(next_size() % LIVE);
    free(slot[i]);
    live -= len[i];
    len[i] = next_size();
    slot[i] = malloc(len[i]);
    CHECK(slot[i] != NULL);
    touch(slot[i], len[i]);
    live += len[i];
    if (live > high) {
      floor_bytes += live - high;
      high = live;
    }
  }
  long faults = tu_minflt() - f0;
  long floor_pages = (long)(floor_bytes / 4096);
  printf("%d ops: %ld minor faults, floor %ld (the live set's growth in 4 KiB pages)\n", OPS, faults,
         floor_pages);
  /* 15 % over the floor, and 1,000 faults for the metadata and the
   * pagemap: the bug made 1.3x the floor */
  CHECKF(faults <= floor_pages + floor_pages / 7 + 1000, "%ld minor faults, floor %ld: freed memory not reused",
         faults, floor_pages);
  for (int i = 0; i < LIVE; i++) free(slot[i]);
  lithe_collect(true);
  lithe_stats_t s;
  lithe_stats_get(&s);
  CHECKF(s.xlarge_live == 0, "%zu xlarge blocks live after all were freed", s.xlarge_live);
  printf("regress_xlarge_churn_faults: OK\n");
  return 0;
}
