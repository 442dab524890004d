/* SPDX-License-Identifier: MIT */
/* regress_free_unmapped — free() of a block the flat pagemap does not
 * cover keeps every check of the fast path.
 *
 * The flat pagemap (internal.h) is one 128 GiB read-only reservation; under
 * an address-space limit (ulimit -v) lithe does not make it, and the
 * entries are in the two-level map: free() then leaves the fast path at the
 * flat map's bound and goes on in free_unmapped (alloc.c), which reads the
 * two-level map and repeats the fast path's checks and push.  Each case
 * runs in a child re-executed under RLIMIT_AS = 64 MiB:
 *   ok            malloc/free pairs and batches of 100 at 16 B .. 32 KiB,
 *                 contents checked, and the child's VmSize, which must
 *                 show no flat map (under 1 GiB)
 *   double_free   free(p) twice: SIGABRT, "double free" and the address
 *   double_free_overwritten  free(p), its first 16 bytes (link and key)
 *                 overwritten, free(p): the same (the bin-head check)
 *   interior      free(p + 16): "interior pointer" and the address
 *
 * What the tests check, in detail:
 *
 * `regress_free_unmapped_*`: with RLIMIT_AS = 64 MiB (no flat pagemap:
 * free() reads the two-level map in `free_unmapped`), in a re-executed
 * child: `ok` 10,000 pairs and 20 batches of 100 at 7 sizes 16 B .. 32 KiB
 * with contents checked and VmSize under 1 GiB (no 128 GiB map);
 * `double_free`, `double_free_overwritten` (first 16 bytes smashed between
 * the frees) and `interior` (p + 16) each abort with the report, the
 * operation and the address */
#include "testutil.h"
#include <sys/resource.h>

#define LIMIT ((rlim_t)64 << 20)

static void *volatile sink;

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

static int child_ok(void) {
  static const size_t sizes[] = {16, 64, 100, 1024, 4096, 9000, 32768};
  static unsigned char *batch[100];
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    for (int i = 0; i < 10000; i++) {
      unsigned char *p = malloc(n);
      if (!p) return 2;
      p[0] = p[n - 1] = (unsigned char)i;
      free(p);
    }
    for (int round = 0; round < 20; round++) {
      for (int i = 0; i < 100; i++) {
        batch[i] = malloc(n);
        if (!batch[i]) return 3;
        memset(batch[i], i, n);
      }
      for (int i = 0; i < 100; i++)
        if (batch[i][0] != (unsigned char)i || batch[i][n - 1] != (unsigned char)i) return 4;
      for (int i = 0; i < 100; i++) free(batch[i]);
    }
  }
  long vm = tu_status_kb("VmSize");
  printf("VmSize %ld kB\n", vm);
  return vm > 0 && vm < (1L << 20) ? 0 : 5; /* a flat map would be 128 GiB */
}

static int child(const char *name) {
  struct rlimit rl = {LIMIT, LIMIT};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 90;
  /* lithe was set up at load time: run the case in a fresh process under
   * the limit */
  static char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 91;
  self[n] = 0;
  char *args[] = {self, "limited", (char *)name, NULL};
  execv(self, args);
  return 92;
}

static int limited(const char *name) {
  if (strcmp(name, "ok") == 0) return child_ok();
  char *p = malloc(64);
  sink = p;
  if (strcmp(name, "double_free") == 0) {
    announce(p);
    free(p);
    free(sink);
  } else if (strcmp(name, "double_free_overwritten") == 0) {
    announce(p);
    free(p);
    memset(sink, 0x41, 16);
    free(sink);
  } else if (strcmp(name, "interior") == 0) {
    announce(p + 16);
    free(p + 16);
  } else {
    return 2;
  }
  printf("after: no report\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  if (argc > 2 && strcmp(argv[1], "limited") == 0) return limited(argv[2]);
  CHECK(argc > 1);
  tu_require_lithe();
  static tu_child r;
  char how[64];
  tu_run_self_child(&r, argv[1], how, sizeof how);
  if (strcmp(argv[1], "ok") == 0) {
    CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "child %s", how);
  } else {
    const char *kind = strcmp(argv[1], "interior") == 0 ? "interior pointer" : "double free";
    tu_expect_report(&r, how, "free", kind);
  }
  return 0;
}
