/* SPDX-License-Identifier: MIT */
/* prof_realloc — realloc keeps a sampled large block in place as it keeps
 * any (run with LITHE_PROF=1 LITHE_PROF_SAMPLE=64k; argv[1]: a profile path).
 *
 * A buffer grows by realloc from 256 KiB to 1 MiB in 16 KiB steps, alone
 * in the process (in the arena's page runs, which grow in place into free
 * pages; above large_max a block moves by mremap, without a copy, but
 * along a path that depends on the mappings made before), first in a
 * child run with LITHE_PROF=0 (the baseline), then here, profiling: at
 * 64 KiB a block of 256 KiB or more is sampled at almost every step.  A
 * sampled block used to move (copied whole) at every realloc: 48 of 48;
 * now it moves no more often than unprofiled (+2), and the profile's
 * in-use estimate is the final block's size within 10 % (the last step
 * samples it with probability 1 - exp(-16), so it is in the profile, with
 * its size).  The child prints its count as its last line. */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "lithe.h"
#include "profile_parse.h"

#define FROM ((size_t)256 << 10)
#define TO ((size_t)1 << 20)
#define STEP ((size_t)16 << 10)

static void *volatile keep; /* the final block stays live for the dump */

static int grow(void) {
  char *p = malloc(FROM);
  CHECK(p != NULL);
  memset(p, 1, FROM);
  int moves = 0;
  for (size_t n = FROM + STEP; n <= TO; n += STEP) {
    char *q = realloc(p, n);
    CHECKF(q != NULL, "realloc to %zu", n);
    CHECKF(q[n - STEP - 1] == 1, "contents lost at %zu", n);
    q[n - 1] = 1;
    memset(q + n - STEP, 1, STEP);
    moves += q != p;
    p = q;
  }
  keep = p;
  return moves;
}

int main(int argc, char **argv) {
  tu_require_lithe();
  if (argc > 1 && strcmp(argv[1], "baseline") == 0) {
    printf("%d\n", grow());
    return 0;
  }
  CHECKF(argc > 1, "usage: %s PROFILE (with LITHE_PROF=1)", argv[0]);
  static tu_child r;
  char *const cargv[] = {argv[0], "baseline", NULL};
  const char *const env[] = {"LITHE_PROF=0", NULL};
  CHECK(tu_run_exec(&r, cargv, env, 60) == 0);
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "baseline child: status 0x%x, %s", r.status, r.err);
  char *last = strrchr(r.out, '\n');
  while (last && last > r.out && last[-1] != '\n') last--; /* the last line's start */
  int base = atoi(last ? last : r.out);
  int moves = grow();
  int steps = (int)((TO - FROM) / STEP);
  printf("%d reallocs: %d moves unprofiled, %d profiled\n", steps, base, moves);
  CHECKF(moves <= base + 2, "profiled: %d moves of %d reallocs, unprofiled %d", moves, steps, base);
  CHECKF(lithe_prof_dump(argv[1]) == 0, "lithe_prof_dump(%s): %s", argv[1], strerror(errno));
  double est;
  int maps;
  parse(argv[1], &est, &maps);
  printf("in use: %.1f MiB estimated, %.1f MiB held\n", profile_inuse_est / 1048576, (double)TO / 1048576);
  CHECKF(profile_inuse_est > 0.9 * TO && profile_inuse_est < 1.1 * TO + (1 << 20), "in-use estimate %.0f, held %zu",
         profile_inuse_est, TO);
  printf("prof_realloc: OK\n");
  return 0;
}
