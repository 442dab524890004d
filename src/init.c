/* SPDX-License-Identifier: MIT */
/* init.c — process-wide set-up, done once at the first allocation of any
 * thread (lithe may be called before main, from other libraries'
 * constructors, or from dlsym), or when the library is loaded, whichever
 * comes first.  Nothing here allocates. */
#include "internal.h"

_Atomic int lithe_initialized;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;


static void process_init(void) {
  lithe_tls_init_thread = true;
  /* valgrind build: byte counts out of the leak search (debug.h); under
   * valgrind, whose mappings start low, the reserved bytes once equalled an
   * address inside the first large block and made its leak "possibly lost" */
  lt_vg_hide(&os_stats, sizeof os_stats);
  options_init();
  prof_init();
  limit_init();
  sizeclass_init();
  pages_init();
  heap_key_init();
  large_init(); /* (after the heap's key: lithe's first key stays key 0) */
  options_report(); /* (LITHE_VERBOSE: after every layer has read its own) */
#if LITHE_SECURE
  os_random(&lithe_link.secret, sizeof lithe_link.secret); /* before any block is linked */
  span_secure_init(); /* the carve's window orders, from the secret */
#endif
  atomic_store_explicit(&lithe_initialized, 1, memory_order_release);
}

/* The fork handlers are registered as early as lithe can: prepare handlers
 * run in the reverse order of registration, and lithe's holds every lithe
 * lock until the fork is done, so it must run after every other library's
 * prepare handler (which may allocate); its child handler, which makes
 * the locks usable again, must run before theirs.  Registered after
 * process_init: pthread_atfork may allocate. */
static _Atomic int atfork_registered;

void lithe_process_init(void) {
  if (likely(atomic_load_explicit(&lithe_initialized, memory_order_acquire))) return;
  pthread_once(&init_once, process_init);
  if (!atomic_exchange(&atfork_registered, 1))
    pthread_atfork(heap_fork_prepare, heap_fork_parent, heap_fork_child);
}

/* At load time (before main, and before the constructors of the program
 * and of libraries loaded after lithe), unless an allocation came first. */
__attribute__((constructor)) static void lithe_load(void) {
  lithe_process_init();
  prof_warm_up(); /* (libgcc_s and the unwinder's tables before main) */
}
