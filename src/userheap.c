/* SPDX-License-Identifier: MIT */
/* userheap.c — first-class heaps (lithe_heap_t): allocate the objects of
 * one request, one parse, one frame from a heap, then give them all back at
 * once with lithe_heap_destroy, in time proportional to the heap's spans,
 * not its blocks.
 *
 * A lithe_heap_t holds a heap_t like a thread's: its own spans per size
 * class, carved and refilled by heap.c's slow paths, owned by the heap
 * (span->owner), so free() from any thread works as for any other heap's
 * block (it is a remote free: the heap collects it when it next runs out).
 * It never adopts spans abandoned by exited threads (heap_t.scoped): those
 * hold other code's live blocks, which destroy would free.  Its large and
 * xlarge objects are on a list of their own (span->owner set, which is NULL
 * for every other large object), which free() updates (large.c).
 *
 * Rule: one thread at a time allocates from a heap (the calls take no
 * lock); a Debug build (LITHE_DEBUG) reports two at once.  Destroy frees
 * every block; a block of a destroyed heap must not be used or freed (a
 * free() is then reported as a double free, or its pages may already be
 * another object's).  Destroyed heaps go to a pool for lithe_heap_new. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include "internal.h"
#include "debug.h"

#define UHEAP_LIVE 0x6c69746865686561ull /* "litheheap" */
#define UHEAP_DEAD 0x646561646865617full

struct lithe_heap_s {
  _Atomic uint64_t magic;     /* UHEAP_LIVE, or UHEAP_DEAD once destroyed    */
  _Atomic uintptr_t user;     /* Debug: the thread inside a call, or 0      */
  pthread_mutex_t large_lock; /* guards large (free() comes from any thread) */
  span_list_t large;          /* its large and xlarge objects               */
  struct lithe_heap_s *next_pool;
  struct lithe_heap_s *next_all; /* every heap made, for fork (under pool_lock) */
  heap_t h;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static lithe_heap_t *pool;
static lithe_heap_t *user_heaps_all; /* never freed: destroyed ones are pooled */

static inline lithe_heap_t *of_heap(heap_t *h) {
  return (lithe_heap_t *)((char *)h - offsetof(lithe_heap_t, h));
}

static void userheap_large_forget(span_t *s);

/* A fork (heap.c's handlers, through heap_fork_hook, after every lock of
 * theirs): stage 0 takes the pool lock, then every heap's large lock, so
 * that no list is half changed in the child; 1 gives them back in the
 * parent; 2 makes them anew in the child.  The large locks are many: they
 * bypass the Debug build's lock tracking (the parenthesised names), which
 * holds 16.  Nothing takes another lock while holding one of these. */
static void userheap_fork(int stage) {
  if (stage == 0) pthread_mutex_lock(&pool_lock);
  for (lithe_heap_t *u = user_heaps_all; u; u = u->next_all) {
    if (stage == 0) (pthread_mutex_lock)(&u->large_lock);
    else if (stage == 1) (pthread_mutex_unlock)(&u->large_lock);
    else (pthread_mutex_init)(&u->large_lock, NULL);
  }
  if (stage == 1) pthread_mutex_unlock(&pool_lock);
  else if (stage == 2) pthread_mutex_init(&pool_lock, NULL);
}

LITHE_API lithe_heap_t *lithe_heap_new(void) {
  lithe_process_init();
  large_owner_forget = userheap_large_forget; /* (before its first large object) */
  if (!__atomic_load_n(&heap_fork_hook, __ATOMIC_RELAXED))
    __atomic_store_n(&heap_fork_hook, userheap_fork, __ATOMIC_RELEASE);
  pthread_mutex_lock(&pool_lock);
  lithe_heap_t *u = pool;
  if (u) pool = u->next_pool;
  pthread_mutex_unlock(&pool_lock);
  if (!u) {
    if (!(u = meta_alloc(sizeof *u))) {
      errno = ENOMEM;
      return NULL;
    }
    /* its lock made once: a fork may take it as soon as u is listed */
    pthread_mutex_init(&u->large_lock, NULL);
    pthread_mutex_lock(&pool_lock);
    u->next_all = user_heaps_all;
    user_heaps_all = u;
    pthread_mutex_unlock(&pool_lock);
  }
  memset(&u->h, 0, sizeof u->h);
  u->h.bins = &u->h.bins_own; /* its bins are its own, in no thread's TLS */
  for (unsigned c = 0; c < NCLASSES; c++) u->h.current[c] = &lithe_empty_span;
  u->h.bins->prof_left = INTPTR_MAX; /* heap objects are not sampled by prof.c */
  u->h.scoped = true;
  u->h.live = true;
  u->large.first = u->large.last = NULL;
  atomic_store_explicit(&u->user, 0, memory_order_relaxed);
  atomic_store_explicit(&u->magic, UHEAP_LIVE, memory_order_release);
  return u;
}

/* Every call starts here: a live heap, used by one thread at a time. */
static heap_t *enter(lithe_heap_t *u, const char *op) {
  if (unlikely(!u || atomic_load_explicit(&u->magic, memory_order_acquire) != UHEAP_LIVE)) {
    lithe_report(op, u, u && atomic_load(&u->magic) == UHEAP_DEAD ? "heap already destroyed"
                                                                  : "not a lithe heap");
    errno = EINVAL; /* LITHE_ON_ERROR=ignore: the call returns NULL */
    return NULL;
  }
#if LITHE_DEBUG
  uintptr_t self = (uintptr_t)pthread_self(), none = 0;
  if (!atomic_compare_exchange_strong_explicit(&u->user, &none, self, memory_order_acquire,
                                               memory_order_relaxed) &&
      none != self) {
    lithe_report(op, u, "heap used by two threads at once (one thread at a time may allocate)");
    return NULL;
  }
#endif
  return &u->h;
}

static inline void leave(lithe_heap_t *u) {
#if LITHE_DEBUG
  atomic_store_explicit(&u->user, 0, memory_order_release);
#else
  (void)u;
#endif
}

/* A large or xlarge object of u: on its list, owned by it. */
static void *large_of(lithe_heap_t *u, size_t n, size_t align, bool zero) {
  void *p = large_alloc_zero(n ? n : 1, align, zero);
  if (!p) return NULL;
  span_t *s = pagemap_lookup(p);
  lt_assert_v(s && s->start == p && (s->kind == SPAN_LARGE || s->kind == SPAN_XLARGE), (uintptr_t)p);
  pthread_mutex_lock(&u->large_lock);
  atomic_store_explicit(&s->owner, &u->h, memory_order_relaxed);
  list_push_back(&u->large, s);
  pthread_mutex_unlock(&u->large_lock);
  return lt_vg_malloced(p, zero);
}

/* free() of one of them (large.c, large_owner_forget) */
static void userheap_large_forget(span_t *s) {
  lithe_heap_t *u = of_heap(atomic_load_explicit(&s->owner, memory_order_relaxed));
  pthread_mutex_lock(&u->large_lock);
  list_remove(&u->large, s);
  atomic_store_explicit(&s->owner, NULL, memory_order_relaxed);
  pthread_mutex_unlock(&u->large_lock);
}

static inline void *small_of(heap_t *h, unsigned cls) {
  block_t *b = h->bins->bin[cls];
  if (likely(b != NULL)) { /* malloc_inline's pop, on this heap's bin */
    lt_assert_block(pagemap_lookup(b), b); /* a corrupted bin stops here (Debug) */
    h->bins->bin[cls] = block_pop_next(b);
    h->bins->bin_room[cls]++;
    block_clear(b);
    return lt_vg_malloced(b, false);
  }
  return lt_vg_malloced(heap_malloc_class(h, cls), false);
}

LITHE_API void *lithe_heap_malloc(lithe_heap_t *u, size_t n) {
  heap_t *h = enter(u, "lithe_heap_malloc");
  if (!h) return NULL;
  size_t m = lt_vg_pad(n); /* valgrind build: 16 bytes more (debug.h) */
  void *p = m <= SMALL_MAX ? small_of(h, size_class(m)) : large_of(u, m, 0, false);
  leave(u);
  return p;
}

LITHE_API void *lithe_heap_calloc(lithe_heap_t *u, size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  heap_t *h = enter(u, "lithe_heap_calloc");
  if (!h) return NULL;
  void *p;
  size_t m = lt_vg_pad(n);
  if (m <= SMALL_MAX) {
    p = small_of(h, size_class(m));
    if (p) memset(p, 0, n);
  } else {
    p = large_of(u, m, 0, true);
  }
  leave(u);
  return p;
}

LITHE_API void *lithe_heap_memalign(lithe_heap_t *u, size_t align, size_t n) {
  if (align == 0 || (align & (align - 1))) {
    errno = EINVAL;
    return NULL;
  }
  if (n > ALLOC_MAX || align > ALLOC_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  heap_t *h = enter(u, "lithe_heap_memalign");
  if (!h) return NULL;
  n = lt_vg_pad(n);
  void *p = NULL;
  if (align <= 16 && n <= SMALL_MAX) {
    p = small_of(h, size_class(n));
  } else {
    /* as aligned_alloc: a class whose size is a multiple of align has every
     * block aligned to it (up to a page); else a page run, aligned */
    size_t m = align_up(n ? n : 1, align);
    unsigned c = NCLASSES;
    if (align <= PAGE_SIZE && m <= SMALL_MAX)
      for (c = size_class(m); c < NCLASSES && class_size[c] % align; c++) {}
    p = c < NCLASSES ? small_of(h, c) : large_of(u, n, align, false);
  }
  leave(u);
  return p;
}

LITHE_API void *lithe_heap_realloc(lithe_heap_t *u, void *p, size_t n) {
  if (!p) return lithe_heap_malloc(u, n);
  if (n == 0) {
    lt_free(p);
    return NULL;
  }
  size_t have;
  if (!lt_realloc_usable(p, "lithe_heap_realloc", &have)) return NULL; /* misuse: EINVAL */
  if (n <= have && n > have / 2) return p;
  void *q = lithe_heap_malloc(u, n);
  if (!q) return NULL;
  memcpy(q, p, n < have ? n : have);
  lt_free(p);
  return q;
}

LITHE_API void lithe_heap_destroy(lithe_heap_t *u) {
  if (!u || atomic_load_explicit(&u->magic, memory_order_acquire) != UHEAP_LIVE) {
    lithe_report("lithe_heap_destroy", u,
                 u && atomic_load(&u->magic) == UHEAP_DEAD ? "heap already destroyed" : "not a lithe heap");
    return;
  }
  lt_vg_quarantine_flush(); /* valgrind build: blocks freed, not yet given back */
  heap_t *h = enter(u, "lithe_heap_destroy");
  if (!h) return;
  atomic_store_explicit(&u->magic, UHEAP_DEAD, memory_order_release);
  heap_discard_all(h);
  /* its large objects: taken off the list first, since large_free would
   * otherwise come back here for each */
  pthread_mutex_lock(&u->large_lock);
  span_t *s = u->large.first;
  u->large.first = u->large.last = NULL;
  pthread_mutex_unlock(&u->large_lock);
  while (s) {
    span_t *next = s->next;
    s->next = s->prev = NULL;
    atomic_store_explicit(&s->owner, NULL, memory_order_relaxed);
    lt_vg_discard(s); /* valgrind build: marked freed */
    large_free(s);
    s = next;
  }
  h->live = false;
  leave(u);
  pthread_mutex_lock(&pool_lock);
  u->next_pool = pool;
  pool = u;
  pthread_mutex_unlock(&pool_lock);
}
