/* regress_tls_dlopen — lithe loaded with dlopen leaves room in glibc's
 * static TLS reserve for the libraries loaded after it.
 *
 * lithe's thread state (the bins, the heap pointer) is initial-exec TLS,
 * which a library loaded with dlopen must take from the fixed reserve
 * glibc sets aside at start-up, shared by every such library (glibc 2.36
 * here: a library of 1,600 bytes fits in it alone, 589 + 1,200 do not).
 * lithe takes 589 bytes of it (2026-12-02); a
 * table of 2 KiB moved into the thread's TLS block (docs/design.md, "Where
 * the instructions go") would have made dlopen("liblithe.so") itself fail
 * with "cannot allocate memory in static TLS block".  This program is not
 * linked with lithe: it dlopens liblithe.so, checks that lithe_malloc and
 * lithe_free work through dlsym, then dlopens a library with 1,024 bytes
 * of initial-exec TLS, which must load (and does without lithe; one of
 * 1,200 bytes no longer loads after lithe's 589). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
#ifdef TLS_DEBUG_BUILD
  printf("skipped: the Debug build's lock-rank checks take 725 bytes of TLS; the release build's 589 are the figure\n");
  return 77;
#endif
  void *l = dlopen(LITHE_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!l) {
    printf("FAIL: dlopen %s: %s\n", LITHE_PATH, dlerror());
    return 1;
  }
  void *(*lm)(size_t) = (void *(*)(size_t))dlsym(l, "lithe_malloc");
  void (*lf)(void *) = (void (*)(void *))dlsym(l, "lithe_free");
  if (!lm || !lf) {
    printf("FAIL: lithe_malloc %p, lithe_free %p from dlsym\n", (void *)lm, (void *)lf);
    return 1;
  }
  char *p = lm(100);
  if (!p) {
    printf("FAIL: lithe_malloc(100) = NULL\n");
    return 1;
  }
  memset(p, 7, 100);
  lf(p);
  void *t = dlopen(TLS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!t) {
    printf("FAIL: after lithe, dlopen %s (1,024 bytes of initial-exec TLS): %s\n", TLS_LIB_PATH, dlerror());
    return 1;
  }
  char *(*get)(void) = (char *(*)(void))dlsym(t, "tls_lib_buffer");
  if (!get || !get()) {
    printf("FAIL: tls_lib_buffer from dlsym: %p\n", (void *)get);
    return 1;
  }
  memset(get(), 1, 1024);
  printf("dlopen liblithe.so, lithe_malloc/lithe_free, then a library with 1,024 bytes of initial-exec TLS: OK\n");
  return 0;
}
