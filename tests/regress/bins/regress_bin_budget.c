/* SPDX-License-Identifier: MIT */
/* regress_bin_budget — a heap's bins together hold at most BIN_HEAP_BYTES
 * (8 MiB, internal.h) at their capacities, however many classes churn.
 *
 * bench-mallocbench medium's shape, scaled down: three rounds that each
 * allocate 256 MiB of blocks of random sizes 1-8 KiB (13 classes), write
 * them, then free them all.  The first round's frees spill past the bins
 * (their first capacity is 16 KiB); the next round's refills grow each
 * bin to its largest (4 MiB); the last round's frees fill them.  Bins are
 * the owner's alone (the purge thread cannot reach them), so whatever the
 * spans of those blocks hold stays resident until the thread's next slow
 * path.  Before the budget, the bins that had grown kept up to 4 MiB
 * each after the last round: 31,392 kB of spans in the 13 classes (and
 * medium, 1 GiB a round, ended its pause with 58.6 MB resident against
 * glibc's 16.7).  Now a bin growing past the budget sends the others'
 * back to their spans: 9,440 kB.  The classes' spans must hold no more
 * than the budget plus slack.  Needs lithe. */
#include "testutil.h"

#define TOTAL ((size_t)256 << 20)
#define ROUNDS 3
#define MIN_SIZE 1024
#define MAX_SIZE 8192
#define NREC (TOTAL / MIN_SIZE)
/* the budget, and slack for each class's current span, its spans in the
 * heap's cache and the bins' blocks' spans being partly free */
#define BUDGET ((long)8 << 20)
#define SLACK ((long)8 << 20)

static void *rec[NREC];

/* bytes of spans of the classes of sizes lo .. hi, summed over the class
 * lines of a snapshot; *nclasses: how many lines */
static long span_bytes_between(unsigned lo, unsigned hi, int *nclasses) {
  const char *json = tu_stats_json();
  long sum = 0;
  *nclasses = 0;
  for (const char *p = strstr(json, "\"size\": "); p; p = strstr(p + 1, "\"size\": ")) {
    long size = strtol(p + 8, NULL, 10);
    if (size < (long)lo || size > (long)hi) continue;
    long b = tu_json_field(p, "span_bytes");
    CHECKF(b >= 0, "no span_bytes after the %ld-byte class's size", size);
    sum += b;
    ++*nclasses;
  }
  return sum;
}

int main(void) {
  tu_require_lithe();
  uint64_t rng = 1;
  for (int r = 0; r < ROUNDS; r++) {
    size_t left = TOTAL, n = 0;
    while (left > MIN_SIZE && n < NREC) {
      size_t size = MIN_SIZE + (size_t)(tu_rand(&rng) % (MAX_SIZE - MIN_SIZE + 1));
      if (size > left) size = left;
      rec[n] = malloc(size);
      CHECK(rec[n] != NULL);
      memset(rec[n], (int)(n & 0xff), size);
      left -= size;
      n++;
    }
    for (size_t i = 0; i < n; i++) free(rec[i]);
  }
  int nclasses;
  long held = span_bytes_between(MIN_SIZE, MAX_SIZE, &nclasses);
  printf("after %d rounds of %zu MiB of %d-%d B blocks, all freed: %ld kB of spans in %d classes "
         "(budget %ld kB + slack %ld kB)\n",
         ROUNDS, TOTAL >> 20, MIN_SIZE, MAX_SIZE, held >> 10, nclasses, BUDGET >> 10, SLACK >> 10);
  CHECKF(nclasses >= 10, "only %d classes of %d-%d B have spans: the rounds did not churn them", nclasses,
         MIN_SIZE, MAX_SIZE);
  CHECKF(held <= BUDGET + SLACK, "%ld kB of spans held by %d classes' bins after every block was freed, "
         "over the %ld kB budget + %ld kB slack", held >> 10, nclasses, BUDGET >> 10, SLACK >> 10);
  return 0;
}
