/* SPDX-License-Identifier: MIT */
/* regress_coalesce — a free run split off the front of a larger one must be
 * merged with the free runs next to it.
 *
 * a (200 KiB) is freed: free run R. memalign(256 KiB, 300 KiB) carves b out
 * after R, splitting a front part t off. Freeing b merges t + b + tail, but
 * before the fix split_front filed t without coalescing, so R and t stayed
 * two runs and a 700 KiB request (fits only in R + t + b) went elsewhere.
 * Now c lands at a.
 *
 * Done first thing, in a forked child: nothing has allocated large blocks
 * yet, so a sits at the top of the first arena's used part. */
#include "testutil.h"
#include <malloc.h>


static void pattern(void *arg) {
  (void)arg;
  char *a = malloc(200 * KiB);
  if (!a) _exit(2);
  free(a);
  char *b = memalign(256 * KiB, 300 * KiB);
  if (!b) _exit(2);
  free(b);
  char *c = malloc(700 * KiB);
  if (!c) _exit(2);
  memset(c, 7, 700 * KiB);
  printf("a=%p b=%p c=%p\n", (void *)a, (void *)b, (void *)c);
  fflush(stdout);
  _exit(c == a ? 0 : 1);
}

int main(void) {
  tu_require_lithe();
  static tu_child r;
  CHECK(tu_run_fn(&r, pattern, NULL, 30) == 0);
  char how[128];
  tu_describe(&r, how, sizeof how);
  printf("%s", r.out);
  if (r.errlen) fprintf(stderr, "%s", r.err);
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) != 2, "child: %s", how);
  CHECKF(WEXITSTATUS(r.status) == 0,
         "c was not placed at a: the free run before the memalign'ed block was not coalesced");
  printf("c reuses the coalesced run at a\n");
  return 0;
}
