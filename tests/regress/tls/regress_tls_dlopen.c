/* SPDX-License-Identifier: MIT */
/* regress_tls_dlopen — lithe loaded with dlopen leaves room in glibc's
 * static TLS reserve for the libraries loaded after it.
 *
 * lithe's thread state (the bins, the heap pointer) is initial-exec TLS,
 * which a library loaded with dlopen must take from the fixed reserve
 * glibc sets aside at start-up, shared by every such library (glibc 2.36
 * here: a library of 1,600 bytes fits in it alone).  lithe takes 637
 * bytes of it (589 on 2026-12-02, 637 with the 44 classes of 2026-12-05:
 * 12 bytes a class; after it a library of 1,072 bytes loads); a
 * table of 2 KiB moved into the thread's TLS block (docs/design.md, "Where
 * the instructions go") would have made dlopen("liblithe.so") itself fail
 * with "cannot allocate memory in static TLS block".  This program is not
 * linked with lithe: it dlopens liblithe.so, checks that lithe_malloc and
 * lithe_free work through dlsym, then dlopens a library with TLS_LIB_BYTES
 * (1,024, CMakeLists.txt here) of initial-exec TLS, which must load (one
 * of 1,080 bytes no longer loads after lithe's 637). */
#include "testutil.h" /* without HAVE_LITHE: not linked with lithe */

int main(void) {
#ifdef TLS_DEBUG_BUILD
  printf("skipped: the Debug build's lock-rank checks take 773 bytes of TLS; the release build's 637 are the figure\n");
  return 77;
#endif
  void *l = dlopen(LITHE_PATH, RTLD_NOW | RTLD_LOCAL);
  CHECKF(l != NULL, "dlopen %s: %s", LITHE_PATH, dlerror());
  void *(*lm)(size_t) = (void *(*)(size_t))dlsym(l, "lithe_malloc");
  void (*lf)(void *) = (void (*)(void *))dlsym(l, "lithe_free");
  CHECKF(lm && lf, "lithe_malloc %p, lithe_free %p from dlsym", (void *)lm, (void *)lf);
  char *p = lm(100);
  CHECK(p != NULL);
  memset(p, 7, 100);
  lf(p);
  void *t = dlopen(TLS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  CHECKF(t != NULL, "after lithe, dlopen %s (%d bytes of initial-exec TLS): %s", TLS_LIB_PATH, TLS_LIB_BYTES,
         dlerror());
  char *(*get)(void) = (char *(*)(void))dlsym(t, "tls_lib_buffer");
  CHECKF(get && get(), "tls_lib_buffer from dlsym: %p", (void *)get);
  memset(get(), 1, TLS_LIB_BYTES);
  printf("dlopen liblithe.so, lithe_malloc/lithe_free, then a library with %d bytes of initial-exec TLS: OK\n",
         TLS_LIB_BYTES);
  return 0;
}
