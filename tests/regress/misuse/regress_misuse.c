/* SPDX-License-Identifier: MIT */
/* regress_misuse CASE — misuse that lithe let through before the review
 * fixes, one case per test (regress_misuse_CASE). The case runs in a child
 * (this program re-executed with "child CASE"), which prints "ADDR <p>",
 * commits the misuse, then, if still alive, shows the harm it let happen
 * and exits 0. The test wants SIGABRT and a report on stderr naming lithe,
 * the operation, the exact address and the kind:
 *
 *   double_free_overwritten  free(p); p's first 16 bytes overwritten (the
 *       in-band free key with them); free(p): before, no report, and the
 *       block was on its free list twice (three mallocs, two the same)
 *   usable_size_freed  malloc_usable_size(p) after free(p): returned 112
 *   free_sized_small   free_sized(malloc(100), 5000): accepted
 *   free_sized_large   free_sized(malloc(200 KiB), 100): accepted
 *   double_free_xlarge free(malloc(40 MiB)) twice: "pointer not allocated
 *       by lithe" instead of a double free
 *   realloc_freed_foreign  a block another thread allocated, freed by this
 *       one (so at the head of this thread's bin, which has room), its first 16 bytes
 *       overwritten, then realloc'ed: realloc copied it and only the free
 *       of the old block noticed ("lithe: free(" instead of "realloc(")
 *   realloc_freed_shared  a thread with no heap yet (its first
 *       allocations come from a shared heap) frees a block, which goes to
 *       its span's remote list, overwrites its first 16 bytes and
 *       realloc's it: realloc looked only at the bin's head and reported
 *       "free(" */
#include "testutil.h"
#include <malloc.h>
#include <pthread.h>

void free_sized(void *p, size_t size); /* C23; lithe exports it */

typedef struct {
  const char *name, *op, *kind;
} rcase;

static const rcase cases[] = {
    {"double_free_overwritten", "free", "double free"},
    {"usable_size_freed", "malloc_usable_size", "freed"},
    {"free_sized_small", "free_sized", "size"},
    {"free_sized_large", "free_sized", "size"},
    {"double_free_xlarge", "free", "double free"},
    {"realloc_freed_foreign", "realloc", "double free"},
    {"realloc_freed_shared", "realloc", "double free"},
};

static void *volatile sink;

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

/* free p, then write over its first 16 bytes, where a free block keeps
 * its link and its key (a use after free); returns p, kept through sink so
 * the compiler cannot drop the write */
static char *free_then_smash(char *p) {
  sink = p;
  announce(p);
  free(p);
  memset(sink, 0x41, 16);
  return sink;
}

/* A thread's first 8 small allocations come from a heap shared by all
 * threads (heap.c, HEAPLESS_ALLOCS); after these it has a heap of its own. */
static void own_heap(void) {
  void *keep[9];
  for (int i = 0; i < 9; i++) keep[i] = malloc(64);
  for (int i = 0; i < 9; i++) free(keep[i]);
}

static void *alloc_64(void *arg) {
  (void)arg;
  own_heap();
  return malloc(64);
}

static void *realloc_freed_first(void *arg) { /* this thread's first allocation */
  (void)arg;
  char *q = realloc(free_then_smash(malloc(64)), 200);
  printf("after: realloc gave %p\n", (void *)q);
  return NULL;
}

static int child(const char *name) {
  if (strcmp(name, "double_free_overwritten") == 0) {
    free(free_then_smash(malloc(64)));
    void *a = malloc(64), *b = malloc(64), *c = malloc(64);
    printf("after: %p %p %p%s\n", a, b, c, a == b || b == c || a == c ? " (handed out twice)" : "");
  } else if (strcmp(name, "usable_size_freed") == 0) {
    char *p = malloc(100);
    sink = p;
    announce(p);
    free(p);
    printf("after: malloc_usable_size of the freed block = %zu\n", malloc_usable_size(sink));
  } else if (strcmp(name, "free_sized_small") == 0) {
    char *p = malloc(100);
    announce(p);
    free_sized(p, 5000);
    printf("after: accepted\n");
  } else if (strcmp(name, "free_sized_large") == 0) {
    char *p = malloc(200 * 1024);
    announce(p);
    free_sized(p, 100);
    printf("after: accepted\n");
  } else if (strcmp(name, "realloc_freed_shared") == 0) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, realloc_freed_first, NULL) == 0 && pthread_join(t, NULL) == 0);
  } else if (strcmp(name, "realloc_freed_foreign") == 0) {
    pthread_t t;
    void *p = NULL;
    own_heap(); /* this thread's bin of the class has room */
    CHECK(pthread_create(&t, NULL, alloc_64, NULL) == 0 && pthread_join(t, &p) == 0 && p);
    char *q = realloc(free_then_smash(p), 200);
    printf("after: realloc gave %p\n", (void *)q);
  } else if (strcmp(name, "double_free_xlarge") == 0) {
    char *p = malloc(40 << 20);
    sink = p;
    announce(p);
    free(p);
    free(sink);
    printf("after: no report\n");
  } else {
    return 2;
  }
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  CHECK(argc > 1);
  const rcase *c = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (strcmp(cases[i].name, argv[1]) == 0) c = &cases[i];
  CHECKF(c != NULL, "unknown case %s", argv[1]);
  tu_require_lithe();
  /* correct sized frees must still be accepted (also after an in-place
   * realloc shrink, which keeps the block) */
  free_sized(malloc(100), 100);
  free_sized(malloc(200 * 1024), 200 * 1024);
  free_sized(malloc(40 << 20), 40 << 20);
  char *q = malloc(1000);
  free_sized(realloc(q, 900), 900);

  static char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(n > 0);
  self[n] = 0;
  char *args[] = {self, "child", (char *)c->name, NULL};
  const char *env[] = {"LITHE_ON_ERROR", NULL};
  static tu_child r;
  CHECK(tu_run_exec(&r, args, env, 60) == 0);
  char how[64];
  tu_describe(&r, how, sizeof how);
  printf("%s: child %s\nstdout: %sstderr: %s\n", c->name, how, r.out, r.err);
  void *addr = NULL;
  CHECKF(sscanf(r.out, "ADDR %p", &addr) == 1, "no ADDR line");
  char want[128];
  snprintf(want, sizeof want, "lithe: %s(", c->op);
  CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "the misuse was let through (%s)", how);
  CHECKF(strstr(r.err, want) && tu_has_hex(r.err, (uintptr_t)addr) && strstr(r.err, c->kind),
         "report must carry \"%s\", the address %p and \"%s\"", want, addr, c->kind);
  return 0;
}
