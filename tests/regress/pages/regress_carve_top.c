/* SPDX-License-Identifier: MIT */
/* regress_carve_top — a run that no free run holds is cut from the free
 * run at the arena's top, extended by what it lacks, not carved above it.
 *
 * A 512 KiB block is written and freed: the free run at the top of the
 * arena.  A 768 KiB block then fits no free run.  Carved above the freed
 * one it was 768 KiB of fresh pages, 192 faults to write it, with the
 * 512 KiB still resident below; a program whose blocks grow round after
 * round pushed the top up by a whole block each time (lithe-replay
 * python: 370 faults in the run after the warm-up, 170 now).  Now it
 * starts where the freed block did and only its last 256 KiB are fresh.
 * (Both up to large_max, 1 MiB: larger blocks take no fresh arena pages,
 * large.c.)
 * calloc of such a run zeroes only the pages that held the old block:
 * the fresh ones read as zero already, and a memset would fault them in. */
#include "testutil.h"
#include <malloc.h>
#include <unistd.h>
#include "lithe.h"

#define OLD ((size_t)512 * KiB)
#define NEW ((size_t)768 * KiB)

int main(void) {
  tu_require_lithe();
  /* never purge on its own: the freed run must stay resident */
  CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  long page = sysconf(_SC_PAGESIZE);
  long fresh = (long)((NEW - OLD) / (size_t)page);

  lithe_collect(true); /* the arena's top is the last run in use */
  char *a = malloc(OLD);
  CHECK(a != NULL);
  memset(a, 1, OLD);
  free(a);
  long f0 = tu_minflt();
  char *b = malloc(NEW);
  CHECK(b != NULL);
  memset(b, 2, NEW);
  long faults = tu_minflt() - f0;
  printf("512 KiB freed at %p, 768 KiB block at %p: %ld faults to write it (%ld fresh pages)\n", (void *)a,
         (void *)b, faults, fresh);
  CHECKF(b == a, "the 768 KiB block (%p) does not start where the freed 512 KiB one did (%p)", (void *)b,
         (void *)a);
  /* 192 before; the fresh pages and at most the page heap's metadata */
  CHECKF(faults <= fresh + 32, "writing the 768 KiB block faulted %ld pages in, %ld of them fresh", faults,
         fresh);
  free(b);

  lithe_collect(true);
  char *c = malloc(OLD);
  CHECK(c != NULL);
  memset(c, 3, OLD);
  free(c);
  f0 = tu_minflt();
  char *d = calloc(1, NEW);
  CHECK(d != NULL);
  faults = tu_minflt() - f0;
  printf("calloc of 768 KiB at %p over 512 KiB freed at %p: %ld faults\n", (void *)d, (void *)c, faults);
  CHECKF(d == c, "the calloc'd block (%p) does not start where the freed one did (%p)", (void *)d, (void *)c);
  CHECKF(faults <= 32, "calloc faulted %ld pages in: it zeroed fresh pages", faults);
  long bad = tu_nonzero(d, NEW);
  CHECKF(bad < 0, "calloc'd block holds a non-zero byte at offset %ld", bad);
  free(d);
  lithe_collect(true);
  printf("regress_carve_top: OK\n");
  return 0;
}
