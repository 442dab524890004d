/* SPDX-License-Identifier: MIT */
/* regress_split_bin CASE — the 16-byte class's bin: its counts and the
 * double-free check of blocks deep in it.  Written for the two lists the
 * class had from 550ce8f to 2026-12-06 (free pushed on a second list that
 * malloc took whole when its own ran dry, and each side kept its own
 * room; docs/design.md, "The 16-byte class: one list again"); kept for
 * the one list, whose counts and scans the cases check as well:
 *
 *   count        mallinfo2's uordblks follows the live 16-byte blocks
 *                exactly while free blocks sit in the bin (counted as
 *                free): after mallocs, frees, mallocs that take them
 *                back, and the frees of everything
 *   frees_list   a block freed twice while it sits in the bin, not at
 *                its head: "double free" with its address
 *   malloc_list  a block freed twice after mallocs took blocks from the
 *                bin again (the block deep in it): the same report
 *
 * The two misuse cases run in a child (this program re-executed with
 * "child CASE"), which prints "ADDR <p>" and commits the double free. */
#include "testutil.h"

#include <malloc.h>

enum { SZ = 8, N = 3000 };
static void *blk[N];

static size_t used(void) { return mallinfo2().uordblks; }

static void expect(const char *when, size_t base, size_t live) {
  size_t u = used();
  printf("%-34s uordblks %zu = start + %zu, live 16-byte blocks %zu (x 16 = %zu)\n", when, u, u - base,
         live, live * 16);
  CHECKF(u - base == live * 16, "%s: uordblks grew by %zu, want %zu (%zu blocks of 16 bytes)", when,
         u - base, live * 16, live);
}

static int count(void) {
  lithe_collect(true);
  size_t base = used();
  for (int i = 0; i < N; i++) CHECK((blk[i] = malloc(SZ)) != NULL);
  expect("3000 malloc(8)", base, N);
  for (int i = 0; i < 1000; i++) free(blk[i]); /* into the bin, then the span */
  expect("1000 of them freed", base, N - 1000);
  for (int i = 0; i < 1000; i++) CHECK((blk[i] = malloc(SZ)) != NULL); /* the bin, then a refill */
  expect("1000 malloc(8) more", base, N);
  for (int i = 0; i < 500; i++) free(blk[i]);
  for (int i = 0; i < 200; i++) CHECK((blk[i] = malloc(SZ)) != NULL);
  expect("500 freed, 200 malloced", base, N - 300);
  for (int i = 0; i < 200; i++) free(blk[i]);
  for (int i = 500; i < N; i++) free(blk[i]);
  expect("all freed", base, 0);
  return 0;
}

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

static int child(const char *name) {
  enum { K = 64 };
  for (int i = 0; i < K; i++) CHECK((blk[i] = malloc(SZ)) != NULL);
  if (!strcmp(name, "frees_list")) {
    free(blk[0]);
    free(blk[1]); /* blk[0] is not at the head */
    announce(blk[0]);
    free(blk[0]);
  } else {
    for (int i = 0; i < K; i++) free(blk[i]);
    /* malloc until the bin's head, the last block freed, comes back */
    void *q = NULL;
    for (int i = 0; i < 100000 && q != blk[K - 1]; i++) q = malloc(SZ);
    CHECKF(q == blk[K - 1], "the last block freed (%p) never came back", blk[K - 1]);
    announce(blk[0]); /* the first freed: the end of the bin, still free */
    free(blk[0]);
  }
  printf("after: no report\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  CHECK(argc > 1);
  tu_require_lithe();
  if (!strcmp(argv[1], "count")) return count();
  tu_child_reports(argv[1], "free", "double free");
  return 0;
}
