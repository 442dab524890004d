/* init.c — process-wide set-up, done once at the first allocation of any
 * thread (lithe may be called before main, from other libraries'
 * constructors, or from dlsym).  Nothing here allocates. */
#include "internal.h"

_Atomic int lithe_initialized;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

void heap_key_init(void) INTERNAL;

static void process_init(void) {
  options_init();
  sizeclass_init();
  pages_init();
  heap_key_init();
  uintptr_t key = 0;
  os_random(&key, sizeof key);
  lithe_free_key = key | 1; /* never 0: fresh memory must not look freed */
  atomic_store_explicit(&lithe_initialized, 1, memory_order_release);
}

void lithe_process_init(void) {
  if (likely(atomic_load_explicit(&lithe_initialized, memory_order_acquire))) return;
  pthread_once(&init_once, process_init);
}
