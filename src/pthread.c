/* SPDX-License-Identifier: MIT */
/* pthread.c — lithe's pthread_create, in the shared library only: where
 * the purge thread starts by default (LITHE_PURGE_THREAD=auto).  A program
 * that runs threads is multi-threaded already, so the purge thread takes
 * no single-thread fast path from it, and the program's own call is a
 * place where making a thread is safe -- never inside malloc or free
 * (purge.c).  Not in liblithe.a: a static link with libc.a has no dlopen
 * to find libc's own, and its pthread_create would clash; not in the
 * sanitizer builds, whose runtimes define pthread_create themselves. */
#define _GNU_SOURCE
#include <errno.h>
#include "internal.h"

#ifndef LITHE_SANITIZED
LITHE_API int pthread_create(pthread_t *restrict t, const pthread_attr_t *restrict attr, void *(*fn)(void *),
                             void *restrict arg) {
  purger_create_fn f = purger_libc_create();
  if (!f) return EAGAIN;
  int rc = f(t, attr, fn, arg);
  lithe_process_init(); /* (the options, if no allocation came first) */
  if (rc == 0 && lithe_opt.purge_thread == PURGE_THREAD_AUTO) purger_start(f);
  return rc;
}
#endif
