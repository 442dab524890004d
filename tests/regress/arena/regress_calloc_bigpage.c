/* SPDX-License-Identifier: MIT */
/* regress_calloc_bigpage — calloc must return zeros when the OS page is
 * larger than lithe's 8 KiB page (16 KiB and 64 KiB arm64 / ppc64le
 * kernels).
 *
 * lithe_collect(true) gives back the commit of the free run at an arena's
 * top. The decommit can only start at an OS page boundary; before the fix
 * the arena's bump pointer was still lowered to the run's start, so the
 * 8 KiB between that start and the next 16 KiB boundary stayed committed
 * with the old bytes in it, while the next carve from the bump treated it
 * as never touched: calloc skipped zeroing it. Now the bump stops at the
 * OS page boundary and the piece below it stays a (dirty) free run.
 *
 * This program's sysconf() reports 16 KiB pages to lithe (it interposes
 * liblithe's sysconf call; on a kernel with bigger pages it reports those).
 * A 40 KiB block starting 8 KiB past a 16 KiB boundary is filled with 0xAA
 * and freed, the heap collected, then a fresh calloc(15 MiB) is checked
 * for any non-zero byte.
 *
 * What the tests check, in detail:
 *
 * `regress_calloc_bigpage`: (review fix) the program's `sysconf` reports 16
 * KiB OS pages to lithe: a 40 KiB block 8 KiB past a 16 KiB boundary filled
 * with 0xAA and freed, `lithe_collect(true)`, then a fresh `calloc(15 MiB)`
 * has no non-zero byte (it had 8,192: the arena's bump came down below the
 * decommitted part) */
#include "testutil.h"
#include <sys/auxv.h>

#define FAKE_PAGE (16 * KiB)

long __sysconf(int name);

static size_t page(void) {
  size_t real = (size_t)getauxval(AT_PAGESZ);
  return real > FAKE_PAGE ? real : FAKE_PAGE;
}

long sysconf(int name) {
  if (name == _SC_PAGESIZE) return (long)page();
  return __sysconf(name);
}

int main(void) {
  tu_require_lithe();
  size_t ps = page();
  printf("page size lithe sees: %zu (kernel: %lu)\n", ps, getauxval(AT_PAGESZ));
  /* Large blocks are carved one after another from the arena's bump: keep
   * some until one starts 8 KiB past an OS page boundary. */
  char *keep[16];
  int nkeep = 0;
  char *q = NULL;
  for (int i = 0; i < 16; i++) {
    q = malloc(40 * KiB);
    CHECK(q != NULL);
    if (((uintptr_t)q & (ps - 1)) == 8 * KiB) break;
    keep[nkeep++] = q;
    q = NULL;
  }
  CHECKF(q != NULL, "no 40 KiB block 8 KiB past a %zu-byte boundary", ps);
  memset(q, 0xAA, 40 * KiB);
  free(q);
  lithe_collect(true);
  unsigned char *c = calloc(1, 15 * MiB);
  CHECK(c != NULL);
  size_t nonzero = 0;
  long first = -1;
  for (size_t i = 0; i < 15 * MiB; i++)
    if (c[i]) {
      if (first < 0) first = (long)i;
      nonzero++;
    }
  printf("freed %p (40 KiB of 0xAA), then calloc(15 MiB) = %p: %zu non-zero bytes (first at +%ld)\n",
         (void *)q, (void *)c, nonzero, first);
  free(c);
  for (int i = 0; i < nkeep; i++) free(keep[i]);
  CHECKF(nonzero == 0, "calloc returned %zu stale bytes", nonzero);
  return 0;
}
