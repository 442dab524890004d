/* SPDX-License-Identifier: MIT */
/* regress_realloc_errno — with LITHE_ON_ERROR=ignore (set by CMake), every
 * misused realloc returns NULL with errno = EINVAL, as an interior pointer
 * always did.  Before: realloc / reallocarray of a freed small block
 * returned NULL with errno unchanged; lithe_heap_realloc of a freed or
 * interior block returned a new block (the misuse reported as
 * malloc_usable_size's and free's), and of a destroyed heap NULL with
 * errno unchanged.  Each case sets errno to 0 first; the reports go to
 * stderr, marked "(ignored)". */
#include "testutil.h"
#include <malloc.h>

static int failures;

static void expect_einval(const char *what, void *got) {
  int e = errno;
  printf("%-44s -> %p, errno %d (%s)\n", what, got, e, e ? strerror(e) : "unchanged");
  if (got != NULL || e != EINVAL) {
    printf("  FAIL: want NULL and errno EINVAL\n");
    failures++;
  }
}

static void *volatile sink;

/* a freed block, kept through sink so the free is not dropped */
static char *freed(size_t n) {
  char *p = malloc(n);
  CHECK(p);
  sink = p;
  free(p);
  return sink;
}

int main(void) {
  tu_require_lithe();
  const char *mode = getenv("LITHE_ON_ERROR");
  CHECKF(mode && strcmp(mode, "ignore") == 0, "run with LITHE_ON_ERROR=ignore (CMake sets it)");

  errno = 0;
  expect_einval("realloc(freed 64 B, 32)", realloc(freed(64), 32));
  errno = 0;
  expect_einval("realloc(freed 64 B, 4096)", realloc(freed(64), 4096));
  errno = 0;
  expect_einval("reallocarray(freed 64 B, 2, 32)", reallocarray(freed(64), 2, 32));
  char *live = malloc(64);
  errno = 0;
  expect_einval("realloc(interior of 64 B, 32)", realloc(live + 16, 32));
  errno = 0;
  expect_einval("realloc(freed 256 KiB, 512 KiB)", realloc(freed(256 * KiB), 512 * KiB));
  errno = 0;
  expect_einval("realloc(freed 40 MiB, 64)", realloc(freed(40 * MiB), 64));
  free(live);

  lithe_heap_t *u = lithe_heap_new();
  CHECK(u);
  char *a = lithe_heap_malloc(u, 64), *b = lithe_heap_malloc(u, 256 * KiB);
  CHECK(a && b);
  sink = a;
  free(a);
  errno = 0;
  expect_einval("lithe_heap_realloc(u, freed 64 B, 4096)", lithe_heap_realloc(u, sink, 4096));
  sink = b;
  free(b);
  errno = 0;
  expect_einval("lithe_heap_realloc(u, freed 256 KiB, 1 MiB)", lithe_heap_realloc(u, sink, MiB));
  char *c = lithe_heap_malloc(u, 64);
  CHECK(c);
  errno = 0;
  expect_einval("lithe_heap_realloc(u, interior, 4096)", lithe_heap_realloc(u, c + 16, 4096));
  char *d = malloc(64); /* not u's, but a live block: realloc'ed into u */
  errno = 0;
  char *e = lithe_heap_realloc(u, d, 4096);
  CHECKF(e != NULL, "lithe_heap_realloc of a live block: %s", strerror(errno));
  lithe_heap_destroy(u);
  errno = 0;
  expect_einval("lithe_heap_realloc(destroyed heap, NULL, 64)", lithe_heap_realloc(u, NULL, 64));

  CHECKF(failures == 0, "%d misused realloc(s) without EINVAL", failures);
  printf("ok\n");
  return 0;
}
