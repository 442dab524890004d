/* SPDX-License-Identifier: MIT */
/* purge.c — the purge thread: purges free pages and cached xlarge
 * mappings on time, through the page heap's purge pass (pages.c,
 * purge_runs), while the program is quiet.
 *
 * Free pages and cached xlarge mappings wait LITHE_PURGE_DELAY_MS, then go
 * back to the OS.  Calls into lithe (pages_free, the large paths) purge
 * what has waited long enough; without the thread, a program that frees
 * its memory and then goes quiet keeps what it freed in its last delay
 * until its next call.
 *
 * Invariant: no thread is created, joined or waited for on any path
 * reachable from an allocation or free call.  glibc calls free() while it
 * holds its stack-cache lock (pthread_join -> __nptl_free_stacks ->
 * _dl_deallocate_tls -> free), and pthread_create and pthread_join take
 * that lock: a thread started or joined from inside free() can wait on
 * its own caller (regress_purge_join_hang).  So the thread starts where
 * the program itself may make one (override.c): at its first
 * pthread_create (LITHE_PURGE_THREAD=auto, the default: a threaded
 * program loses no single-thread fast path by it) or in lithe's
 * constructor (=1); a single-threaded program stays single-threaded
 * (libc's and libstdc++'s single-thread fast paths, unshare(CLONE_NEWUSER)).
 * It lives as long as the process, parks on purge_cond while nothing
 * waits, and is never joined; allocation calls only signal it, under
 * pages_lock.  It never allocates, blocks every signal and runs on a
 * stack of lithe's.  The child of fork has none until its own first
 * pthread_create. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <time.h>
#include "internal.h"

#define PURGER_STACK ((size_t)64 * KiB)

static void *purger_main(void *arg) {
  (void)arg;
  bool meta_done = true;
  pthread_mutex_lock(&pages_lock);
  for (;;) {
    if (purge_due_ms == UINT64_MAX) {
      if (!meta_done) {
        /* nothing waits: the span descriptors the purged runs' merges
         * freed go back too (meta.c), once after each purge */
        meta_done = true;
        pthread_mutex_unlock(&pages_lock);
        meta_collect();
        pthread_mutex_lock(&pages_lock);
        continue; /* (memory freed meanwhile is purged first) */
      }
      pthread_cond_wait(&purge_cond, &pages_lock);
      continue;
    }
    uint64_t now = os_now_ms(), lead = purge_lead_ms();
    if (now + lead < purge_due_ms) {
      /* os_now_ms is the coarse clock, up to a tick (4 ms at HZ 250)
       * behind CLOCK_MONOTONIC: woken sooner, the thread would find the
       * memory not yet due and wait again at once until it is */
      uint64_t at = purge_due_ms - lead + 5;
      struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000};
      purger_lead_ms = lead;
      pthread_cond_timedwait(&purge_cond, &pages_lock, &ts);
      continue;
    }
    purge_runs(now, now + lead, false, SIZE_MAX); /* (sets purge_due_ms from what stays) */
    meta_done = false;
  }
  return NULL;
}

/* Start the purge thread, never from an allocation call (see above):
 * LITHE_PURGE_THREAD=1 from lithe's constructor, =auto (the default) from
 * the program's first pthread_create (override.c), with `create`, the
 * pthread_create that call reached.  Only with a delay above 0 (0 purges
 * at once, -1 never), never in the valgrind build (glibc's malloc'ed TLS
 * vector of a live thread reads as possibly lost), once per process (a
 * forked child may start its own).  If it cannot start, the calls purge
 * as without it. */
void purger_start(purger_create_fn create) {
  if (lithe_opt.purge_delay_ms <= 0 || LITHE_VALGRIND || atomic_load(&purger_running)) return;
  pthread_mutex_lock(&pages_lock);
  bool mine = !purger_running;
  if (mine) {
    purger_init();
    purger_running = true; /* (before it runs: frees from now on signal it) */
  }
  pthread_mutex_unlock(&pages_lock);
  if (!mine) return;
  size_t guard = os_page_size();
  char *r = os_reserve(guard + PURGER_STACK, 0, 0);
  int rc = r && os_commit(r + guard, PURGER_STACK) ? 0 : ENOMEM;
  if (rc == 0) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, r + guard, PURGER_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread starts with all blocked */
    pthread_t tid;
    int saved = errno;
    rc = create(&tid, &attr, purger_main, NULL);
    errno = saved;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
  }
  if (rc != 0) {
    pthread_mutex_lock(&pages_lock);
    purger_running = false;
    pthread_mutex_unlock(&pages_lock);
    if (r) os_release(r, guard + PURGER_STACK);
  }
}
