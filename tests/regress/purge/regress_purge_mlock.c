/* SPDX-License-Identifier: MIT */
/* regress_purge_mlock — freed pages that the kernel refuses to purge.
 *
 * A program may mlock a block (a key, kept off swap) and free it without
 * munlock: that is legal. With LITHE_PURGE_DELAY_MS=0 lithe purges the freed
 * run at once with madvise(MADV_DONTNEED), which fails with EINVAL on locked
 * pages. Before the fix lithe marked the run clean anyway, so a later calloc
 * of the same size was handed the old bytes (0x5e) as "zero", and free()
 * returned with errno = EINVAL from the failed madvise.
 *
 * Checks: every calloc of the freed size reads zero; errno is unchanged by
 * free() of small, large (locked and not) and xlarge blocks.
 * Exit 77 (skipped) if mlock is refused (RLIMIT_MEMLOCK).
 *
 * What the tests check, in detail:
 *
 * `regress_purge_mlock`: (review fix) with `LITHE_PURGE_DELAY_MS=0`: a 200
 * KiB block mlock'ed, filled with 0x5e and freed without munlock (madvise
 * fails on locked pages): 32 callocs of that size (many at the same
 * address) read zero; errno set to a sentinel is unchanged by free() of
 * small, large, mlock'ed large and xlarge blocks. Exit 77 if mlock is
 * refused */
#include "testutil.h"
#include <sys/mman.h>

#define SENTINEL 12345

static int errno_failures;

/* Reported at once, failed at the end: the calloc checks still run. */
static void free_keeps_errno(void *p, const char *what) {
  errno = SENTINEL;
  free(p);
  int e = errno;
  if (e != SENTINEL) {
    fprintf(stderr, "FAIL: free() of a %s block changed errno from %d to %d (%s)\n", what,
            SENTINEL, e, strerror(e));
    errno_failures++;
  }
}

int main(void) {
  tu_require_lithe();
  const char *delay = getenv("LITHE_PURGE_DELAY_MS");
  printf("LITHE_PURGE_DELAY_MS=%s\n", delay ? delay : "(unset)");

  const size_t n = 200 * KiB;
  unsigned char *key = malloc(n);
  void *guard = malloc(n); /* keeps key's run off the arena top */
  CHECK(key != NULL && guard != NULL);
  if (mlock(key, n) != 0) {
    printf("SKIP: mlock(%zu bytes) failed: %s (RLIMIT_MEMLOCK?)\n", n, strerror(errno));
    return 77;
  }
  memset(key, 0x5e, n);
  free_keeps_errno(key, "mlock'ed large"); /* no munlock: legal */

  /* The freed run must come back zeroed from calloc, wherever it is reused. */
  enum { ROUNDS = 16 };
  unsigned char *c[ROUNDS];
  int reused = 0;
  for (int i = 0; i < ROUNDS; i++) {
    c[i] = calloc(1, n);
    CHECK(c[i] != NULL);
    if (c[i] == key) reused++;
    long bad = tu_nonzero(c[i], n);
    CHECKF(bad < 0, "calloc #%d (%p, freed mlock'ed block was %p) has byte %ld = 0x%02x, not zero",
           i, (void *)c[i], (void *)key, bad, c[i][bad]);
  }
  for (int i = 0; i < ROUNDS; i++) free(c[i]);
  /* free / calloc in a loop: the same run over and over */
  for (int i = 0; i < ROUNDS; i++) {
    unsigned char *d = calloc(1, n);
    CHECK(d != NULL);
    if (d == key) reused++;
    long bad = tu_nonzero(d, n);
    CHECKF(bad < 0, "calloc loop #%d (%p) has byte %ld = 0x%02x, not zero", i, (void *)d, bad,
           d[bad]);
    memset(d, 0x5e, n); /* dirty again: the next calloc must zero it */
    free(d);
  }
  printf("calloc(%zu): %d of %d results reused the mlock'ed block's address; all zero\n", n,
         reused, 2 * ROUNDS);
  CHECKF(reused > 0, "the freed mlock'ed block was never reused: the test proves nothing");

  /* errno across free() of each kind of block */
  free_keeps_errno(malloc(64), "small");
  free_keeps_errno(malloc(3000), "small");
  void *l = malloc(n);
  CHECK(l != NULL);
  memset(l, 1, n);
  free_keeps_errno(l, "large");
  void *lm = malloc(n);
  CHECK(lm != NULL);
  if (mlock(lm, n) == 0) {
    memset(lm, 2, n);
    free_keeps_errno(lm, "mlock'ed large (second)");
  } else {
    free(lm);
  }
  void *x = malloc(40 * MiB); /* xlarge: a mapping of its own */
  CHECK(x != NULL);
  memset(x, 3, 1 * MiB);
  free_keeps_errno(x, "xlarge");
  free(guard);
  CHECKF(errno_failures == 0, "%d free() calls changed errno (see above)", errno_failures);
  printf("free() left errno alone for small, large, mlock'ed large and xlarge blocks\n");
  return 0;
}
