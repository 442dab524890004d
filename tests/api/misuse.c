/* SPDX-License-Identifier: MIT */
/* misuse CASE: runs this program again as a child that commits one misuse
 * (free of a foreign or interior pointer, double free, ...), twice:
 *   - by default: the child must print a message on stderr that names lithe,
 *     the operation, the exact address (0x...) and the kind of misuse, then
 *     die of SIGABRT;
 *   - with LITHE_ON_ERROR=ignore: the same message, then the child carries
 *     on (allocates and checks some blocks) and exits 0.
 * The child prints "ADDR <pointer>" on stdout before the misuse and
 * "SURVIVED" after it. Case "free_null" must do nothing and say nothing. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>

typedef struct {
  const char *name;
  const char *op;        /* "free" or "realloc" */
  const char *keywords;  /* '|'-separated, one must appear (case-insensitive) */
} mcase;

static const mcase cases[] = {
    {"free_null", "", ""},
    {"free_stack", "free", "not allocated"},
    {"free_mmap", "free", "not allocated"},
    {"free_unmapped", "free", "not allocated"},
    {"free_wild", "free", "not allocated"},
    {"free_high", "free", "not allocated"},
    {"free_interior_small", "free", "interior"},
    {"free_interior_large", "free", "interior"},
    {"double_free_small", "free", "double"},
    {"double_free_large", "free", "double"},
    {"double_free_xlarge", "free", "double"},
    {"double_free_remote", "free", "double"},
    {"free_unallocated_slot", "free", "not allocated|double|interior"},
    {"free_arena_hole", "free", "not allocated|double"},
    {"realloc_stack", "realloc", "not allocated"},
    {"realloc_interior", "realloc", "interior"},
    {"realloc_freed", "realloc", "double|not allocated|freed"},
};

static void *volatile sink; /* keeps pointers opaque to the compiler */

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

static size_t after_size(int i) {
  static const size_t sz[] = {100, 16, 1 << 20, 4000};
  return i == 5 ? (size_t)70 << 20 : sz[i % 4]; /* one xlarge block */
}

/* after an ignored misuse the allocator must still work: no block handed
 * out twice, nothing overwritten */
static void after_misuse(void) {
  enum { N = 300 };
  static char *ps[N];
  for (int i = 0; i < N; i++) {
    size_t n = after_size(i);
    ps[i] = malloc(n);
    CHECK(ps[i] != NULL);
    tu_fill(ps[i], n, tu_seed(ps[i], n) + (uint64_t)i);
  }
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++)
      CHECKF(ps[i] != ps[j], "block %p handed out twice after the misuse", (void *)ps[i]);
  for (int i = 0; i < N; i++) {
    size_t n = after_size(i);
    CHECKF(tu_check(ps[i], n, tu_seed(ps[i], n) + (uint64_t)i) < 0,
           "block %p overwritten after misuse", (void *)ps[i]);
    free(ps[i]);
  }
  printf("SURVIVED\n");
  fflush(stdout);
}

/* double_free_remote: a block owned by a live thread, freed twice by main */
static pthread_barrier_t owner_bar;
static void *owner(void *arg) {
  (void)arg;
  sink = malloc(100);
  pthread_barrier_wait(&owner_bar); /* main frees the block twice */
  pthread_barrier_wait(&owner_bar);
  for (int i = 0; i < 1000; i++) free(malloc(100)); /* the owner collects its frees */
  return NULL;
}

static int child(const char *name) {
  char stackbuf[256];
  memset(stackbuf, 1, sizeof stackbuf);
  /* the allocator is initialised before the misuse */
  char *warm = malloc(64);
  CHECK(warm != NULL);
  free(warm);

  if (!strcmp(name, "free_null")) {
    for (int i = 0; i < 1000; i++) free(NULL);
    char *p = realloc(NULL, 10);
    CHECK(p != NULL);
    free(p);
  } else if (!strcmp(name, "free_stack")) {
    sink = stackbuf + 32;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_mmap")) {
    char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    memset(m, 0, 1 << 16); /* zeros where a header would be: looks "valid" */
    sink = m + 4096;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_unmapped")) {
    sink = (void *)0x1000;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_wild")) {
    sink = (void *)(uintptr_t)0x5a5a5a5a5a50ULL;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_high")) {
    sink = (void *)(uintptr_t)0xffff800012345670ULL; /* not a user address */
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_interior_small")) {
    char *p = malloc(100);
    CHECK(p != NULL);
    sink = p + 16;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_interior_large")) {
    char *p = malloc(1 << 20);
    CHECK(p != NULL);
    memset(p, 3, 1 << 20);
    sink = p + 4096;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "double_free_small")) {
    char *p = malloc(100);
    CHECK(p != NULL);
    sink = p;
    announce(p);
    free(sink);
    free(sink);
  } else if (!strcmp(name, "double_free_large")) {
    char *p = malloc(1 << 20);
    CHECK(p != NULL);
    sink = p;
    announce(p);
    free(sink);
    free(sink);
  } else if (!strcmp(name, "double_free_xlarge")) {
    char *p = malloc((size_t)100 << 20);
    CHECK(p != NULL);
    sink = p;
    announce(p);
    free(sink);
    free(sink);
  } else if (!strcmp(name, "free_unallocated_slot")) {
    /* a block-aligned address in the same span that was never handed out:
     * accepted, it would be handed out twice later */
    char *p = malloc(100);
    CHECK(p != NULL);
    size_t slot = malloc_usable_size(p);
    sink = p + 5 * slot;
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "free_arena_hole")) {
    /* page-aligned, 24 MiB past a small block: inside lithe's reserved
     * arena (64 MiB, aligned to its size) but never allocated */
    char *p = malloc(100);
    CHECK(p != NULL);
    uintptr_t arena = (uintptr_t)p & ~(((uintptr_t)64 << 20) - 1);
    sink = (void *)(arena + ((uintptr_t)24 << 20) + 8192);
    announce(sink);
    free(sink);
  } else if (!strcmp(name, "double_free_remote")) {
    pthread_t t;
    pthread_barrier_init(&owner_bar, NULL, 2);
    CHECK(pthread_create(&t, NULL, owner, NULL) == 0);
    pthread_barrier_wait(&owner_bar);
    announce(sink);
    free(sink);
    free(sink);
    pthread_barrier_wait(&owner_bar);
    pthread_join(t, NULL); /* its spans are abandoned, then adopted below */
  } else if (!strcmp(name, "realloc_stack")) {
    sink = stackbuf + 64;
    announce(sink);
    void *r = realloc(sink, 500);
    (void)r; /* with ignore, the result is not defined: leave it */
  } else if (!strcmp(name, "realloc_interior")) {
    char *p = malloc(300);
    CHECK(p != NULL);
    sink = p + 32;
    announce(sink);
    void *r = realloc(sink, 5000);
    (void)r;
  } else if (!strcmp(name, "realloc_freed")) {
    char *p = malloc(100);
    CHECK(p != NULL);
    sink = p;
    announce(p);
    free(sink);
    void *r = realloc(sink, 200);
    (void)r;
  } else {
    fprintf(stderr, "unknown case %s\n", name);
    return 2;
  }
  after_misuse();
  return 0;
}

static int contains_ci(const char *hay, const char *needle, size_t nlen) {
  for (const char *h = hay; *h; h++)
    if (strncasecmp(h, needle, nlen) == 0) return 1;
  return 0;
}

/* Does stderr carry the message: "lithe", the op, the address, a keyword? */
static void check_message(const mcase *c, const tu_child *r, uintptr_t addr, const char *mode) {
  CHECKF(strstr(r->err, "lithe") != NULL, "[%s] stderr does not name lithe:\n%s", mode, r->err);
  char op[32];
  snprintf(op, sizeof op, "%s(", c->op);
  CHECKF(strstr(r->err, op) != NULL || strstr(r->err, c->op) != NULL,
         "[%s] stderr does not name the operation %s:\n%s", mode, c->op, r->err);
  if (!strcmp(c->op, "free"))
    CHECKF(strstr(r->err, "realloc") == NULL || strstr(r->err, "free(") != NULL,
           "[%s] stderr names realloc for a free:\n%s", mode, r->err);
  CHECKF(tu_has_hex(r->err, addr), "[%s] stderr does not show the address %#lx:\n%s", mode,
         (unsigned long)addr, r->err);
  int found = 0;
  const char *k = c->keywords;
  while (*k) {
    const char *bar = strchr(k, '|');
    size_t len = bar ? (size_t)(bar - k) : strlen(k);
    if (contains_ci(r->err, k, len)) found = 1;
    k += len + (bar != NULL);
  }
  CHECKF(found, "[%s] stderr does not say what went wrong (one of: %s):\n%s", mode, c->keywords,
         r->err);
}

static int parent(const mcase *c) {
  static tu_child r;
  char how[128];
  char *argv[] = {"/proc/self/exe", "--child", (char *)c->name, NULL};
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(sl > 0);
  self[sl] = 0;
  argv[0] = self;

  for (int mode = 0; mode < 2; mode++) {
    const char *mname = mode == 0 ? "default (abort)" : "LITHE_ON_ERROR=ignore";
    const char *env_abort[] = {"LITHE_ON_ERROR", "MALLOC_CHECK_", NULL};
    const char *env_ignore[] = {"LITHE_ON_ERROR=ignore", "MALLOC_CHECK_", NULL};
    CHECK(tu_run_exec(&r, argv, mode == 0 ? env_abort : env_ignore, 60) == 0);
    tu_describe(&r, how, sizeof how);
    printf("--- %s: %s\n--- stdout:\n%s--- stderr:\n%s", c->name, mname, r.out, r.err);
    if (r.errlen && r.err[r.errlen - 1] != '\n') printf("\n");
    printf("--- status: %s\n", how);
    CHECKF(!r.timed_out, "[%s] child hung", mname);

    if (!strcmp(c->name, "free_null")) {
      CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "[%s] free(NULL): %s", mname, how);
      CHECKF(strstr(r.out, "SURVIVED") != NULL, "[%s] child did not finish", mname);
      CHECKF(strstr(r.err, "lithe") == NULL, "[%s] free(NULL) produced a message", mname);
      continue;
    }
    const char *a = strstr(r.out, "ADDR ");
    CHECKF(a != NULL, "[%s] child died before the misuse (%s)", mname, how);
    uintptr_t addr = (uintptr_t)strtoull(a + 5, NULL, 16);
    if (mode == 0) {
      CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
             "[%s] expected death by SIGABRT, got %s", mname, how);
      CHECKF(strstr(r.out, "SURVIVED") == NULL, "[%s] child went on after the misuse", mname);
    } else {
      CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "[%s] expected exit 0, got %s",
             mname, how);
      CHECKF(strstr(r.out, "SURVIVED") != NULL, "[%s] child did not go on after the misuse",
             mname);
      /* docs/semantics.md: the message ends in "(ignored)" */
      CHECKF(strstr(r.err, "(ignored)") != NULL, "[%s] the message does not say (ignored)",
             mname);
    }
    check_message(c, &r, addr, mname);
  }
  printf("misuse %s: OK\n", c->name);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--child")) return child(argv[2]);
  if (argc != 2) {
    fprintf(stderr, "usage: misuse CASE\ncases:");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
  }
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (!strcmp(cases[i].name, argv[1])) {
      tu_require_lithe();
      return parent(&cases[i]);
    }
  fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}
