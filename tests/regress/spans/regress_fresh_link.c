/* SPDX-License-Identifier: MIT */
/* regress_fresh_link — a block malloc hands out must not hold the free
 * list's link to the next free block.
 *
 * A free small block links the span's free list through its first word.
 * Before the fix malloc cleared only the second word (the free key), so
 * the caller found a raw heap address in the first word of a new block:
 * an address leak for any program that sends uninitialised bytes out, and
 * a map of the free list for an attacker who can read them.
 *
 * For sizes across the small classes: 256 fresh blocks (carved from new
 * spans), then the same after freeing them (reused, linked again), through
 * malloc and memalign: the first word of each block must be 0.
 *
 * What the tests check, in detail:
 *
 * `regress_fresh_link`: (review fix) 256 blocks of each of 12 sizes 8 B ..
 * 32 KiB from malloc, again after freeing them, and from memalign(64): the
 * first word of every handed-out block is 0 (it held the free list's link
 * to the next block, a heap address) */
#include "testutil.h"
#include <malloc.h>

#define N 256

static int bad;

static void check_block(const char *how, size_t size, void *p) {
  uintptr_t w;
  memcpy(&w, p, sizeof w);
  if (w != 0 && bad++ < 5)
    fprintf(stderr, "%s(%zu) = %p: first word 0x%" PRIxPTR " (a free-list link)\n", how, size,
            p, w);
}

int main(void) {
  static void *blocks[N];
  static const size_t sizes[] = {8, 16, 24, 48, 100, 256, 1000, 1024, 1500, 4000, 9000, 32768};
  tu_require_lithe();
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    for (int round = 0; round < 2; round++) { /* 0: fresh blocks, 1: reused */
      for (int i = 0; i < N; i++) {
        blocks[i] = malloc(n);
        CHECK(blocks[i] != NULL);
        check_block(round ? "malloc (reused)" : "malloc", n, blocks[i]);
      }
      for (int i = 0; i < N; i++) free(blocks[i]);
    }
    for (int i = 0; i < N; i++) {
      blocks[i] = memalign(64, n);
      CHECK(blocks[i] != NULL);
      check_block("memalign(64, ..)", n, blocks[i]);
    }
    for (int i = 0; i < N; i++) free(blocks[i]);
  }
  printf("%d blocks with a non-zero first word\n", bad);
  CHECKF(bad == 0, "%d handed-out blocks still held a free-list link", bad);
  return 0;
}
