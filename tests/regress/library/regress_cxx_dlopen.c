/* SPDX-License-Identifier: MIT */
/* regress_cxx_dlopen — operator new in a C++ plugin that a C program loads
 * with dlopen must throw std::bad_alloc when memory runs out.
 *
 * lithe defines operator new and reaches std::get_new_handler and
 * std::__throw_bad_alloc through weak references, so that C programs link
 * without libstdc++. In a C program those references are bound, to NULL,
 * when liblithe is loaded; a plugin loaded later brings libstdc++, but
 * before the fix a failing new in it still found NULL and died with
 * "lithe: fatal: operator new: out of memory and no C++ runtime". Now lithe
 * looks the functions up when it needs them (also in libraries dlopen'ed
 * with RTLD_LOCAL).
 *
 * This C program (no libstdc++) dlopens the plugin (RTLD_NOW | RTLD_LOCAL)
 * in a child and calls new char[2^50] in it: caught std::bad_alloc; the
 * nothrow form returns NULL. */
#include "testutil.h"

static void child(void *arg) {
  (void)arg;
  void *h = dlopen(PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen %s: %s\n", PLUGIN_PATH, dlerror());
    _exit(3);
  }
  int (*throws)(void) = (int (*)(void))dlsym(h, "plugin_new_throws");
  int (*nothrow)(void) = (int (*)(void))dlsym(h, "plugin_new_nothrow_null");
  if (!throws || !nothrow) _exit(4);
  int a = nothrow(), b = throws();
  printf("plugin: nothrow new gave NULL: %d; new threw std::bad_alloc: %d\n", a, b);
  fflush(stdout);
  _exit(a && b ? 0 : 5);
}

int main(void) {
  tu_require_lithe();
  CHECKF(dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv") == NULL,
         "libstdc++ is already loaded: this program must be plain C");
  tu_child r;
  CHECK(tu_run_fn(&r, child, NULL, 60) == 0);
  char how[64];
  tu_describe(&r, how, sizeof how);
  printf("child: %s\n%s", how, r.out);
  if (r.errlen) printf("child stderr: %s\n", r.err);
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "child %s", how);
  return 0;
}
