/* SPDX-License-Identifier: MIT */
/* regress_xlarge_reuse_size — a reused xlarge mapping is the size asked.
 *
 * A freed xlarge mapping is reused for a request up to 1/8 smaller without
 * being shrunk.  The block's size must still be the request's (rounded to
 * pages), not the mapping's: free_sized(p, n) with the n of the malloc was
 * reported as "size does not match the block's" and aborted (found by
 * fuzz_alloc: free_sized after a 40 MiB block was freed and 36 MiB asked),
 * and malloc_usable_size said 40 MiB. */
#include "testutil.h"
#include <malloc.h>
#include "lithe.h"


int main(void) {
  tu_require_lithe();
  static const size_t sizes[][2] = {{40, 36}, {40, 40}, {33, 30}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t a = sizes[k][0] * MiB, b = sizes[k][1] * MiB + 100;
    char *p = malloc(a);
    CHECK(p != NULL);
    memset(p, 1, a);
    free(p);
    char *q = malloc(b);
    CHECK(q != NULL);
    size_t usable = malloc_usable_size(q);
    size_t want = (b + 8191) & ~(size_t)8191;
    printf("free(%zu MiB) then malloc(%zu): %s, usable %zu\n", sizes[k][0], b,
           q == p ? "same mapping" : "another mapping", usable);
    CHECKF(usable >= b && usable == want, "malloc(%zu): usable %zu, want %zu (the request in 8 KiB pages)",
           b, usable, want);
    lithe_free_sized(q, b); /* free_sized: aborted: size does not match the block's */
  }
  /* realloc up to exactly the mapping's length: the block must grow with
   * it (fuzz_alloc: "realloc(33449662): usable size 32514048 too small",
   * after the fix above kept a reused block at the request's size) */
  {
    char *p = malloc(40 * MiB);
    CHECK(p != NULL);
    free(p);
    char *q = malloc(36 * MiB);
    CHECK(q != NULL);
    memset(q, 7, 36 * MiB);
    char *r = realloc(q, 40 * MiB);
    CHECK(r != NULL);
    size_t usable = malloc_usable_size(r);
    printf("malloc(36 MiB) in a reused 40 MiB mapping, realloc(40 MiB): usable %zu\n", usable);
    CHECKF(usable >= 40 * MiB, "realloc(40 MiB): usable %zu", usable);
    CHECKF(r[0] == 7 && r[36 * MiB - 1] == 7, "contents lost: %d %d", r[0], r[36 * MiB - 1]);
    memset(r, 8, 40 * MiB);
    free(r);
  }
  printf("regress_xlarge_reuse_size: OK\n");
  return 0;
}
