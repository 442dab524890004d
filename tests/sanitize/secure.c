/* SPDX-License-Identifier: MIT */
/* secure CASE (links build/liblithe-secure.so): what the hardened build
 * catches.  Each case runs in a child, which must print lithe's report
 * naming the operation, the block's exact address and the kind, and die of
 * SIGABRT, before the corrupted state can be used:
 *   overflow    a write 8 bytes past a block's end, into the link of the
 *               freed block after it; the malloc that pops that block finds
 *               its link decodes outside the span
 *   uaf_link    a freed block's link overwritten through a stale pointer
 *               (with the address of a fake block on the stack)
 *   double_free a block freed, handed out again (by a later malloc: not
 *               the next one, no immediate reuse), freed through the stale
 *               pointer, then freed by its new owner: "double free"
 *   random      not a misuse: fresh spans hand blocks out in a random
 *               order (processes started anew get different sequences)
 *   neighbours  not a misuse: consecutive mallocs of a fresh class are
 *               seldom neighbours in memory (the block an overflow out of
 *               one reaches is not predictably the next one allocated):
 *               under a third of 511 consecutive pairs in each of 4
 *               classes (the shuffled windows give ~1/8, ~1/5 in classes
 *               above 1 KiB; a carve in address order, as the release
 *               build's, gives all of them, and the hardened build's
 *               before the windows, in order from a random block of each
 *               slice, gave 496 of 511 in class 48)
 *   userheap    not a misuse: 200 blocks of one class from a lithe_heap_t
 *               (regression: lithe_heap_malloc popped its bin's encoded
 *               link without decoding it, and the second pop from a
 *               refilled bin crashed: SIGSEGV at the 2nd..100th block) */
#include "testutil.h"

#include <malloc.h>

static void *volatile sink;

typedef struct { const char *name, *op, *kind; } scase;
static const scase cases[] = {
    {"overflow", "malloc", "free list corrupted"},
    {"uaf_link", "malloc", "free list corrupted"},
    {"double_free", "free", "double free"},
};

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

static void run_case(void *arg) {
  const char *name = arg;
  if (strcmp(name, "overflow") == 0) {
    /* two neighbours: b right after a */
    enum { N = 256 };
    static char *p[N];
    char *a = NULL, *b = NULL;
    for (int i = 0; i < N; i++) p[i] = malloc(32);
    for (int i = 0; i < N && !a; i++)
      for (int j = 0; j < N; j++)
        if (p[j] == p[i] + 32) { a = p[i]; b = p[j]; break; }
    CHECK(a && b);
    free(b);
    announce(b);
    memset(a, 'A', 32 + 8); /* 8 bytes too many: b's link */
    sink = malloc(32);      /* pops b: its link is garbage */
    sink = malloc(32);
  } else if (strcmp(name, "uaf_link") == 0) {
    char *p = malloc(48);
    free(p);
    announce(p);
    static char fake[64] __attribute__((aligned(16)));
    char *f = fake;
    memcpy(p, &f, sizeof f); /* the stale write: point the list at `fake` */
    sink = malloc(48);       /* pops p */
    sink = malloc(48);       /* would hand out `fake` */
  } else if (strcmp(name, "double_free") == 0) {
    char *p = malloc(64);
    free(p);
    /* the same block, handed out again: not by the next malloc (no
     * immediate reuse), by one of the next few */
    static char *held[64];
    char *q = NULL;
    for (int i = 0; i < 64 && q != p; i++) held[i] = q = malloc(64);
    sink = held;
    CHECK(q == p);
    free(p);       /* the stale pointer frees q's block */
    announce(q);
    free(q);       /* the new owner frees it: already free */
  }
  printf("SURVIVED\n");
}

/* 32 blocks of a fresh class: their order, as a fingerprint */
static void order(void *arg) {
  (void)arg;
  char *first = malloc(208);
  uint64_t h = 0;
  for (int i = 0; i < 32; i++) {
    char *p = malloc(208);
    h = h * 31 + (uint64_t)((p - first) / 208 + 64);
  }
  printf("ORDER %" PRIu64 "\n", h);
}

int main(int argc, char **argv) {
  tu_require_lithe();
  CHECK(argc > 1);
  tu_child r;
  char how[64];
  if (strcmp(argv[1], "order") == 0) {
    order(NULL);
    return 0;
  }
  if (strcmp(argv[1], "random") == 0) {
    uint64_t seen[4];
    int distinct = 0;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    self[len] = 0;
    char *args[] = {self, (char *)"order", NULL};
    for (int k = 0; k < 4; k++) { /* exec'd: a fork would inherit the secret */
      CHECK(tu_run_exec(&r, args, NULL, 30) == 0);
      const char *o = strstr(r.out, "ORDER ");
      CHECKF(o && sscanf(o, "ORDER %" SCNu64, &seen[k]) == 1, "no order printed: %s%s", r.out, r.err);
      int dup = 0;
      for (int j = 0; j < k; j++) dup |= seen[j] == seen[k];
      distinct += !dup;
    }
    printf("4 processes, %d distinct carve orders\n", distinct);
    CHECKF(distinct >= 2, "every process carved in the same order: not randomised");
    return 0;
  }
  if (strcmp(argv[1], "neighbours") == 0) {
    static const size_t sizes[] = {48, 208, 1500, 3000};
    enum { N = 512 };
    static char *p[N];
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      for (int i = 0; i < N; i++) CHECK((p[i] = malloc(sizes[k])) != NULL);
      size_t cls = malloc_usable_size(p[0]);
      int next = 0;
      for (int i = 1; i < N; i++) next += p[i] == p[i - 1] + cls;
      printf("malloc(%zu) x %d (class %zu): %d of %d consecutive pairs are neighbours\n", sizes[k],
             N, cls, next, N - 1);
      CHECKF(3 * next < N - 1, "malloc(%zu): %d of %d consecutive blocks neighbours: carve order predictable",
             sizes[k], next, N - 1);
      for (int i = 0; i < N; i++) free(p[i]);
    }
    return 0;
  }
  if (strcmp(argv[1], "userheap") == 0) {
    lithe_heap_t *h = lithe_heap_new();
    CHECK(h != NULL);
    static char *p[200];
    for (int i = 0; i < 200; i++) {
      p[i] = lithe_heap_malloc(h, 64);
      CHECKF(p[i] != NULL, "lithe_heap_malloc(64) #%d: NULL", i);
      memset(p[i], i, 64);
    }
    for (int i = 0; i < 200; i++)
      CHECKF(p[i][0] == (char)i && p[i][63] == (char)i, "block #%d at %p overwritten", i, (void *)p[i]);
    lithe_heap_destroy(h);
    printf("200 blocks of 64 bytes from a lithe heap: OK\n");
    return 0;
  }
  const scase *c = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (strcmp(cases[i].name, argv[1]) == 0) c = &cases[i];
  CHECKF(c, "unknown case %s", argv[1]);
  CHECK(tu_run_fn(&r, run_case, (void *)c->name, 30) == 0);
  tu_describe(&r, how, sizeof how);
  printf("child: %s\nstdout: %sstderr: %s", how, r.out, r.err);
  void *addr = NULL;
  const char *a = strstr(r.out, "ADDR ");
  CHECKF(a && sscanf(a, "ADDR %p", &addr) == 1, "child printed no address");
  CHECKF(!strstr(r.out, "SURVIVED"), "the corruption went unnoticed");
  CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "child: %s, want SIGABRT", how);
  char want[64];
  snprintf(want, sizeof want, "lithe: %s(", c->op);
  CHECKF(strstr(r.err, want), "no \"%s\" report", want);
  CHECKF(tu_has_hex(r.err, (uintptr_t)addr), "the report does not name %p", addr);
  CHECKF(strstr(r.err, c->kind), "the report does not say \"%s\"", c->kind);
  printf("ok: %s caught at %p\n", c->name, addr);
  return 0;
}
