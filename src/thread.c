/* SPDX-License-Identifier: MIT */
/* thread.c — a thread's heap over its life: made at the thread's first
 * allocations (after HEAPLESS_ALLOCS from the shared fallback heap), the
 * malloc slow path that fills its bins from its spans and takes new
 * spans, collection, thread exit and fork.  The spans' lists are heap.c's
 * and the bins bin.c's: this file calls both, neither calls it.
 *
 * Thread exit (a pthread key destructor): the bins go back to their
 * spans, empty spans back to the page heap, and spans with live blocks
 * are abandoned for other threads to adopt (heap.c).  The heap structure
 * itself returns to a pool for the next thread: a new thread's heap is a
 * pooled one with one span, made with no system call (seed 001), after
 * its first HEAPLESS_ALLOCS allocations, which come from the shared
 * fallback heap. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include "internal.h"

static heap_t *heap_pool; /* heaps of exited threads, for reuse (heaps_lock) */
static pthread_key_t heap_key;

/* After its heap is torn down a thread may still allocate, from a later
 * pthread key destructor.  A new heap then could outlive the destructor
 * rounds and leak; such late allocations use this shared heap, under a
 * lock, instead.  Nobody owns it, so all frees into it are remote. */
static heap_t fallback_heap = {.bins = &fallback_heap.bins_own, .current = {EMPTY_ROW(&lithe_empty_span)}};
pthread_mutex_t fallback_lock = LOCK_INIT; /* not static: debug.c ranks it */
static __thread bool tls_heap_gone __attribute__((tls_model("initial-exec")));

/* A thread's first HEAPLESS_ALLOCS small allocations come from the
 * fallback heap too, under its lock, and the thread makes its own heap at
 * the next one: a thread that allocates a little makes no heap at all
 * (no heap structure, span, key destructor or exit flush), and its first
 * malloc takes blocks from pages already in use instead of faulting in a
 * span and a heap structure of its own.  A fault costs 5-7k TSC ticks
 * here (touching fresh pages, 256 at a time), and a thread's first
 * malloc/free pair faulted 1.5 times (bench-startup --serial --threads
 * 64: 13.5k ticks a pair; tcmalloc, which hands a new thread blocks of
 * spans already carved, 7.2k).  Its frees are remote frees, into the
 * freeing thread's bin or the span's thread_free.  Not for the thread
 * that set lithe up (the program's main thread, as a rule: it makes its
 * heap at its first allocation, as before), nor while the leak report is
 * on (it tracks every allocation, in the thread's heap).  With the heap
 * profiler on, a heapless allocation counts its class size against the
 * thread's first sampling interval, and one that would end it makes the
 * heap instead, which continues that interval (prof_heapless): making a
 * heap for every thread at once cost profiled threads 15,000 ticks and
 * 1.55 faults for their first pair, against 208 and 0.02 heapless
 * (bench-startup --serial --threads 64, LITHE_PROF=1 against 0). */
#define HEAPLESS_ALLOCS 8
static __thread uint8_t heapless_used __attribute__((tls_model("initial-exec")));

/* ---- heap creation ----------------------------------------------------- */

/* set in the thread that ran process_init (init.c): that thread makes its
 * heap at its first allocation */
__thread bool lithe_tls_init_thread __attribute__((tls_model("initial-exec")));

/* The memory limit's reclaim (limit.c, limit_reclaim): what other
 * threads hold that no allocation of theirs needs: the spans of exited
 * threads whose blocks are all free, and every heap's cached empty spans
 * (taken from their slots, idle threads' too).  The blocks in other
 * threads' bins cannot be taken (their owner pops them without atomics):
 * a new pages_epoch makes each thread empty its bins into its spans at
 * its next slow path (heap_decay), and the spans that empties go straight
 * back while the pressure lasts. */
static void heaps_reclaim(void) {
  heaps_collect_abandoned();
  heaps_take_caches();
  atomic_fetch_add_explicit(&pages_epoch, 1, memory_order_relaxed);
}

void heap_key_init(void) {
  limit_reclaim = heaps_reclaim; /* (before the first allocation) */
  if (pthread_key_create(&heap_key, heap_thread_exit) != 0) lithe_fatal("pthread_key_create failed");
}

/* A thread whose first allocation comes in the last round of pthread key
 * destructors sets lithe's key too late for its destructor to run: its
 * heap stays live after the thread is gone.  Such a heap is found when a
 * thread needs a heap and the pool is empty: a live heap's thread keeps
 * its TLS slot pointing at it until heap_thread_exit has made it not live,
 * so a slot that holds something else (the dead thread's stack now serves
 * a new thread, whose TLS starts afresh) or is no longer mapped means its
 * thread has gone.  At most LOST_SCAN heaps are looked at per call (one
 * process_vm_readv each), round robin.  Caller holds heaps_lock. */
#define LOST_SCAN 16
/* A scan costs two system calls per heap looked at (getpid and
 * process_vm_readv), many times the rest of a thread's first malloc/free
 * pair (docs/lab/2026-11-29-threads.md), so a
 * scan that finds nothing makes the next ones wait: after k empty scans in
 * a row the next 2^k - 1 heap creations skip it (at most LOST_WAIT_MAX).
 * Threads that start together then pay for a handful of scans, not one
 * each; a scan that finds a lost heap resets the wait, so a program that
 * loses heaps one after another (regress_tsd_last_round) has each found
 * by the next thread.  A program that loses heaps at the worst rhythm
 * keeps at most about LOST_WAIT_MAX of them before a scan runs. */
#define LOST_WAIT_MAX 64
static heap_t *lost_cursor;
static unsigned lost_wait, lost_skip;
static void heap_abandon(heap_t *h);

static heap_t *heap_find_lost_scan(void) {
  heap_t *h = lost_cursor;
  for (unsigned i = 0; i < LOST_SCAN; i++, h = h->next_all) {
    if (!h && !(h = all_heaps)) return NULL;
    /* (the caller has no heap: a slot that is its own, reused, counts too) */
    if (!h->live || !h->tls_slot) continue;
    heap_t *in_slot;
    int r = os_peek(h->tls_slot, &in_slot, sizeof in_slot);
    if (r == 0 || (r == 1 && in_slot != h)) {
      lost_cursor = h->next_all;
      /* its bins were in the dead thread's TLS block, which is unmapped
       * now or another thread's: their blocks are lost (they stay `used`
       * in their spans, which stay abandoned) */
      heap_bins_detach(h);
      heap_abandon(h); /* its thread is gone: as its exit would have */
      return h;
    }
  }
  lost_cursor = h;
  return NULL;
}

static heap_t *heap_find_lost(void) {
  if (lost_skip) {
    lost_skip--;
    return NULL;
  }
  heap_t *h = heap_find_lost_scan();
  if (h) lost_wait = 0;
  else lost_skip = lost_wait = lost_wait < LOST_WAIT_MAX / 2 ? lost_wait * 2 + 1 : LOST_WAIT_MAX;
  return h;
}

static heap_t *heap_thread_init(void) {
  /* the caller ran lithe_process_init (alloc.c); its pthread_atfork call
   * may have allocated, and made this thread's heap */
  if (lithe_tls_heap != &lithe_empty_heap) return lithe_tls_heap;
  pthread_mutex_lock(&heaps_lock);
  heap_t *h = heap_pool;
  if (h) {
    heap_pool = h->next_pool;
    heaps_nlive++;
  } else if ((h = heap_find_lost()) != NULL) {
    /* still counted live: its dead thread's count passes to this one */
  } else if ((h = meta_alloc(sizeof(heap_t))) != NULL) {
    h->next_all = all_heaps;
    all_heaps = h;
    heaps_nlive++;
  }
  if (h) {
    heaps_ncreated++;
    for (unsigned c = 0; c < NCLASSES; c++) h->current[c] = &lithe_empty_span;
    memset(h->spans_made, 0, sizeof h->spans_made);
    h->flush_misses = h->flush_skip = 0;
    /* the bins in this thread's TLS block: empty (a thread without a
     * heap has nothing in them) */
    memset(&lithe_tls_bins, 0, sizeof lithe_tls_bins);
    h->bins = &lithe_tls_bins;
    h->bins->prof_left = prof_heap_start();
    memset(h->bin_cap, 0, sizeof h->bin_cap);
    h->bins_cap_bytes = 0;
    memset(h->bin_spilled, 0, sizeof h->bin_spilled);
    /* under the lock: a forked child and heap_find_lost trust these */
    h->live = true;
    h->tls_slot = &lithe_tls_heap;
    lithe_tls_heap = h;
  }
  pthread_mutex_unlock(&heaps_lock);
  if (!h) return NULL;
  pthread_setspecific(heap_key, h);
  return h;
}


/* Before heap h takes pages for a span of class keep (heap_span_new, its
 * cache missed): the classes it stopped using give their spans back, so
 * that the new span can take their pages.  A full bin holds blocks that
 * the program freed and did not take again (its frees spill past it); it
 * goes back to its spans, and its class's current span, if that leaves
 * it with no block in use, is released, where otherwise it stays current
 * until lithe_collect (regress_idle_classes;
 * docs/lab/2026-12-06-classes-left-spans-back.md).  Once per span taken
 * from the page heap: a look at each class's room, and for a full bin, a
 * pagemap lookup per block. */
static NOINLINE void heap_retire_idle(heap_t *h, unsigned keep) {
  heap_bins_t *t = h->bins;
  class_set_t full = 0;
  for (unsigned c = 1; c < NCLASSES; c++)
    if (t->bin[c] && t->bin_room[c] <= 0) full |= CLASS_BIT(c);
  full &= ~CLASS_BIT(keep);
  if (!full) return;
  heap_bins_restart(h, full);
  for (class_set_t m = full; m; m &= m - 1) {
    unsigned c = class_first(m);
    span_t *cur = h->current[c];
    if (cur == &lithe_empty_span) continue;
    lt_assert(!cur->full);
    span_collect_remote(cur);
    if (cur->used != 0) continue;
    cur->free_trigger = 0;
    h->current[c] = &lithe_empty_span; /* (set_current leaves the released span alone) */
    list_remove(&h->avail[c], cur);
    span_release(h, cur);
    set_current(h, c); /* the next available span, if any */
  }
}

/* While more than one thread heap is live, a flush before fresh pages
 * (heap_span_new, below) that found no span in the cache after it (a
 * miss) makes the next ones wait: after FLUSH_MISSES_FREE misses in a
 * row, the k-th miss beyond them makes the next 2^k - 1 new spans skip
 * the flush and the sum of the bins (k up to 6: 63), and a flush that
 * finds a span starts the count again.  Threads of random sizes gained
 * nothing by flushing at nearly every new span, and sent other heaps'
 * blocks out of reach; a lone thread flushes as before (its peak rose
 * with the wait).  Per heap: the misses are its cache's and the bins
 * flushed its own (a shared heap's callers hold its lock here).  Figures:
 * docs/lab/2026-11-29-threads.md. */
#define FLUSH_MISSES_FREE 4
static span_t *heap_span_new(heap_t *h, unsigned cls) {
  span_t *s = heap_adopt(h, cls); /* (none abandoned, or scoped: NULL at once) */
  if (s) return s;
  size_t bytes = class_span_bytes[cls];
  size_t first = h->spans_made[cls] ? bytes : class_first_span_bytes[cls];
  s = cache_take(h, cls, bytes, first);
  if (s) return s;
  /* Before fresh pages: the bins' blocks back to their spans, so memory
   * that another size freed is used again (emptied spans land in the
   * cache, looked at once more) rather than adding to the peak -- when
   * the bins hold BIN_FLUSH_BYTES or more: a flush costs a pagemap lookup
   * per block, and flushing whatever was there cost much and gained
   * nothing.  The flushed bins start again at their first capacity (they
   * grow back by what spills past them): a bin that kept its largest
   * capacity filled up again and was flushed again, a cache miss per cold
   * block (docs/lab/2026-12-06-flush-splices-bins.md). */
  size_t binned = 0;
  if (atomic_load_explicit(&heaps_nlive, memory_order_relaxed) <= 1) h->flush_skip = h->flush_misses = 0;
  if (h->flush_skip) h->flush_skip--;
  else
    for (unsigned c = 1; c < NCLASSES; c++) binned += (size_t)bins_held(h, h->bins->bin_room, c) * class_size[c];
  if (binned >= BIN_FLUSH_BYTES) {
    heap_bins_restart(h, CLASSES_ALL);
    if ((s = cache_take(h, cls, bytes, first))) {
      h->flush_misses = 0;
      return s;
    }
    if (h->flush_misses < FLUSH_MISSES_FREE + 6) h->flush_misses++;
    if (h->flush_misses > FLUSH_MISSES_FREE)
      h->flush_skip = (uint8_t)((1u << (h->flush_misses - FLUSH_MISSES_FREE)) - 1);
  }
  /* The cache held no span of this size (cache_take missed): its spans go
   * back to the page heap under the lock that takes the new one.  Spans
   * are of several sizes (sizeclass.c, span_fitted: 56-80 KiB up to 16
   * KiB blocks, a heap's first span smaller), and a cache full of one
   * size kept its spans from every other: regress_span_tail's 4096-byte
   * blocks after 5120-byte ones faulted in 169 pages, 4 spans of 80 KiB
   * among them, with the freed spans' pages waiting beside them. */
  heap_retire_idle(h, cls);
  span_t *unfit = cache_take_all(h);
  s = unfit ? pages_alloc_after(first >> PAGE_SHIFT, 0, unfit) : pages_alloc(first >> PAGE_SHIFT, 0);
  if (!s) return NULL;
  atomic_fetch_add_explicit(&spans_small_live, 1, memory_order_relaxed);
  if (h->spans_made[cls] < UINT8_MAX) h->spans_made[cls]++;
  atomic_store_explicit(&s->owner, h, memory_order_relaxed);
  span_init_small(s, cls);
  return s;
}


/* ---- malloc slow path -------------------------------------------------- */

/* The fallback heap's lock is waited for by spinning, then yielding, never
 * by sleeping in the kernel: threads that start together meet here at
 * their first malloc, and the first of them may hold the lock across the
 * page fault of a fresh span; a sleeping waiter's wake-up on a busy
 * machine cost far more than the fault.  512 pauses cover the fault
 * (docs/lab/2026-11-29-threads.md).  The Debug build takes the lock
 * plainly (its rank check wraps lock). */
#define FALLBACK_SPINS 512
static void fallback_enter(void) {
#if LITHE_DEBUG
  pthread_mutex_lock(&fallback_lock);
#else
  for (unsigned spins = 0; pthread_mutex_trylock(&fallback_lock) != 0; spins++) {
    if (spins < FALLBACK_SPINS) cpu_relax();
    else sched_yield();
  }
#endif
}

/* The fallback heap hands the blocks of one span to many threads, so its
 * blocks fill whole cache lines: the class of a request is raised to one
 * whose size is a multiple of CACHE_LINE (every block then starts a line,
 * as spans start on a page; this keeps any alignment memalign asked for).
 * Two threads' blocks in one line made every write of one miss in the
 * other's cache (bench-mallocbench churn --parallel: the threads'
 * first blocks, their accumulators, were neighbours in one class). */
static NOINLINE void *fallback_malloc(unsigned cls) {
  cls = size_class(align_up(class_size[cls], CACHE_LINE));
  lt_assert_cmp(class_size[cls] % CACHE_LINE, ==, 0u);
  fallback_enter();
  void *p = heap_malloc_class(&fallback_heap, cls);
  pthread_mutex_unlock(&fallback_lock);
  return p;
}

void *heap_malloc_class(heap_t *h, unsigned cls) {
  if (unlikely(h == &lithe_empty_heap)) {
    if (unlikely(tls_heap_gone)) return fallback_malloc(cls);
    if (heapless_used < HEAPLESS_ALLOCS && !lithe_tls_init_thread && prof_heapless(cls)) {
      heapless_used++;
      return fallback_malloc(cls);
    }
    if (!(h = heap_thread_init())) goto oom;
    /* the block that made the heap counts for the profiler too, by its
     * class size: it is sampled when the heapless ones used the interval
     * up (prof_heapless); the leak report tracks it (it used to miss a
     * thread's first block), by its class size */
    if (prof_due(h, class_size[cls])) return prof_sampled_malloc(class_size[cls], h);
  }
  if (h->bins->bin[cls]) return bin_pop(h, cls); /* memalign's way in */
  heap_decay(h);
  for (;;) {
    span_t *s = h->current[cls];
    if (s != &lithe_empty_span) {
      if (s->free) return bin_refill(h, s, cls);
      if (span_collect_remote(s) || span_extend(s)) return bin_refill(h, s, cls);
      if (!span_mark_full(s)) continue; /* remote frees came in: collect */
      list_remove(&h->avail[cls], s);
      mark_full_list(h, s);
      set_current(h, cls);
      if (h->current[cls] != &lithe_empty_span) continue;
    }
    heap_drain_remote(h);
    if (h->current[cls] != &lithe_empty_span) continue;
    s = heap_span_new(h, cls);
    if (!s) goto oom;
    if (h->scoped) s->bin_cls = 0; /* its blocks never enter a thread's bin */
    list_push_front(&h->avail[cls], s);
    set_current(h, cls);
  }
oom:
  errno = ENOMEM;
  return NULL;
}


/* ---- collection, thread exit ------------------------------------------- */

/* Empty the bins and return this heap's empty spans and span cache (with
 * force the current spans too, if empty, and of the others the pages past
 * their carve point: span_purge_uncarved).  Without the cache flush the
 * cached spans sit between free runs and keep them from coalescing into
 * runs the purge can take whole (docs/lab/2026-11-29-purging.md). */
static void heap_collect_one(heap_t *h, bool force) {
  heap_bins_flush(h);
  heap_drain_remote(h);
  for (unsigned c = 1; c < NCLASSES; c++) {
    span_t *cur = h->current[c];
    if (cur != &lithe_empty_span) cur->free_trigger = 0;
    h->current[c] = &lithe_empty_span; /* chosen again below */
    for (span_t *s = h->avail[c].first, *next; s; s = next) {
      next = s->next;
      span_collect_remote(s);
      if (s->used == 0 && (force || cur != s)) {
        list_remove(&h->avail[c], s);
        span_release(h, s);
      } else if (force) {
        lt_assert(atomic_load_explicit(&s->owner, memory_order_relaxed) == h);
        span_purge_uncarved(s);
      }
    }
    set_current(h, c);
  }
  cache_flush(h); /* empty spans kept for reuse: "now" is the time to let go */
}

/* lithe_collect: the calling thread's heap and the shared fallback heap,
 * which serves every thread's first allocations (HEAPLESS_ALLOCS), so
 * that lithe_collect(true) still gives back every empty span.  (Never
 * called with fallback_lock held: only lt_collect calls it.) */
void heap_collect(heap_t *h, bool force) {
  if (h != &lithe_empty_heap) heap_collect_one(h, force);
  pthread_mutex_lock(&fallback_lock);
  heap_collect_one(&fallback_heap, force);
  pthread_mutex_unlock(&fallback_lock);
}


static void heap_abandon(heap_t *h) {
  heap_bins_flush(h); /* 0. every block back in its span */
  heap_give_away(h);  /* 1-3 (heap.c) */
}


/* The key's value (arg) is not trusted: a program that sets a key it has
 * not created yet (pthread_setspecific(0, v) with its pthread_key_t still
 * 0, as api_lifecycle's first thread does) overwrites lithe's, and then
 * the destructor gets its block.  The exiting thread's own slot names its
 * heap. */
void heap_thread_exit(void *arg) {
  (void)arg;
  heap_t *h = lithe_tls_heap;
  if (h == &lithe_empty_heap) return;
  heap_abandon(h);
  pthread_mutex_lock(&heaps_lock);
  h->live = false;
  heap_bins_detach(h); /* (empty now) */
  h->next_pool = heap_pool;
  heap_pool = h;
  heaps_nlive--;
  pthread_mutex_unlock(&heaps_lock);
  /* only now: while h is live, its thread's slot names it (heap_find_lost) */
  lithe_tls_heap = &lithe_empty_heap;
  /* the flush left the rooms at the capacities: 0, so that a later free
   * by this thread goes to heap_bin_spill, which sends it to the span */
  memset(&lithe_tls_bins, 0, sizeof lithe_tls_bins);
  tls_heap_gone = true;
}


/* ---- fork -------------------------------------------------------------- */
/* Every lock, in the order the code nests them. */
extern pthread_mutex_t pagemap_lock, meta_lock;

/* First-class heaps' locks (userheap.c: its pool's, each heap's large
 * list's), taken last: nothing is locked while one is held.  A hook, set
 * by the first lithe_heap_new (this file must not call up); the one
 * prepare saw is the one parent and child call, so a hook set meanwhile
 * waits for the next fork. */
void (*heap_fork_hook)(int stage);
static void (*fork_hook_taken)(int stage);

void heap_fork_prepare(void) {
  pthread_mutex_lock(&fallback_lock);
  pthread_mutex_lock(&heaps_lock);
  pthread_mutex_lock(&abandoned_lock);
  pthread_mutex_lock(&pages_lock);
  pthread_mutex_lock(&pagemap_lock);
  pthread_mutex_lock(&meta_lock);
  fork_hook_taken = __atomic_load_n(&heap_fork_hook, __ATOMIC_ACQUIRE);
  if (fork_hook_taken) fork_hook_taken(0);
}

void heap_fork_parent(void) {
  if (fork_hook_taken) fork_hook_taken(1);
  pthread_mutex_unlock(&meta_lock);
  pthread_mutex_unlock(&pagemap_lock);
  pthread_mutex_unlock(&pages_lock);
  pthread_mutex_unlock(&abandoned_lock);
  pthread_mutex_unlock(&heaps_lock);
  pthread_mutex_unlock(&fallback_lock);
}

/* A remote free that was notifying h when the process forked will never
 * finish in the child: take back every full span that is not simply
 * waiting (TF_NOTIFY), and forget the notification stack. */
static void fork_child_reclaim(heap_t *h) {
  atomic_store_explicit(&h->remote_spans, NULL, memory_order_relaxed);
  for (span_t *s = h->full.first, *next; s; s = next) {
    next = s->next;
    uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
    if ((tf & TF_MASK) == TF_NOTIFY) continue;
    atomic_store_explicit(&s->thread_free, tf & ~(uintptr_t)TF_MASK, memory_order_relaxed);
    refile_from_full(h, s, false);
  }
}

/* A span still on orphan heap h's lists: its thread may have been in the
 * middle of moving it (giving it away at its exit, say) when the process
 * forked; a span that is no longer h's small span is left alone. */
static inline bool orphan_owns(heap_t *h, span_t *s) {
  return s->kind == SPAN_SMALL && atomic_load_explicit(&s->owner, memory_order_relaxed) == h;
}

/* In the child, h belongs to a thread that does not exist here: give its
 * spans away as that thread's exit would have (empty ones to the page
 * heap, the others abandoned, to be adopted), so their blocks, freed by
 * the child, are reused.  Nothing can be notifying h any more: the
 * notify states are cleared, not waited for.  The lists are walked
 * forwards only, each span checked: a list the thread was changing at the
 * fork is cut short or skips a span (which then stays unused), never
 * followed into a span that is not h's. */
static void fork_child_orphan(heap_t *h) {
  atomic_store_explicit(&h->remote_spans, NULL, memory_order_relaxed);
  /* the blocks in its bins back to their spans: its bins are in its
   * thread's TLS block, which the child has a copy of while the slot in
   * it still names h (a heap whose thread had gone without its exit,
   * heap_find_lost, has lost them).  Block by block, never spliced
   * (bins_over): the thread may have been stopped inside a refill, its
   * bin's room written and its span's list and counts not yet, so a room
   * below 0 proves nothing here (and the splice's assertions would fire
   * in the child of a Debug build) */
  if (heap_bins_reachable(h)) heap_bins_flush_over(h, CLASSES_ALL, 0);
  heap_bins_detach(h);
  for (span_t *s = h->full.first; s; s = s->next)
    if (orphan_owns(h, s))
      atomic_fetch_and_explicit(&s->thread_free, ~(uintptr_t)TF_MASK, memory_order_relaxed);
  for (unsigned c = 1; c < NCLASSES; c++) {
    for (span_t *s = h->avail[c].first, *next; s; s = next) {
      next = s->next;
      if (orphan_owns(h, s)) span_abandon(s);
    }
    h->avail[c].first = h->avail[c].last = NULL;
    h->current[c] = &lithe_empty_span;
  }
  for (span_t *s = h->full.first, *next; s; s = next) {
    next = s->next;
    if (orphan_owns(h, s)) span_abandon(s);
  }
  h->full.first = h->full.last = NULL;
  for (unsigned i = 0; i < HEAP_SPAN_CACHE; i++) {
    span_t *s = cache_grab(h, i);
    if (s && s->kind == SPAN_SMALL) span_to_pages(s);
  }
  h->live = false;
  h->next_pool = heap_pool;
  heap_pool = h;
  heaps_nlive--;
}

/* The child has only the forking thread: the other threads' heaps are
 * orphans, given away so that their memory (the child's copy of the
 * parent's live data) is reclaimed as the child frees it. */
void heap_fork_child(void) {
  pthread_mutex_init(&meta_lock, NULL);
  pthread_mutex_init(&pagemap_lock, NULL);
  lock_reinit(&pages_lock);
  lock_reinit(&abandoned_lock);
  lock_reinit(&heaps_lock);
  lock_reinit(&fallback_lock);
  if (fork_hook_taken) fork_hook_taken(2);
  pages_fork_child();
  heap_t *self = lithe_tls_heap;
  if (self != &lithe_empty_heap) fork_child_reclaim(self);
  fork_child_reclaim(&fallback_heap);
  for (heap_t *h = all_heaps; h; h = h->next_all)
    if (h->live && h != self) fork_child_orphan(h);
}
