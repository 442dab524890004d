/* SPDX-License-Identifier: MIT */
/* regress_libc_symbols — glibc's __libc_malloc family must be lithe's.
 *
 * Some programs and libraries call __libc_malloc, __libc_free ... directly.
 * Before the fix lithe did not export them, so they reached glibc's
 * allocator, and a block from __libc_malloc passed to free() aborted with
 * "pointer not allocated by lithe". Now each name resolves to liblithe and
 * blocks move freely between the two spellings.
 *
 * Looked up with dlsym (glibc 2.36 no longer exports __libc_memalign, so
 * the program must not link against the names); each must come from
 * liblithe; then blocks from each are freed with free(), and malloc's
 * blocks with __libc_free / __libc_realloc. */
#include "testutil.h"
#include <malloc.h>

static const char *const names[] = {"__libc_malloc", "__libc_free", "__libc_calloc",
                                    "__libc_realloc", "__libc_memalign", "__libc_valloc",
                                    "__libc_pvalloc"};

int main(void) {
  tu_require_lithe();
  void *sym[7];
  int missing = 0;
  for (int i = 0; i < 7; i++) {
    Dl_info info;
    sym[i] = dlsym(RTLD_DEFAULT, names[i]);
    const char *from = sym[i] && dladdr(sym[i], &info) && info.dli_fname ? info.dli_fname : "nowhere";
    printf("%-16s from %s\n", names[i], from);
    if (!strstr(from, "liblithe")) missing++;
  }
  CHECKF(missing == 0, "%d of the __libc_* allocation functions are not lithe's", missing);
  void *(*l_malloc)(size_t) = (void *(*)(size_t))sym[0];
  void (*l_free)(void *) = (void (*)(void *))sym[1];
  void *(*l_calloc)(size_t, size_t) = (void *(*)(size_t, size_t))sym[2];
  void *(*l_realloc)(void *, size_t) = (void *(*)(void *, size_t))sym[3];
  void *(*l_memalign)(size_t, size_t) = (void *(*)(size_t, size_t))sym[4];
  void *(*l_valloc)(size_t) = (void *(*)(size_t))sym[5];
  void *(*l_pvalloc)(size_t) = (void *(*)(size_t))sym[6];

  void *p = l_malloc(100);
  CHECK(p && malloc_usable_size(p) >= 100);
  free(p);
  char *c = l_calloc(10, 1000);
  CHECK(c && tu_nonzero(c, 10000) == -1);
  free(c);
  p = l_memalign(4096, 5000);
  CHECK(p && ((uintptr_t)p & 4095) == 0);
  free(p);
  p = l_valloc(100);
  CHECK(p && ((uintptr_t)p & (sysconf(_SC_PAGESIZE) - 1)) == 0);
  free(p);
  p = l_pvalloc(100);
  CHECK(p && malloc_usable_size(p) >= (size_t)sysconf(_SC_PAGESIZE));
  free(p);
  char *q = malloc(50);
  CHECK(q);
  memset(q, 'x', 50);
  q = l_realloc(q, 5000);
  CHECK(q && q[49] == 'x');
  l_free(q);
  printf("blocks passed between malloc/free and __libc_*: ok\n");
  return 0;
}
