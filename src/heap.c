/* SPDX-License-Identifier: MIT */
/* heap.c — a thread heap's spans: per size class a list of spans with
 * room (`avail`, its first span is `current`, where malloc pops) and one
 * list of full spans, the cache of empty spans, remote-free notification,
 * the spans given away (abandoned) and taken back (adopted), and the free
 * slow paths.  Only the owning thread touches these lists.  The bins of
 * free blocks above them are bin.c's; a heap's life (made, collected,
 * thread exit, fork) and the malloc slow path are thread.c's.
 *
 * Remote frees to a full span: the owner would never look at it again, so
 * when the owner files a span as full it sets TF_NOTIFY in the span's
 * thread_free word.  The first remote free to find TF_NOTIFY switches it to
 * TF_NOTIFYING, pushes the span on the owner's `remote_spans` stack (a
 * lock-free push) and clears the state; the owner drains that stack in its
 * slow path and files those spans as available again.  An exiting owner
 * first turns every TF_NOTIFY off (waiting out any TF_NOTIFYING), so no
 * remote thread ever pushes onto a heap that has gone.
 *
 * Spans with live blocks of an exited thread are abandoned (owner = NULL)
 * on a global per-class list, and a thread that needs a span of that
 * class adopts them first.  A running heap gives spans away the same way
 * when remote frees leave it more than AVAIL_KEEP with room in a class
 * (refile_from_full). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include "internal.h"



span_t lithe_empty_span = {.kind = SPAN_SMALL};
/* The heap of a thread that has none: only ever read (the slow paths test
 * for it first).  Its initialiser holds pointers, so it is relocated at
 * load; in .data.rel.ro it shares the page the dynamic linker writes for
 * the GOT and turns read-only after, where in .data it took a page more
 * of every process's RssAnon (docs/lab/2026-12-06-lithe-own-pages.md) and a
 * stray write into it went unnoticed. */
heap_t lithe_empty_heap __attribute__((section(".data.rel.ro"))) = {
    .bins = &lithe_empty_heap.bins_own, .current = {EMPTY_ROW(&lithe_empty_span)}};
__thread heap_t *lithe_tls_heap __attribute__((tls_model("initial-exec"))) = &lithe_empty_heap;
/* The bins of this thread's heap (internal.h, heap_bins_t): all NULL and
 * every room 0 while the thread has no heap (before its first heap, and
 * after heap_thread_exit), so malloc's pop finds nothing and free's room
 * decrement goes below 0, both into the slow paths, which look at
 * lithe_tls_heap. */
__thread heap_bins_t lithe_tls_bins __attribute__((tls_model("initial-exec")));

/* A forked child's lock made anew as LOCK_INIT makes it (internal.h). */
void lock_reinit(pthread_mutex_t *m) {
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
#else
  pthread_mutex_init(m, NULL);
#endif
}

/* heaps_lock and abandoned_lock are held for a few hundred instructions
 * by threads that start or exit together: adaptive, as a waiter of the
 * default kind always slept (docs/lab/2026-11-29-threads.md). */
pthread_mutex_t heaps_lock = LOCK_INIT;
pthread_mutex_t abandoned_lock = LOCK_INIT;
heap_t *all_heaps;             /* every heap ever made (never freed)   */
/* heaps_nlive: changed under heaps_lock; atomic so that refile_from_full
 * can read it without the lock */
_Atomic size_t heaps_nlive;
size_t heaps_ncreated;
static span_list_t abandoned[NCLASSES];
static _Atomic size_t abandoned_count;
/* per class, so a heap that needs a span of a class with none abandoned
 * does not take abandoned_lock to find out (written under the lock) */
static _Atomic uint32_t abandoned_in[NCLASSES];

static void abandoned_push(span_t *s) {
  lt_assert_held(&abandoned_lock);
  list_push_back(&abandoned[s->cls], s);
  atomic_fetch_add_explicit(&abandoned_in[s->cls], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&abandoned_count, 1, memory_order_relaxed);
}

static void abandoned_remove(span_t *s) {
  lt_assert_held(&abandoned_lock);
  list_remove(&abandoned[s->cls], s);
  atomic_fetch_sub_explicit(&abandoned_in[s->cls], 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&abandoned_count, 1, memory_order_relaxed);
}

/* Wait for a remote free to finish notifying (a few instructions, unless
 * that thread was preempted: then give it the CPU). */
uintptr_t wait_notifying(span_t *s) {
  uintptr_t tf;
  for (unsigned spins = 0;
       (tf = atomic_load_explicit(&s->thread_free, memory_order_acquire)) & TF_NOTIFYING; spins++) {
    if (spins < 64) cpu_relax();
    else sched_yield();
  }
  return tf;
}

/* ---- spans in and out of a heap ---------------------------------------- */

_Atomic size_t spans_small_live; /* spans holding small objects */

/* An empty small span stops counting as one, on its way to the page heap. */
static void span_unlive(span_t *s) {
  lt_assert_cmp(s->used, ==, 0u);
  lt_assert_v(s->kind == SPAN_SMALL, s->kind);
  atomic_fetch_sub_explicit(&spans_small_live, 1, memory_order_relaxed);
}

/* An empty small span goes back to the page heap. */
void span_to_pages(span_t *s) {
  span_unlive(s);
  pages_free(s);
}

void span_release(heap_t *h, span_t *s) {
  lt_assert_cmp(s->used, ==, 0u);
  lt_assert(atomic_load_explicit(&s->owner, memory_order_relaxed) == h);
  /* near the memory limit (limit.c) empty spans go straight back */
  if (!atomic_load_explicit(&limit_pressure, memory_order_relaxed))
    for (unsigned i = 0; i < HEAP_SPAN_CACHE; i++)
      if (!atomic_load_explicit(&h->cache[i], memory_order_relaxed)) {
        /* only the owner fills a slot; others only empty one */
        atomic_store_explicit(&h->cache[i], s, memory_order_release);
        return;
      }
  span_to_pages(s);
}

/* The cache's slots are emptied by exchange, by the owner (cache_take,
 * cache_take_all) and by a thread under memory pressure (heaps_take_caches,
 * through cache_take_all), so each span leaves the cache once. */
span_t *cache_grab(heap_t *h, unsigned i) {
  if (!atomic_load_explicit(&h->cache[i], memory_order_relaxed)) return NULL;
  return atomic_exchange_explicit(&h->cache[i], NULL, memory_order_acquire);
}

/* Every cached span, off the cache and no longer counted as live, as a
 * list linked through `next` (a cached span is on no list) for the page
 * heap: lithe_collect's flush, a thread under memory pressure, and a heap
 * whose cache held no span of the size it needs (heap_span_new). */
span_t *cache_take_all(heap_t *h) {
  span_t *list = NULL;
  for (unsigned i = 0; i < HEAP_SPAN_CACHE; i++) {
    span_t *s = cache_grab(h, i);
    if (!s) continue;
    span_unlive(s);
    s->next = list;
    list = s;
  }
  return list;
}

void cache_flush(heap_t *h) {
  for (span_t *s = cache_take_all(h), *next; s; s = next) {
    next = s->next;
    pages_free(s);
  }
}

static inline void unmark_full_list(heap_t *h, span_t *s) {
  list_remove(&h->full, s);
  s->full = 0;
  s->free_trigger = 0;
}

/* A heap keeps at most AVAIL_KEEP spans of a class with room (its current
 * one among them); a span that comes back from the full list beyond that is
 * given away (abandoned, as at thread exit), and the next heap that needs
 * a span of the class adopts it before it takes fresh pages.  Without
 * this, blocks freed into a heap's spans served only that heap, while
 * other heaps took fresh spans of the same classes.  Only while another
 * thread heap is live (a lone thread would adopt its own spans back).  A
 * first-class heap keeps its spans (lithe_heap_destroy frees them whole).
 * Only remote frees give spans away (heap_drain_remote): a span the
 * owner's own frees bring back is kept, and released once empty; giving
 * those away too made a thread that frees what it allocated abandon
 * nearly every span (regress_owner_free_spans).  Figures:
 * docs/lab/2026-11-29-threads.md. */
#ifndef AVAIL_KEEP
#define AVAIL_KEEP 2
#endif
static bool avail_crowded(heap_t *h, unsigned cls) {
  unsigned n = 0;
  for (span_t *x = h->avail[cls].first; x; x = x->next)
    if (++n > AVAIL_KEEP) return true;
  return false;
}

void refile_from_full(heap_t *h, span_t *s, bool remote) {
  unmark_full_list(h, s);
  span_collect_remote(s);
  if (s->used == 0) {
    span_release(h, s);
    return;
  }
  if (remote && !h->scoped && atomic_load_explicit(&heaps_nlive, memory_order_relaxed) > 1 &&
      avail_crowded(h, s->cls)) {
    span_abandon(s);
    return;
  }
  list_push_back(&h->avail[s->cls], s);
  if (h->current[s->cls] == &lithe_empty_span) set_current(h, s->cls);
}

/* Full spans that remote threads freed into: make them available again. */
void heap_drain_remote(heap_t *h) {
  if (!atomic_load_explicit(&h->remote_spans, memory_order_relaxed)) return;
  span_t *s = atomic_exchange_explicit(&h->remote_spans, NULL, memory_order_acquire);
  while (s) {
    span_t *next = atomic_load_explicit(&s->remote_next, memory_order_relaxed);
    wait_notifying(s);
    refile_from_full(h, s, true);
    s = next;
  }
}

/* A cached empty span of one of these sizes, made a span of class cls. */
span_t *cache_take(heap_t *h, unsigned cls, size_t bytes, size_t first) {
  for (unsigned i = 0; i < HEAP_SPAN_CACHE; i++) {
    span_t *s = cache_grab(h, i);
    if (!s) continue;
    if (s->bytes == bytes || s->bytes == first) {
      span_init_small(s, cls);
      return s;
    }
    atomic_store_explicit(&h->cache[i], s, memory_order_release); /* not this size: back */
  }
  return NULL;
}

/* A span for class cls: adopt an abandoned one, else a cached empty one,
 * else fresh pages. */
/* Adopt an abandoned span of class cls with room: up to ADOPT_TRIES are
 * taken, the full ones filed on the heap's full list, all under one hold
 * of abandoned_lock, and not even that when the class has none (threads
 * that start where others exited queued on it).  Taking a batch of spans
 * at once instead adopted spans that the thread then emptied itself, and
 * sent them to the page heap and back (docs/lab/2026-11-29-threads.md). */
#define ADOPT_TRIES 4
span_t *heap_adopt(heap_t *h, unsigned cls) {
  if (h->scoped || !atomic_load_explicit(&abandoned_in[cls], memory_order_relaxed)) return NULL;
  span_t *got = NULL;
  pthread_mutex_lock(&abandoned_lock);
  for (int tries = 0; tries < ADOPT_TRIES; tries++) {
    span_t *s = abandoned[cls].first;
    if (!s) break;
    abandoned_remove(s);
    atomic_store_explicit(&s->owner, h, memory_order_release);
    span_collect_remote(s);
    if (s->free || s->bump < s->bump_end || !span_mark_full(s)) {
      span_collect_remote(s); /* (remote frees may have come in) */
      got = s;
      break;
    }
    mark_full_list(h, s);
  }
  pthread_mutex_unlock(&abandoned_lock);
  return got;
}


/* ---- free slow paths --------------------------------------------------- */

/* The owner freed into s and s is now empty, or s was filed as full. */
void heap_free_local_slow(heap_t *h, span_t *s) {
  unsigned cls = s->cls;
  lt_assert(atomic_load_explicit(&s->owner, memory_order_relaxed) == h);
  lt_assert_cmp(s->used, <=, s->capacity);
  if (s->full) {
    /* Take it back from the full list unless a remote free is already
     * notifying us about it (then heap_drain_remote will). */
    uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_acquire);
    do {
      if ((tf & TF_MASK) != TF_NOTIFY) return;
    } while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &tf, tf & ~(uintptr_t)TF_MASK,
                                                    memory_order_acq_rel, memory_order_acquire));
    refile_from_full(h, s, false);
    return;
  }
  if (s->used == 0 && h->current[cls] != s) {
    list_remove(&h->avail[cls], s);
    span_release(h, s);
  }
}

/* The CAS push of b (key set) onto s's thread_free, and the owner's
 * notification if s is on its full list. */
void span_free_remote(span_t *s, block_t *b) {
  uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
  uintptr_t state;
  for (;;) {
    /* b at the head of the list: freed just before, its key overwritten
     * (as the owner's free checks its bin's head) */
    if (unlikely(TF_PTR(tf) == b)) {
      lithe_report("free", b, "double free");
      return;
    }
    state = tf & TF_MASK;
    lt_assert_cmp(TF_COUNT(tf), <, s->capacity);
    lt_assert_v(state != TF_MASK, tf);
    block_set_next(b, TF_PTR(tf));
    uintptr_t nw = (uintptr_t)b | ((uintptr_t)(TF_COUNT(tf) + 1) << TF_COUNT_SHIFT) |
                   (state == TF_NOTIFY ? TF_NOTIFYING : state);
    /* acq_rel: a TF_NOTIFY seen here was set by the owner now in s->owner */
    if (atomic_compare_exchange_weak_explicit(&s->thread_free, &tf, nw, memory_order_acq_rel,
                                              memory_order_relaxed))
      break;
  }
  if (state == TF_NOTIFY) {
    heap_t *o = atomic_load_explicit(&s->owner, memory_order_acquire);
    span_t *head = atomic_load_explicit(&o->remote_spans, memory_order_relaxed);
    do {
      atomic_store_explicit(&s->remote_next, head, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&o->remote_spans, &head, s, memory_order_release,
                                                    memory_order_relaxed));
    atomic_fetch_and_explicit(&s->thread_free, ~(uintptr_t)TF_MASK, memory_order_release);
  }
}


/* Abandoned spans whose blocks have all been freed go back to the pages. */
void heaps_collect_abandoned(void) {
  if (!atomic_load_explicit(&abandoned_count, memory_order_relaxed)) return;
  pthread_mutex_lock(&abandoned_lock);
  for (unsigned c = 1; c < NCLASSES; c++)
    for (span_t *s = abandoned[c].first, *next; s; s = next) {
      next = s->next;
      span_collect_remote(s);
      if (s->used == 0) {
        abandoned_remove(s);
        span_to_pages(s);
      }
    }
  pthread_mutex_unlock(&abandoned_lock);
}

/* Near the memory limit (limit.c): the empty spans every thread's heap
 * keeps for reuse go back to the page heap, taken from their slots by
 * exchange, so an idle thread's cache is reclaimed without it.  (Its bins
 * cannot be: the owner pops them with plain loads and stores.) */
size_t heaps_take_caches(void) {
  span_t *taken = NULL;
  size_t bytes = 0;
  pthread_mutex_lock(&heaps_lock); /* all_heaps; heaps are never freed */
  for (heap_t *h = all_heaps; h; h = h->next_all)
    for (span_t *s = cache_take_all(h), *next; s; s = next) {
      next = s->next;
      s->next = taken;
      taken = s;
      bytes += s->bytes;
    }
  pthread_mutex_unlock(&heaps_lock);
  while (taken) {
    span_t *s = taken;
    taken = s->next;
    pages_free(s);
  }
  return bytes;
}

void span_abandon(span_t *s) {
  span_collect_remote(s);
  s->full = 0;
  s->free_trigger = 0;
  if (s->used == 0) { span_to_pages(s); return; }
  atomic_store_explicit(&s->owner, NULL, memory_order_release);
  pthread_mutex_lock(&abandoned_lock);
  abandoned_push(s);
  pthread_mutex_unlock(&abandoned_lock);
}

/* No remote free will push onto h from now on, and every push made has
 * been taken: before h's spans are given away or discarded. */
static void heap_quiesce(heap_t *h) {
  /* 1. no more notifications: TF_NOTIFY off, wait out TF_NOTIFYING */
  for (span_t *s = h->full.first; s; s = s->next) {
    uintptr_t tf = wait_notifying(s);
    for (;;) {
      if (tf & TF_NOTIFYING) { tf = wait_notifying(s); continue; }
      if ((tf & TF_MASK) != TF_NOTIFY) break;
      if (atomic_compare_exchange_weak_explicit(&s->thread_free, &tf, tf & ~(uintptr_t)TF_MASK,
                                                memory_order_acq_rel, memory_order_acquire))
        break;
    }
  }
  /* 2. every notification made has been pushed: take them */
  heap_drain_remote(h);
}

/* Every span of h to fn (class lists, then full spans), the cache back to
 * the page heap: a heap left with nothing. */
static void heap_spans_each(heap_t *h, void (*fn)(span_t *s, void *arg), void *arg) {
  for (unsigned c = 1; c < NCLASSES; c++) {
    for (span_t *s = h->avail[c].first, *next; s; s = next) {
      next = s->next;
      fn(s, arg);
    }
    h->avail[c].first = h->avail[c].last = NULL;
    h->current[c] = &lithe_empty_span;
  }
  for (span_t *s = h->full.first, *next; s; s = next) {
    next = s->next;
    fn(s, arg);
  }
  h->full.first = h->full.last = NULL;
  cache_flush(h);
}

/* heap_give_away's step 3, under abandoned_lock: held once for the whole
 * heap, where span_abandon took it once per span, ~90 times per exiting
 * thread of thread_churn while the threads of the next wave took it to
 * adopt (heap_adopt).  Holding it throughout also means a fork never sees
 * a span half given away. */
static void span_abandon_locked(span_t *s, void *arg) {
  (void)arg;
  lt_assert_held(&abandoned_lock);
  span_collect_remote(s);
  s->full = 0;
  s->free_trigger = 0;
  if (s->used == 0) { span_to_pages(s); return; }
  atomic_store_explicit(&s->owner, NULL, memory_order_release);
  abandoned_push(s);
}


/* Thread exit's give-away (thread.c, heap_abandon), h's bins already
 * emptied into its spans: 1, 2. no remote free pushes onto h any more;
 * 3. every span given away. */
void heap_give_away(heap_t *h) {
  heap_quiesce(h); /* 1, 2 */
  pthread_mutex_lock(&abandoned_lock);
  heap_spans_each(h, span_abandon_locked, NULL); /* 3 */
  pthread_mutex_unlock(&abandoned_lock);
}

/* lithe_heap_destroy: every span of h back to the page heap at once, live
 * blocks and all (time proportional to the spans, not the blocks).  Its
 * bins' blocks and the remote frees already made go with their spans. */
static void span_discard(span_t *s, void *arg) {
  (void)arg;
  span_collect_remote(s);
  s->full = 0;
  s->free_trigger = 0;
  s->free = NULL;
  s->nfree = 0;
  s->used = 0;
  lt_vg_discard(s); /* valgrind build: its live blocks marked freed */
  span_to_pages(s);
}

void heap_discard_all(heap_t *h) {
  heap_quiesce(h);
  memset(h->bins->bin, 0, sizeof h->bins->bin);
  heap_spans_each(h, span_discard, NULL);
}


void heaps_stats(size_t *live, size_t *created, size_t *small_spans, size_t *nabandoned) {
  pthread_mutex_lock(&heaps_lock);
  *live = atomic_load_explicit(&heaps_nlive, memory_order_relaxed);
  *created = heaps_ncreated;
  pthread_mutex_unlock(&heaps_lock);
  *nabandoned = atomic_load(&abandoned_count);
  *small_spans = atomic_load(&spans_small_live);
}

#if LITHE_DEBUG
/* Debug: one span of heap h is consistent (debug.c's lithe_verify). */
static void span_verify(heap_t *h, span_t *s, unsigned cls) {
  lt_assert(atomic_load_explicit(&s->owner, memory_order_relaxed) == h);
  lt_assert_v(s->kind == SPAN_SMALL, s->kind);
  lt_assert_cmp((unsigned)s->cls, ==, cls);
  lt_assert_cmp(s->used, <=, s->capacity);
  lt_assert(pagemap_lookup(s->start) == s && pagemap_lookup(s->start + s->bytes - PAGE_SIZE) == s);
  uint32_t nfree = 0;
  for (block_t *b = s->free; b; b = block_next(b)) {
    lt_assert_block(s, b);
    lt_assert_cmp(block_key(b), ==, span_free_key(s));
    lt_assert_cmp(++nfree, <=, s->capacity);
  }
  /* every carved block is out (used, remote frees included) or free */
  size_t carved = (size_t)(span_bump(s) - s->start) / s->block_size;
  lt_assert_cmp((size_t)s->used + nfree, ==, carved);
}

void heap_verify(heap_t *h) {
  if (h == &lithe_empty_heap) return;
  for (unsigned c = 1; c < NCLASSES; c++) {
    lt_assert(h->current[c] == &lithe_empty_span || h->current[c] == h->avail[c].first);
    for (span_t *s = h->avail[c].first; s; s = s->next) {
      lt_assert(!s->full);
      span_verify(h, s, c);
    }
  }
  for (span_t *s = h->full.first; s; s = s->next) {
    lt_assert(s->full);
    span_verify(h, s, s->cls);
  }
  for (unsigned i = 0; i < HEAP_SPAN_CACHE; i++) {
    span_t *s = atomic_load_explicit(&h->cache[i], memory_order_relaxed);
    lt_assert(!s || s->used == 0);
  }
}
#endif
