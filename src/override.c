/* SPDX-License-Identifier: MIT */
/* override.c — the symbols a program sees: the lithe_ API, the standard
 * malloc family (so LD_PRELOAD or -llithe replaces the system allocator),
 * and the C++ operators new/delete, defined from C under their mangled
 * names.  Each is a thin wrapper (a tail jump) over alloc.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include "internal.h"
#include "fastpath.h"

/* lithe_NAME and NAME are the same function. */
#define EXPORT(ret, name, params, args)                                   \
  LITHE_API ret lithe_##name params { return lt_##name args; }           \
  LITHE_API ret name params __attribute__((alias("lithe_" #name)));

/* malloc and free inline the fast path (fastpath.h): no extra jump. */
LITHE_API void *lithe_malloc(size_t n) { return malloc_api(n); }
LITHE_API void *malloc(size_t n) __attribute__((alias("lithe_malloc")));
EXPORT(void *, calloc, (size_t c, size_t n), (c, n))
EXPORT(void *, realloc, (void *p, size_t n), (p, n))
EXPORT(void *, reallocarray, (void *p, size_t c, size_t n), (p, c, n))
EXPORT(int, posix_memalign, (void **out, size_t a, size_t n), (out, a, n))
EXPORT(void *, aligned_alloc, (size_t a, size_t n), (a, n))
EXPORT(void *, memalign, (size_t a, size_t n), (a, n))
EXPORT(void *, valloc, (size_t n), (n))
EXPORT(void *, pvalloc, (size_t n), (n))
EXPORT(size_t, malloc_usable_size, (const void *p), (p))
EXPORT(int, malloc_trim, (size_t pad), (pad))
EXPORT(void, free_sized, (void *p, size_t n), (p, n))

LITHE_API void lithe_free(void *p) { free_api(p); }
LITHE_API void free(void *p) __attribute__((alias("lithe_free")));
LITHE_API void cfree(void *p) __attribute__((alias("lithe_free")));
LITHE_API void lithe_collect(bool force) { lt_collect(force); }

/* glibc's own entry points, which some programs and libraries call directly
 * (a block from __libc_malloc is then passed to free): the same functions,
 * as jemalloc, mimalloc and tcmalloc export them. */
LITHE_API void *__libc_malloc(size_t n) __attribute__((alias("lithe_malloc")));
LITHE_API void __libc_free(void *p) __attribute__((alias("lithe_free")));
LITHE_API void *__libc_calloc(size_t c, size_t n) __attribute__((alias("lithe_calloc")));
LITHE_API void *__libc_realloc(void *p, size_t n) __attribute__((alias("lithe_realloc")));
LITHE_API void *__libc_memalign(size_t a, size_t n) __attribute__((alias("lithe_memalign")));
LITHE_API void *__libc_valloc(size_t n) __attribute__((alias("lithe_valloc")));
LITHE_API void *__libc_pvalloc(size_t n) __attribute__((alias("lithe_pvalloc")));

/* ---- C++ --------------------------------------------------------------- */
/* libstdc++'s std::get_new_handler() and std::__throw_bad_alloc(), reached
 * as weak references so a C program links without libstdc++.  Those are
 * bound when lithe is loaded: NULL in a C program that dlopens a C++
 * library later.  Then they are looked up when a new fails: in the global
 * scope, and in libstdc++ itself (a library dlopen'ed with RTLD_LOCAL
 * brings it in its own scope).  dlsym and dlopen may allocate: this is
 * the out-of-memory path only, and no lithe lock is held. */
typedef void (*new_handler_t)(void);
extern new_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static void *cxx_runtime_symbol(const char *name) {
  void *f = dlsym(RTLD_DEFAULT, name);
  if (f) return f;
  void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD); /* only if loaded */
  if (!lib) return NULL;
  f = dlsym(lib, name);
  dlclose(lib);
  return f;
}

static new_handler_t current_new_handler(void) {
  static new_handler_t (*_Atomic get)(void);
  new_handler_t (*g)(void) = _ZSt15get_new_handlerv;
  if (!g) g = atomic_load_explicit(&get, memory_order_relaxed);
  if (!g) {
    g = (new_handler_t(*)(void))cxx_runtime_symbol("_ZSt15get_new_handlerv");
    if (!g) return NULL;
    atomic_store_explicit(&get, g, memory_order_relaxed);
  }
  return g();
}

static void throw_bad_alloc(void) {
  void (*t)(void) = _ZSt17__throw_bad_allocv;
  if (!t) t = (void (*)(void))cxx_runtime_symbol("_ZSt17__throw_bad_allocv");
  if (t) t();
}

/* operator new failed: call the new-handler and retry, as C++ requires;
 * with none, throw std::bad_alloc (or return NULL for the nothrow forms). */
static NOINLINE void *new_failed(size_t n, size_t align, bool nothrow) {
  for (;;) {
    new_handler_t h = current_new_handler();
    if (!h) {
      if (nothrow) return NULL;
      throw_bad_alloc();
      lithe_fatal("operator new: out of memory and no C++ runtime to throw std::bad_alloc");
    }
    h();
    void *p = align > 16 ? lt_aligned_alloc(align, n) : lt_malloc(n);
    if (p) return p;
  }
}

static inline void *cxx_new(size_t n) {
  void *p = lt_malloc(n);
  return likely(p != NULL) ? p : new_failed(n, 0, false);
}
static inline void *cxx_new_nothrow(size_t n) {
  void *p = lt_malloc(n);
  return likely(p != NULL) ? p : new_failed(n, 0, true);
}
static inline void *cxx_new_aligned(size_t n, size_t a, bool nothrow) {
  void *p = (a & (a - 1)) == 0 ? lt_aligned_alloc(a, n) : NULL;
  return likely(p != NULL) ? p : new_failed(n, a, nothrow);
}

typedef struct nothrow_s nothrow_t;
/* new / new[] */
LITHE_API void *_Znwm(size_t n) { return cxx_new(n); }
LITHE_API void *_Znam(size_t n) { return cxx_new(n); }
LITHE_API void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *t) { (void)t; return cxx_new_nothrow(n); }
LITHE_API void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *t) { (void)t; return cxx_new_nothrow(n); }
LITHE_API void *_ZnwmSt11align_val_t(size_t n, size_t a) { return cxx_new_aligned(n, a, false); }
LITHE_API void *_ZnamSt11align_val_t(size_t n, size_t a) { return cxx_new_aligned(n, a, false); }
LITHE_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *t) { (void)t; return cxx_new_aligned(n, a, true); }
LITHE_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *t) { (void)t; return cxx_new_aligned(n, a, true); }
/* delete / delete[]: plain, sized, aligned, nothrow */
LITHE_API void _ZdlPv(void *p) { lt_free(p); }
LITHE_API void _ZdaPv(void *p) { lt_free(p); }
LITHE_API void _ZdlPvm(void *p, size_t n) { lt_free_sized(p, n); }
LITHE_API void _ZdaPvm(void *p, size_t n) { lt_free_sized(p, n); }
LITHE_API void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *t) { (void)t; lt_free(p); }
LITHE_API void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *t) { (void)t; lt_free(p); }
LITHE_API void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; lt_free(p); }
LITHE_API void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; lt_free(p); }
LITHE_API void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)a; lt_free_sized(p, n); }
LITHE_API void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)a; lt_free_sized(p, n); }
LITHE_API void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *t) { (void)a; (void)t; lt_free(p); }
LITHE_API void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *t) { (void)a; (void)t; lt_free(p); }

LITHE_API int lithe_prof_dump(const char *path) {
  lithe_process_init();
  return prof_dump(path);
}

/* ---- where the purge thread starts --------------------------------------- */
/* Never inside an allocation call (purge.c).  LITHE_PURGE_THREAD=1 starts
 * it when the library loads (below); =auto (the default) at the program's
 * first pthread_create (pthread.c, in the shared library only). */
/* libc's own pthread_create, not the next definition (that may be
 * another lithe's); the sanitizer builds' runtimes define their own, which
 * the program's calls reach, so those builds use it. */
purger_create_fn purger_libc_create(void) {
#ifdef LITHE_SANITIZED
  return pthread_create;
#else
  static purger_create_fn _Atomic real;
  purger_create_fn f = atomic_load_explicit(&real, memory_order_relaxed);
  if (f) return f;
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc) {
    f = (purger_create_fn)dlsym(libc, "pthread_create");
    dlclose(libc);
  }
  if (!f) f = (purger_create_fn)dlsym(RTLD_NEXT, "pthread_create");
  atomic_store_explicit(&real, f, memory_order_relaxed);
  return f;
#endif
}

__attribute__((constructor)) static void purger_at_load(void) {
  lithe_process_init();
  purger_create_fn f = purger_libc_create();
  if (lithe_opt.purge_thread == PURGE_THREAD_ON && f) purger_start(f);
}
