/* SPDX-License-Identifier: MIT */
/* regress_span_tail — no span ends in an OS page that no block reaches,
 * so memory freed by one size and carved again for another faults in no
 * page that was never touched.
 *
 * 32 MiB of 5120-byte blocks are written and freed (their spans go back
 * to the page heap: free runs of pages all touched, as far as the blocks
 * reached), then 32 MiB of 4096-byte blocks are written: they must fault
 * (almost) nothing in.  Before, a 64 KiB span held 12 blocks of 5120 B
 * and its last 4 KiB never held one: the 4096-byte spans, laid over the
 * freed pages in other places, faulted those pages in, 1 in 16 of the
 * pages they took (bench-mallocbench medium, 1 GiB of 1-8 KiB blocks
 * freed and asked again: 4,091 faults a run, tcmalloc 434; 246 now).
 * (sizeclass_table checks every class's span by the table.)
 *
 * What the tests check, in detail:
 *
 * `regress_span_tail`: 32 MiB of 5120-byte blocks written and freed, then
 * 32 MiB of 4096-byte blocks written: at most 128 minor faults for the
 * second wave (73 now; 530 before, when a 64 KiB span of 5120-byte blocks
 * ended in a 4 KiB page no block reached, and the second wave's spans
 * faulted those pages in) */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"

#define TOTAL ((size_t)32 * MiB)

static long wave(size_t size, char **p, size_t n, int fill) {
  long f0 = tu_minflt();
  for (size_t i = 0; i < n; i++) {
    p[i] = malloc(size);
    CHECK(p[i] != NULL);
    memset(p[i], fill, size);
  }
  return tu_minflt() - f0;
}

int main(void) {
  tu_require_lithe();
  /* never purge on its own: a loaded machine must not give the freed
   * pages back between the two waves */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  lithe_collect(true);
  size_t na = TOTAL / 5120, nb = TOTAL / 4096;
  char **a = malloc(na * sizeof *a), **b = malloc(nb * sizeof *b);
  CHECK(a != NULL && b != NULL);
  long fa = wave(5120, a, na, 1);
  for (size_t i = 0; i < na; i++) free(a[i]);
  long fb = wave(4096, b, nb, 2);
  printf("%zu blocks of 5120 B: %ld faults; freed, then %zu of 4096 B: %ld faults\n", na, fa, nb, fb);
  /* the same bytes: 73 faults now, metadata (a page of descriptors or
   * pagemap every 2 MiB) and the last ~60 blocks, in the room that the
   * spans still holding the 5120-byte class's binned blocks keep; 530
   * before (169 while a heap's span cache kept 4 spans of 80 KiB that no
   * 4096-byte block could use: heap.c, heap_span_new) */
  CHECKF(fb <= 128, "the 4096-byte blocks faulted %ld pages in, over pages the 5120-byte ones freed", fb);
  for (size_t i = 0; i < nb; i++) free(b[i]);
  free(a);
  free(b);
  lithe_collect(true);
  printf("regress_span_tail: OK\n");
  return 0;
}
