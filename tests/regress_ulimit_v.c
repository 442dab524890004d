/* regress_ulimit_v — programs must run under a small address-space limit
 * (ulimit -v 16384) with lithe as they do with glibc.
 *
 * Before the fix lithe's first allocation needed about 131 MiB of address
 * space: a 64 MiB arena over-mapped to 128 MiB to align it, plus the
 * pagemap's 64 MiB read-only level, and nothing smaller was tried, so ls
 * and python3 died at `ulimit -v 131072` (glibc: they run at 3 MiB). Now
 * an aligned address is tried before over-mapping, arenas shrink (down to
 * ARENA_FALLBACK_MIN) when a full one does not fit, and the pagemap level
 * maps only the pieces in use when its reservation does not fit.
 *
 * Each program runs in a child with RLIMIT_AS = 16 MiB (checked first
 * without lithe: a program that fails even then is reported and skipped):
 * this test itself re-executed (small and large blocks, calloc, realloc),
 * then `ls /` and `python3 -c ...` with LD_PRELOAD set to
 * the liblithe this process runs on. */
#include "testutil.h"
#include <malloc.h>

#define LIMIT (16384 * KiB)

static const char *lithe_path;

typedef struct {
  char *const *argv;
  int preload;
} run_t;

static void limited(void *arg) {
  const run_t *r = arg;
  struct rlimit rl = {LIMIT, LIMIT};
  if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(90);
  if (r->preload) setenv("LD_PRELOAD", lithe_path, 1);
  else unsetenv("LD_PRELOAD");
  execvp(r->argv[0], r->argv);
  _exit(91);
}

/* exit status of argv under the limit, with or without lithe preloaded */
static int run(char *const *argv, int preload, tu_child *c) {
  run_t r = {argv, preload};
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
  struct { const char *name; char *const *argv; } progs[] = {
    {"this test", self_argv}, {"ls /", ls_argv}, {"python3", py_argv}};
  int failed = 0;
  static tu_child c;
  for (int i = 0; i < 3; i++) {
    int without = i == 0 ? 0 : run(progs[i].argv, 0, &c);
    if (without != 0) {
      printf("%-10s: exit %d under the limit without lithe: not checked\n", progs[i].name, without);
      continue;
    }
    int with = run(progs[i].argv, 1, &c);
    printf("%-10s: exit %d under RLIMIT_AS = %lu KiB with %s\n", progs[i].name, with, LIMIT / KiB,
           lithe_path);
    if (with != 0) {
      printf("  stdout: %.300s\n  stderr: %.300s\n", c.out, c.err);
      failed++;
    }
  }
  CHECKF(failed == 0, "%d programs failed under ulimit -v %lu with lithe", failed, LIMIT / KiB);
  return 0;
}
