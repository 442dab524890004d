/* SPDX-License-Identifier: MIT */
/* debug_assert (Debug build only): lithe's assertions really fire and say
 * what failed.  A child frees a block and then writes through the stale
 * pointer (a use after free that overwrites the free-list link with an
 * address inside the span but not at a block start); the next malloc of
 * that size pops the block, the one after would follow the bad link.  The
 * Debug build must stop there with "lithe: assertion failed: ..." naming
 * the bad address, the file and line, and abort (SIGABRT). */
#include "testutil.h"

static void *volatile sink;

static void corrupt(void *arg) {
  (void)arg;
  char *p = malloc(48), *q = malloc(48);
  CHECK(p && q);
  free(q);
  free(p);                        /* free list: p -> q -> ... */
  char *bad = p + 8;              /* inside the span, not a block start */
  printf("ADDR %p\n", (void *)bad);
  fflush(stdout);
  memcpy(p, &bad, sizeof bad);    /* the use-after-free write */
  sink = malloc(48);              /* pops p, the list head becomes `bad` */
  sink = malloc(48);              /* must not hand out `bad` */
  printf("SURVIVED %p\n", sink);
}

int main(void) {
  tu_require_lithe();
  tu_child r;
  CHECK(tu_run_fn(&r, corrupt, NULL, 30) == 0);
  char how[64];
  tu_describe(&r, how, sizeof how);
  printf("child: %s\nstdout: %sstderr: %s", how, r.out, r.err);
  void *bad = NULL;
  const char *a = strstr(r.out, "ADDR ");
  CHECKF(a && sscanf(a, "ADDR %p", &bad) == 1, "child printed no address");
  CHECKF(!strstr(r.out, "SURVIVED"), "the corrupted link was followed: %s", r.out);
  CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "child: %s, want SIGABRT", how);
  CHECKF(strstr(r.err, "lithe: assertion failed: "), "no assertion report on stderr");
  CHECKF(tu_has_hex(r.err, (uintptr_t)bad), "the report does not name %p", bad);
  CHECKF(strstr(r.err, ".h:") || strstr(r.err, ".c:"), "the report has no file:line");
  printf("ok: the Debug build caught the corrupted free list at %p\n", bad);
  return 0;
}
