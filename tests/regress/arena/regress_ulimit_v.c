/* SPDX-License-Identifier: MIT */
/* regress_ulimit_v — programs must run under a small address-space limit
 * (ulimit -v) with lithe as they do with glibc, and lithe must hand out
 * nearly as much of that space as glibc does.
 *
 * Before the first fix lithe's first allocation needed about 131 MiB of
 * address space: a 64 MiB arena over-mapped to 128 MiB to align it, plus
 * the pagemap's 64 MiB read-only level, and nothing smaller was tried, so
 * ls and python3 died at `ulimit -v 131072` (glibc: they run at 3 MiB).
 * Now an aligned address is tried before over-mapping, arenas shrink
 * (down to ARENA_FALLBACK_MIN) when a full one does not fit, and the
 * pagemap level maps only the pieces in use when its reservation does not
 * fit.
 *
 * Before the second fix, under 16 MiB a program that allocated until
 * malloc returned NULL got 82-83 % of what glibc gave it in blocks of
 * 100-300 KB: a large block that no arena held needed a new 1 MiB arena,
 * and the unused tails of the arenas stayed reserved.  Now such a block
 * is mapped on its own, a last arena may be as small as 64 KiB, and the
 * arenas give their tails back when no new one fits (arena.c,
 * arena_trim_tails): 91-98 %.
 *
 * Each program runs in a child with RLIMIT_AS set (checked first without
 * lithe: a program that fails even then is reported and skipped), with
 * LD_PRELOAD set to the liblithe this process runs on:
 *   - this test re-executed (small and large blocks, calloc, realloc) and
 *     `ls /` under 16 MiB;
 *   - `python3 -c ...` under 20 MiB.  Under 16 MiB it runs with glibc
 *     only because its object allocator falls back to malloc when its
 *     own 1 MiB arenas cannot be mapped (its peak is 16.6 MiB without a
 *     limit): every run ends within a few KiB of the limit, and python's
 *     use of memory varies from run to run, so with a Debug lithe 1
 *     start in 20-40 failed there (the fill below is the deterministic
 *     measure); under 20 MiB 60 of 60 started.  It gets a second try
 *     there (below), and lithe runs with LITHE_SHOW_STATS=1 so that a
 *     failure's output ends with lithe's mappings;
 *   - ulimit_fill (linked with glibc's malloc alone) mallocs blocks of
 *     one size until malloc returns NULL, under 16 MiB, without and with
 *     lithe: lithe must hand out at least FILL_MIN of glibc's bytes, and
 *     the mallocs after the first NULL must make at most FAIL_CALLS_MAX
 *     system calls each (a program at its limit that keeps trying, as
 *     python3 does, made 20 each: 20,552 in one failed start), and a
 *     malloc must succeed again once the program unmaps 1 MiB it mapped
 *     itself before the fill.
 *
 * What the tests check, in detail:
 *
 * `regress_ulimit_v`: (review fix) with RLIMIT_AS = 16 MiB in a child: this
 * test re-executed (2000 small blocks, 200 / 600 KiB, calloc 1000 KiB,
 * realloc), `ls /` and `python3 -c ...` with `LD_PRELOAD` = the liblithe
 * under test exit 0 (each first checked without lithe; one that fails there
 * is not checked). Before: lithe's first malloc needed ~131 MiB of address
 * space */
#include "testutil.h"
#include <malloc.h>

#define LIMIT (16384 * KiB)
#define LIMIT_PYTHON (20480 * KiB)
/* lithe's share of glibc's bytes in the fill, at least (measured 0.909-
 * 0.916 at 100 KB blocks, 0.948-0.979 at the others, in 12 runs of each
 * build; 0.818 before the fix) */
#define FILL_MIN 0.88
/* System calls per malloc once the limit is reached, at most: each
 * failing malloc made 20 (blocks of 100 and 4000 B: arena_new halving
 * from 1 MiB to 64 KiB, aligned then again unaligned, twice) or 9
 * (300000 B) before arena.c's arena_starved.  Since, 1 (blocks of 100
 * and 4000 B: one arena tried) or 2 (100000 and 300000 B: an arena and
 * the block's own mapping) in most runs; 6 at 300000 B in about 1 run
 * in 100, where the mappings fit and the pagemap's 64 KiB piece for
 * them does not (each: map, piece, unmap).  glibc makes 2-3 (strace:
 * mmap, and for large blocks a failing brk).  The first of them may
 * still run the halving once, when the fill's last call ended on
 * something other than a new arena (seen: 7-9 calls in 1 run in 3):
 * FAIL_CALLS_FIRST more in all. */
#define FAIL_CALLS_MAX 6
#define FAIL_CALLS_FIRST 10

static const char *lithe_path;

typedef struct {
  char *const *argv;
  int preload;
  size_t limit;
} run_t;

static void limited(void *arg) {
  const run_t *r = arg;
  struct rlimit rl = {r->limit, r->limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(90);
  if (r->preload) {
    setenv("LD_PRELOAD", lithe_path, 1);
    setenv("LITHE_SHOW_STATS", "1", 1); /* lithe's mappings at exit, on stderr */
  } else {
    unsetenv("LD_PRELOAD");
  }
  execvp(r->argv[0], r->argv);
  _exit(91);
}

/* exit status of argv under limit, with or without lithe preloaded */
static int run(char *const *argv, int preload, size_t limit, tu_child *c) {
  run_t r = {argv, preload, limit};
  CHECK(tu_run_fn(c, limited, &r, 60) == 0);
  return c->timed_out ? -1 : WIFEXITED(c->status) ? WEXITSTATUS(c->status) : 128 + WTERMSIG(c->status);
}

static int child(void) {
  static void *p[2000];
  for (int i = 0; i < 2000; i++) {
    p[i] = malloc(16 + (size_t)i % 1000);
    if (!p[i]) return 2;
    memset(p[i], 1, 16);
  }
  char *big = malloc(200 * KiB), *zero = calloc(1, 1000 * KiB);
  if (!big || !zero || tu_nonzero(zero, 1000 * KiB) >= 0) return 3;
  memset(big, 2, 200 * KiB);
  big = realloc(big, 600 * KiB);
  if (!big) return 4;
  for (int i = 0; i < 2000; i++) free(p[i]);
  free(big);
  free(zero);
  printf("allocated and freed 2000 small blocks, 200 KiB, 600 KiB, calloc 1000 KiB under RLIMIT_AS %lu KiB\n",
         LIMIT / KiB);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  tu_require_lithe();
  Dl_info info;
  CHECK(dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info) && info.dli_fname);
  lithe_path = info.dli_fname;
  static char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(n > 0);
  self[n] = 0;
  char *self_argv[] = {self, "child", NULL};
  char *ls_argv[] = {"ls", "/", NULL};
  char *py_argv[] = {"python3", "-c", "import sys; print(sum(range(100000)), sys.version_info[0])", NULL};
  /* python3 alone gets a second try: one start in a fresh-clone CI run
   * failed at its very beginning (pycore_init_builtins), which 455 starts
   * on the same machine, under load or not, did not repeat
   * (docs/semantics.md); a failure stays in the log */
  struct { const char *name; char *const *argv; size_t limit; int tries; } progs[] = {
    {"this test", self_argv, LIMIT, 1}, {"ls /", ls_argv, LIMIT, 1}, {"python3", py_argv, LIMIT_PYTHON, 2}};
  int failed = 0;
  static tu_child c;
  for (int i = 0; i < 3; i++) {
    int without = i == 0 ? 0 : run(progs[i].argv, 0, progs[i].limit, &c);
    if (without != 0) {
      printf("%-10s: exit %d under the limit without lithe: not checked\n", progs[i].name, without);
      continue;
    }
    for (int attempt = 1;; attempt++) {
      int with = run(progs[i].argv, 1, progs[i].limit, &c);
      printf("%-10s: exit %d under RLIMIT_AS = %zu KiB with %s%s\n", progs[i].name, with, progs[i].limit / KiB,
             lithe_path, attempt > 1 ? " (second try)" : "");
      if (with == 0) break;
      /* the end of stderr holds lithe's statistics (LITHE_SHOW_STATS) */
      size_t skip = c.errlen > 1500 ? c.errlen - 1500 : 0;
      printf("  stdout: %.300s\n  stderr (its end): %s\n", c.out, c.err + skip);
      if (attempt < progs[i].tries) continue;
      failed++;
      break;
    }
  }
  static const char *const fill_sizes[] = {"100", "4000", "100000", "300000"};
  for (int i = 0; i < 4; i++) {
    char *fill_argv[] = {ULIMIT_FILL, (char *)fill_sizes[i], NULL};
    long kib[2];
    for (int preload = 0; preload < 2; preload++) {
      int rc = run(fill_argv, preload, LIMIT, &c);
      CHECKF(rc == 0 && sscanf(c.out, "%ld", &kib[preload]) == 1, "fill %s B %s: exit %d, output '%.100s'",
             fill_sizes[i], preload ? "with lithe" : "without lithe", rc, c.out);
    }
    double share = (double)kib[1] / (double)kib[0];
    printf("fill      : blocks of %6s B until NULL under %zu KiB: glibc %ld KiB, lithe %ld KiB (%.3f)\n",
           fill_sizes[i], LIMIT / KiB, kib[0], kib[1], share);
    if (share < FILL_MIN) {
      printf("  lithe handed out less than %.2f of glibc's bytes\n", FILL_MIN);
      failed++;
    }
    unsigned long calls = 0;
    int tries = 0, fails = 0;
    const char *line = strstr(c.out, "os calls ");
    CHECKF(line && sscanf(line, "os calls %lu for %d mallocs, %d failing", &calls, &tries, &fails) == 3,
           "fill %s B with lithe: no os calls line in '%.200s'", fill_sizes[i], c.out);
    printf("            then %d more mallocs, %d failing: %lu system calls (at most %d each, %d more in all)\n", tries,
           fails, calls, FAIL_CALLS_MAX, FAIL_CALLS_FIRST);
    if (calls > (unsigned long)FAIL_CALLS_MAX * (unsigned long)tries + FAIL_CALLS_FIRST) {
      printf("  more than %d system calls per malloc at the limit\n", FAIL_CALLS_MAX);
      failed++;
    }
    /* fewer tries at the limit must not mean none: room the program gives
     * back by itself serves the next malloc */
    const char *again = strstr(c.out, "after unmapping");
    printf("            then %.60s", again ? again : "(no line)\n");
    if (!again || !strstr(again, ": malloc ok")) {
      printf("  no malloc succeeded after the program unmapped memory of its own\n");
      failed++;
    }
  }
  CHECKF(failed == 0, "%d checks failed under ulimit -v with lithe", failed);
  return 0;
}
