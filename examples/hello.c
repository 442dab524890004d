/* SPDX-License-Identifier: MIT */
/* hello.c — the smallest program linked with lithe.
 *   cc hello.c $(pkg-config --cflags --libs lithe) -o hello && ./hello
 * Linked with -llithe, its malloc/free are lithe's (symbol interposition);
 * it proves that with lithe's own counters and exits 1 if they did not move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lithe.h>

int main(void) {
  enum { N = 1000 };
  char *blocks[N];
  for (int i = 0; i < N; i++) {
    blocks[i] = malloc(16 + (size_t)i * 8);
    if (!blocks[i]) return 2;
    memset(blocks[i], 'a' + i % 26, 16 + (size_t)i * 8);
  }
  lithe_stats_t st;
  lithe_stats_get(&st);
  for (int i = 0; i < N; i++) free(blocks[i]);
  printf("hello from %s: %d blocks, %zu thread heaps, %zu small spans, %zu bytes committed\n",
         lithe_version(), N, st.heaps_created, st.spans_small, st.committed);
  /* with another malloc serving the program, lithe never made a heap */
  return st.heaps_created > 0 && st.spans_small > 0 ? 0 : 1;
}
