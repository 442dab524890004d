/* SPDX-License-Identifier: MIT */
/* regress_xlarge_grow_align — a cached xlarge mapping grown for a bigger
 * request stays on an 8 KiB lithe page.
 *
 * When every cached mapping is smaller than the request, the biggest is
 * grown with mremap, which may move it to any 4 KiB OS page.  The block
 * then started off a lithe page: posix_memalign(8192, 33554560) returned
 * 0x7f3f98fdd000 (lithe-bench's stress_aligned under the hardened build;
 * malloc(20971648) = 0x7f3b186fd000 with this test), and its pagemap slot
 * (one per 8 KiB) could be shared with the mapping before it.  Fixed in
 * large.c's xassemble (it grows by 4 KiB more and cuts to a lithe page);
 * this test forces the move into a misaligned hole.  Each
 * round frees a mapping and asks for a bigger one, with an 8 KiB
 * alignment and without, after mapping a page of the test's own right
 * after the freed one so that mremap cannot grow it in place and must
 * move it, and after leaving a hole of exactly the new length that ends
 * 4 KiB off an 8 KiB page (the kernel maps top-down: the move lands
 * there unless lithe places it): every block must start on an 8 KiB page.
 *
 * What the tests check, in detail:
 *
 * `regress_xlarge_grow_align`: a cached xlarge mapping grown with mremap
 * for a bigger request, with room after it taken and a hole of the new
 * length ending 4 KiB off an 8 KiB page: 300 rounds of malloc /
 * posix_memalign(8192), every block on an 8 KiB page (before the fix in
 * `xassemble`: `malloc(20971648) = 0x7f3b186fd000`; found as
 * stress_aligned's `posix_memalign(8192, 33554560) misaligned` in
 * lithe-bench) */
#include "testutil.h"
#include <sys/mman.h>
#include "lithe.h"


int main(void) {
  tu_require_lithe();
  int moved = 0;
  for (int i = 0; i < 300; i++) {
    size_t a = 17 * MiB + (size_t)(i % 7) * 64 * 1024, b = a + 3 * MiB + 128;
    char *p = malloc(a);
    CHECK(p != NULL);
    p[0] = 1;
    size_t len = (a + 8191) & ~(size_t)8191;
    void *wall = mmap(p + len, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (wall != MAP_FAILED && wall != p + len) { munmap(wall, 4096); wall = MAP_FAILED; } /* old kernel: a hint */
    size_t blen = (b + 8191) & ~(size_t)8191;
    char *r = mmap(NULL, 3 * blen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(r != MAP_FAILED);
    char *top = (char *)(((uintptr_t)r + 2 * blen) & ~(uintptr_t)8191) + 4096;
    munmap(top - blen, blen); /* the hole [top - blen, top) */
    free(p);
    void *q = NULL;
    int rc = (i & 1) ? posix_memalign(&q, 8192, b) : ((q = malloc(b)) ? 0 : -1);
    CHECKF(rc == 0 && q != NULL, "round %d: %s(%zu) failed", i, (i & 1) ? "posix_memalign" : "malloc", b);
    moved += q != p;
    CHECKF(((uintptr_t)q & 8191) == 0, "round %d: %s(%zu) = %p, not on an 8 KiB page", i,
           (i & 1) ? "posix_memalign(8192)" : "malloc", b, q);
    memset(q, 2, 4096);
    free(q);
    if (wall != MAP_FAILED) munmap(wall, 4096);
    munmap(r, (size_t)(top - blen - r)); /* the two pieces left of it (not the */
    munmap(top, (size_t)(r + 3 * blen - top)); /* hole: lithe may cache a mapping there) */
  }
  printf("300 rounds of free(17 MiB) + a bigger xlarge block: every block 8 KiB-aligned (%d moved)\n", moved);
  printf("regress_xlarge_grow_align: OK\n");
  return 0;
}
