/* heap.c — thread heaps: each thread's spans, the slow paths of malloc and
 * free, remote-free notification, and what happens when a thread exits.
 *
 * A heap keeps, per size class, a list of spans with room (`avail`, its
 * first span is `current`, where malloc pops) and one list of full spans.
 * Only the owning thread touches these lists.
 *
 * A free by a thread that does not own the block's span goes on the
 * freeing thread's bin while that has room (heap_free_remote), else onto
 * the span's thread_free list, which the owner collects.
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
 * Thread exit (a pthread key destructor): empty spans go back to the page
 * heap; spans with live blocks are abandoned (owner = NULL) on a global
 * per-class list, and a thread that needs a span of that class adopts them
 * first.  A running heap gives spans away the same way when remote frees
 * leave it more than AVAIL_KEEP with room in a class (refile_from_full).
 * The heap structure itself returns to a pool for the next thread: a new thread's
 * heap is a pooled one with one span, made with no system call (seed
 * 001), after its first HEAPLESS_ALLOCS allocations, which come from the
 * shared fallback heap. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include "internal.h"
#include "fastpath.h" /* span_push */

#define EMPTY_ROW(x) [0 ... NCLASSES - 1] = x

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
static heap_t *heap_pool;      /* heaps of exited threads, for reuse   */
static heap_t *all_heaps;      /* every heap ever made (never freed)   */
/* heaps_live: changed under heaps_lock; atomic so that refile_from_full
 * can read it without the lock */
static _Atomic size_t heaps_live;
static size_t heaps_created;
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
static pthread_key_t heap_key;

/* A heap's bins back in the heap itself, empty (a heap leaving its
 * thread: its TLS block goes with the thread).  Under heaps_lock (or in a forked child), so that
 * the scans of other heaps' bins (heaps_bin_has, heaps_binned) never read
 * a thread's TLS block after the thread has gone. */
static void heap_bins_detach(heap_t *h) {
  memset(&h->bins_own, 0, sizeof h->bins_own);
  h->bins_own.prof_left = h->bins->prof_left;
  h->bins = &h->bins_own;
}

/* Are h's bins where h->bins says, readable: its own, this thread's TLS
 * block, or the TLS block of a thread that has not gone (its slot there
 * still names h)?  A heap whose thread went without its exit (found by
 * heap_find_lost later) points at a TLS block that may be unmapped, or
 * another thread's.  A process where process_vm_readv is refused (-1):
 * yes, as every live heap's thread is there but such lost ones. */
static bool heap_bins_reachable(heap_t *h) {
  if (h->bins == &h->bins_own || h->bins == &lithe_tls_bins) return true;
  heap_t *in_slot;
  int r = os_peek(h->tls_slot, &in_slot, sizeof in_slot);
  return r < 0 || (r == 1 && in_slot == h);
}

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

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* Wait for a remote free to finish notifying (a few instructions, unless
 * that thread was preempted: then give it the CPU). */
static uintptr_t wait_notifying(span_t *s) {
  uintptr_t tf;
  for (unsigned spins = 0;
       (tf = atomic_load_explicit(&s->thread_free, memory_order_acquire)) & TF_NOTIFYING; spins++) {
    if (spins < 64) cpu_relax();
    else sched_yield();
  }
  return tf;
}

/* current = first available span; it alone skips the free slow path. */
static inline void set_current(heap_t *h, unsigned cls) {
  span_t *old = h->current[cls], *f = h->avail[cls].first;
  if (old != &lithe_empty_span && !old->full) old->free_trigger = 0;
  if (f) f->free_trigger = -1;
  h->current[cls] = f ? f : &lithe_empty_span;
}

/* A full span comes back to the available list only once the owner has
 * freed 1/FULL_REFILL_DIV of it: one block freed and taken again would
 * otherwise cost two CAS and two list moves per malloc/free.  Remote frees
 * still notify at once.  Measured (lithe-bench --runs 5, fragment,
 * fragment_parallel, fragment_iterate; time / peak geometric means against
 * moving back at the first free): 1/8: 1.29x faster, 1.09x bigger;
 * 1/16: 1.27x faster, 1.04x bigger; 1/32: 1.13x faster, 1.02x bigger. */
#ifndef FULL_REFILL_DIV
#define FULL_REFILL_DIV 16
#endif
static inline void mark_full_list(heap_t *h, span_t *s) {
  lt_assert(!s->full);
  lt_assert_cmp(s->used, <=, s->capacity);
  int32_t refill = (int32_t)(s->capacity / FULL_REFILL_DIV);
  s->full = 1;
  s->free_trigger = (int32_t)s->used - (refill > 0 ? refill : 1);
  list_push_front(&h->full, s);
}

static inline void unmark_full_list(heap_t *h, span_t *s) {
  list_remove(&h->full, s);
  s->full = 0;
  s->free_trigger = 0;
}

/* ---- bins ----------------------------------------------------------------
 * A heap's bin of a class is a LIFO list of free blocks from spans the heap
 * owns: the owner's free pushes there and malloc pops there (fastpath.h),
 * so a wave of frees followed by mallocs of one size touches no span.  A
 * block in a bin still counts as `used` by its span.  When malloc finds
 * the bin empty it takes the class's current span's whole free list (one
 * pointer move, bin_refill).  When the owner frees into a full bin the
 * block goes straight to its span (fastpath.h, span_push), where the
 * usual rules release empty spans and refile full ones: the free has the
 * span in hand, so that costs what a free cost before bins, and nothing
 * walks a bin on the way.  (The first design sent the older half of an
 * overflowing bin back block by block, a pagemap lookup each: 19 % of
 * tree_allocate's instructions.)  Capacity grows (x2, to BIN_MAX_BYTES)
 * when malloc finds the bin empty after a free found it full since the
 * last refill: the program frees and reuses more than it holds; and all
 * the bins of a heap together stay within BIN_HEAP_BYTES (bin_grow). */

static uint32_t bin_first_cap(unsigned cls) {
  uint32_t n = (uint32_t)(BIN_FIRST_BYTES / class_size[cls]);
  return n < BIN_MIN_BLOCKS ? BIN_MIN_BLOCKS : n;
}

static uint32_t bin_max_cap(unsigned cls) {
  uint32_t n = (uint32_t)(BIN_MAX_BYTES / class_size[cls]);
  if (n > BIN_MAX_BLOCKS) n = BIN_MAX_BLOCKS;
  uint32_t first = bin_first_cap(cls);
  return n < first ? first : n;
}

static void span_free_remote(span_t *s, block_t *b);

/* A free found no room in bin s->bin_cls of this thread's heap h (b's key
 * is set, the decrement of bin_room done).  free_inline pushes every block
 * on the freeing thread's bin, the owner's or another heap's (as
 * heap_free_remote does), with no owner test, so three kinds come here:
 *  - a thread with no heap (yet, or any more): h is the shared empty
 *    heap, and the room decremented was the thread's own in its TLS
 *    block, only ever 0 or below (set back to 0 here), so its bins stay
 *    empty; b goes to its span's thread_free;
 *  - a block of a first-class heap (bin_cls 0: bin 0 serves no size, its
 *    room stays 0 in every heap): to its span, which the heap collects;
 *  - a full bin: the decrement is undone and b goes to its span (its
 *    owner's: pushed there; another's: its thread_free); the next refill
 *    grows the bin.  A thread that only frees looks at the purge passes
 *    here (and the memory limit's pressure, which bumps the epoch), so
 *    its bins decay too. */
static NOINLINE void bin_spill_other(heap_t *h, span_t *s, block_t *b);
static NOINLINE void heap_bins_teardown(heap_t *h);
void heap_bin_spill(heap_t *h, span_t *s, block_t *b) {
  /* the owner's block into its full bin first: in a wave of frees longer
   * than the bin (tree_allocate's rounds, fragment's) most frees come
   * here.  Its span is s (in hand), and the owner being h proves h a
   * thread's heap (no span is the empty heap's).  Written out here, with
   * the epoch test of heap_decay: fewer instructions than through a
   * second function (docs/lab/2026-12-06-flush-splices-bins.md). */
  unsigned c = s->bin_cls;
  if (likely(c != 0 && atomic_load_explicit(&s->owner, memory_order_relaxed) == h)) {
    h->bins->bin_room[c]++; /* the decrement undone: the bin stays full */
    h->bin_spilled[s->cls]++;
    h->spill_left -= s->block_size; /* read before the push may free s */
    span_push(h, s, b);
    if (unlikely(h->spill_left < 0)) { /* a tear-down (internal.h) */
      heap_bins_teardown(h);
      return;
    }
    if (unlikely(atomic_load_explicit(&pages_epoch, memory_order_relaxed) != h->epoch)) heap_decay(h);
    return;
  }
  bin_spill_other(h, s, b);
}

static NOINLINE void bin_spill_other(heap_t *h, span_t *s, block_t *b) {
  unsigned c = s->bin_cls;
  if (unlikely(h == &lithe_empty_heap)) {
    lithe_tls_bins.bin_room[c] = 0; /* the thread's own: no race */
    span_free_remote(s, b);
    return;
  }
  h->bins->bin_room[c]++;
  if (unlikely(c == 0)) {
    lt_assert_cmp(h->bins->bin_room[0], ==, 0);
    span_free_remote(s, b);
    return;
  }
  /* another heap's block: to its span's thread_free.  It counts as one
   * spill, whatever their number (the bin then doubles, as it always
   * did): growing by them, a thread that frees what others allocated
   * grew its bins to take all their frees and held them from their
   * owners (docs/lab/2026-11-29-threads.md). */
  if (!h->bin_spilled[s->cls]) h->bin_spilled[s->cls] = 1;
  span_free_remote(s, b);
  heap_decay(h);
}

/* A free block's link, read ahead of the walk that gives the block back:
 * NULL where the hardened build finds it bad (the walk reports it). */
static inline block_t *peek_next(const block_t *b) {
  block_t *n = block_next(b);
#if LITHE_SECURE
  if (unlikely(link_bad(n))) return NULL;
#endif
  return n;
}

/* The lists heap_bins_flush gives back while one list is walked, a link
 * each in turn, one per block given back. */
#define FLUSH_AHEAD 8

/* Blocks of one span, next to each other in a list being given back:
 * pushed onto s's free list together (give_back_lists).  The first
 * block's link already holds s->free as it was, each later one's the
 * block before it (last); max blocks at most (the pushes up to the one
 * that reaches the span's free_trigger), left of them still to come. */
typedef struct {
  span_t *s;
  uintptr_t start, bytes; /* s's range, copied (bytes 0: no run, so no
                           * block is in range) */
  block_t *last;
  int32_t left, max;
} push_run_t;

/* The run's blocks onto its span at once: what as many span_push calls
 * leave, the last block the free list's head, and the slow path called
 * where the last push would have called it (a run ends at the first
 * push that reaches free_trigger, so no earlier push would have). */
static inline void push_run_close(heap_t *h, push_run_t *r) {
  if (!r->bytes) return;
  span_t *s = r->s;
  uint32_t k = (uint32_t)(r->max - r->left);
  r->bytes = 0;
  s->free = r->last;
  s->nfree += k;
  s->used -= k;
  if (unlikely((int32_t)s->used <= s->free_trigger)) heap_free_local_slow(h, s);
}

/* Block b of a list given back: onto the run when it lies in the run's
 * span and the run has room, else the run is closed and b starts the
 * next (its span looked up) or goes to another heap's span. */
static inline void give_back_block(heap_t *h, push_run_t *r, block_t *b) {
  if (likely((uintptr_t)b - r->start < r->bytes && r->left > 0)) {
    lt_assert_block(r->s, b);
    r->left--;
    block_set_next(b, r->last);
    r->last = b;
    return;
  }
  push_run_close(h, r);
  span_t *s = pagemap_lookup(b);
  if (unlikely(atomic_load_explicit(&s->owner, memory_order_relaxed) != h)) {
    span_free_remote(s, b);
    return;
  }
  int32_t max = (int32_t)s->used - s->free_trigger;
  if (max < 1) max = 1; /* at the trigger already: the slow path at once */
  *r = (push_run_t){.s = s, .start = (uintptr_t)s->start, .bytes = s->bytes, .last = b,
                    .left = max - 1, .max = max};
  block_set_next(b, s->free);
}

/* The n lists' blocks back to their spans, list after list and each in
 * its order: the heap's own onto the span's free list, other heaps'
 * (heap_free_remote put them there) onto its thread_free.  The blocks
 * were freed long ago, and each link read is a cache miss that a walk of
 * one list waits for block after block; so while list i is given back,
 * cursors read their way down the next FLUSH_AHEAD lists (independent
 * loads, in flight together with the walk's own), and the walk finds
 * their first blocks in the cache.  Only reads: the order the blocks
 * reach their spans, and with it which spans empty and when, is the
 * walk's alone.  Walking the lists side by side instead, a block of each
 * in turn (tried), changed that order and raised replay_python's peak
 * (docs/lab/2026-12-06-flush-splices-bins.md).  A cursor reads only lists
 * not given back yet, whose blocks are this heap's bin's alone, in spans
 * that hold them (so never emptied or purged meanwhile).
 *
 * A bin refilled from a span holds that span's blocks one after another,
 * so the walk pushes runs (push_run_t): a block in the range of the run's
 * span joins it with one link written, and only a block outside it pays
 * the pagemap lookup and the owner test.  The spans end in the state one
 * span_push per block left, list order and slow-path calls included.
 * Block by block cost several times the instructions on retention
 * (docs/lab/2026-12-06-flush-splices-bins.md). */
static void give_back_lists(heap_t *h, block_t **list, unsigned n) {
  block_t *ahead[NCLASSES];
  memcpy(ahead, list, n * sizeof *ahead);
  push_run_t r = {.bytes = 0};
  for (unsigned i = 0; i < n; i++) {
    block_t *b = list[i];
    if (i + 1 == n) {
      /* the last list has no list after it to read ahead: a loop of its
       * own, so that a flush of one bin, the most common, pays nothing per
       * block for the cursor */
      while (b) {
        block_t *next = block_pop_next(b); /* checked: the next is looked up */
        give_back_block(h, &r, b);
        b = next;
      }
      break;
    }
    unsigned lo = i + 1, hi = i + FLUSH_AHEAD < n - 1 ? i + FLUSH_AHEAD : n - 1, j = hi;
    while (b) {
      if (++j > hi) j = lo;
      if (ahead[j]) ahead[j] = peek_next(ahead[j]);
      block_t *next = block_pop_next(b);
      give_back_block(h, &r, b);
      b = next;
    }
  }
  push_run_close(h, &r);
}

/* A set of classes, one bit each (bit c: class c). */
typedef uint64_t class_set_t;
_Static_assert(NCLASSES <= 64, "a class_set_t holds a bit per class");
#define CLASSES_ALL ((((class_set_t)1 << (NCLASSES - 1)) - 1) << 1) /* 1 .. NCLASSES - 1 */
#define CLASS_BIT(c) ((class_set_t)1 << (c))
/* (a set's classes in order: for (m = set; m; m &= m - 1), c = ctz(m)) */
static inline unsigned class_first(class_set_t m) { return (unsigned)__builtin_ctzll(m); }

/* The blocks in heap h's bin of class c, from its rooms (another
 * thread's: a snapshot, read without ordering, as the span counts are). */
static int64_t bins_held(heap_t *h, const int32_t room[NCLASSES], unsigned c) {
  return (int64_t)__atomic_load_n(&h->bin_cap[c], __ATOMIC_RELAXED) - room[c];
}

/* The classes of set whose bins hold more blocks than their capacity
 * (room below 0).  Such a bin holds only what is left of its last
 * refill: a room falls below 0 only there (bin_refill took a span's whole
 * free list, more than the capacity) and in heap_bins_first_cap, which a
 * flush follows at once; a free into a bin with no room goes to the span
 * and gives the room back (heap_bin_spill), and pops only raise it.  So
 * from the refill until malloc has popped the excess, no block was pushed
 * there: the bin is the tail of that span's list, in its order.  Read
 * before heap_bins_first_cap lowers the rooms. */
static class_set_t bins_over(const heap_t *h, class_set_t set) {
  class_set_t over = 0;
  for (class_set_t m = set; m; m &= m - 1) {
    unsigned c = class_first(m);
    if (h->bins->bin[c] && h->bins->bin_room[c] < 0) over |= CLASS_BIT(c);
  }
  return over;
}

/* Bin list b of n blocks, all of span s (what is left of its last refill,
 * bins_over), back onto s whole: it becomes s's free list when that is
 * empty (one store, no block read), else it goes after it, found by
 * walking the free list (the caller sends only a bin longer than it:
 * frees spilled onto s since the refill, fewer and more recently touched
 * than the bin's blocks).  A walk of the bin would leave the same blocks
 * (its in the reverse order, before the span's) and call the slow path
 * at the same push: s was the current span at the refill and is not
 * filed as full (malloc reaches s only with the bin empty), so its
 * free_trigger is -1 (current: never) or 0 (empty: released at the last
 * push, as here).  A walk costs a link read and a cache miss a block,
 * and retention gave back millions that way. */
static void bin_splice_back(heap_t *h, span_t *s, block_t *b, uint32_t n) {
  lt_assert(atomic_load_explicit(&s->owner, memory_order_relaxed) == h);
  lt_assert(!s->full && (s->free == NULL) == (s->nfree == 0));
  lt_assert_cmp(s->free_trigger, <=, 0);
  lt_assert_cmp(n, <=, s->used);
  if (s->free) {
    block_t *t = s->free;
    for (uint32_t i = 1; i < s->nfree; i++) {
      block_t *x = block_pop_next(t); /* checked: a bad link ends the walk */
      if (!x) break;
      t = x;
    }
    lt_assert(block_next(t) == NULL);
    block_set_next(t, b);
  } else {
    s->free = b;
  }
  s->nfree += n;
  s->used -= n;
  if (unlikely((int32_t)s->used <= s->free_trigger)) heap_free_local_slow(h, s);
}

/* The bins of the classes in set back into their spans; those of over
 * (bins_over, read before any change to the rooms) spliced whole where
 * their span's free list is shorter than they are. */
static void heap_bins_flush_over(heap_t *h, class_set_t set, class_set_t over) {
  heap_bins_t *t = h->bins; /* once: give_back_lists leaves it */
  block_t *list[NCLASSES];
  unsigned n = 0;
  for (class_set_t m = set; m; m &= m - 1) {
    unsigned c = class_first(m);
    block_t *b = t->bin[c];
    if (!b) continue;
    uint32_t held = (uint32_t)bins_held(h, t->bin_room, c);
    t->bin[c] = NULL;
    t->bin_room[c] = (int32_t)h->bin_cap[c];
    if (over & CLASS_BIT(c)) {
      span_t *s = pagemap_lookup(b);
      if (s->nfree < held) {
        bin_splice_back(h, s, b, held);
        continue;
      }
    }
    list[n++] = b;
  }
  lt_assert_cmp(n, <, (unsigned)NCLASSES);
  give_back_lists(h, list, n);
}

static void heap_bins_flush_set(heap_t *h, class_set_t set) {
  heap_bins_flush_over(h, set, bins_over(h, set));
}

static void heap_bins_flush(heap_t *h) { heap_bins_flush_set(h, CLASSES_ALL); }

/* The bytes heap h's bins may hold at their capacities, counted anew:
 * the assertions' check of h->bins_cap_bytes, which bin_grow reads (this
 * loop in each grow made bin_grow 1.13M of bench-mtrandom --quick's 29.5M
 * instructions in a build of 60 classes, 0.64M with the sum kept; with
 * the 44 classes, 0.60M at 40 classes before -> 0.53M). */
static __attribute__((unused)) size_t bins_cap_bytes(const heap_t *h) {
  size_t sum = 0;
  for (unsigned c = 1; c < NCLASSES; c++) sum += (size_t)h->bin_cap[c] * class_size[c];
  return sum;
}

/* Class c's capacity becomes cap, and the heap's sum with it. */
static void bin_cap_set(heap_t *h, unsigned c, uint32_t cap) {
  size_t per = class_size[c];
  h->bins_cap_bytes = h->bins_cap_bytes - per * h->bin_cap[c] + per * cap;
  h->bin_cap[c] = cap;
}

/* The bins of the classes in set back to their first capacity, then
 * emptied (an empty bin's room is its capacity).  bin_spilled stays: the
 * next refill grows a bin by the frees that spilled before this too
 * (kept, peaks were lower: docs/lab/2026-12-06-flush-splices-bins.md). */
static void heap_bins_restart(heap_t *h, class_set_t set) {
  class_set_t over = bins_over(h, set); /* before the rooms fall below */
  for (class_set_t m = set; m; m &= m - 1) {
    unsigned c = class_first(m);
    uint32_t cap0 = bin_first_cap(c);
    if (h->bin_cap[c] <= cap0) continue;
    h->bins->bin_room[c] -= (int32_t)(h->bin_cap[c] - cap0);
    bin_cap_set(h, c, cap0);
  }
  heap_bins_flush_over(h, set, over);
}

/* Frees pushed BIN_TEARDOWN_BYTES past full bins since the last refill
 * (heap_bin_spill): out of line, so that the spill stays a tail call
 * (with the call inline, GCC set up a frame on every spill).  The bins
 * emptied here count as heap_decay's flush for the purge passes run so
 * far, so the next spill does not empty them again for those. */
static NOINLINE void heap_bins_teardown(heap_t *h) {
  h->spill_left = (intptr_t)BIN_TEARDOWN_BYTES;
  h->epoch = atomic_load_explicit(&pages_epoch, memory_order_relaxed);
  heap_bins_restart(h, CLASSES_ALL);
}

/* Bins decay like free page runs: when the page heap has run a purge pass
 * since this heap last looked (every purge delay / 4 while pages move,
 * pages.c), the bins go back to the spans, so blocks a program freed and
 * stopped using reach the page heap and its purge.  Looked at in the
 * slow paths: bin refill, a free into a full bin, large malloc and free. */
void heap_decay(heap_t *h) {
  uint32_t e = atomic_load_explicit(&pages_epoch, memory_order_relaxed);
  if (likely(e == h->epoch)) return;
  h->epoch = e;
  heap_bins_flush(h);
}

static inline void *bin_pop(heap_t *h, unsigned cls) {
  block_t *b = h->bins->bin[cls];
  lt_assert_block(pagemap_lookup(b), b);
  h->bins->bin[cls] = block_pop_next(b);
  h->bins->bin_room[cls]++;
  block_clear(b); /* as malloc_inline: no free-list link left behind */
  return b;
}

/* What the bins may hold when every class is at its first capacity (the
 * bound on their sum is BIN_HEAP_BYTES and this: a first refill does not
 * look at the budget).  For the assertion in bin_grow. */
static __attribute__((unused)) size_t bins_first_bytes(void) {
  size_t sum = 0;
  for (unsigned c = 1; c < NCLASSES; c++) sum += (size_t)bin_first_cap(c) * class_size[c];
  return sum;
}

/* The capacity: set at the first refill; when malloc finds the bin empty
 * after frees found it full, grown by as many blocks as spilled past it
 * (at least doubled), up to bin_max_cap, so that a wave of frees that
 * overflowed it fits the next time.  Doubling alone took 8 rounds to grow
 * a flushed bin (heap_span_new: back to its first capacity) to a wave of
 * 65,535 frees, and tree_allocate (rounds of 65,535 nodes and as many
 * payloads) flushed every 4-5 rounds, so its bins never held a round:
 * 2,847,349 of its 3,145,680 frees a run spilled to the spans, which went
 * back to the page heap and were carved again (regress_bin_wave).
 * Measured in docs/lab/2026-12-02-rows-behind-mimalloc.md. */
static uint32_t bin_grow(heap_t *h, unsigned cls) {
  uint32_t old = h->bin_cap[cls], cap = old;
  if (!cap) {
    cap = bin_first_cap(cls);
  } else if (h->bin_spilled[cls]) {
    uint32_t max = bin_max_cap(cls);
    uint64_t want = (uint64_t)cap + h->bin_spilled[cls];
    if (want < (uint64_t)cap * 2) want = (uint64_t)cap * 2;
    cap = want < max ? (uint32_t)want : max;
    /* past BIN_HEAP_BYTES: the other classes' bins go back to their
     * spans, where the purge thread reaches what a pause leaves there.
     * The growing class keeps its own: bin_refill's span is its. */
    if (cap > old && h->bins_cap_bytes + (size_t)(cap - old) * class_size[cls] > BIN_HEAP_BYTES)
      heap_bins_restart(h, CLASSES_ALL & ~CLASS_BIT(cls));
  }
  h->bin_spilled[cls] = 0;
  h->spill_left = (intptr_t)BIN_TEARDOWN_BYTES; /* a refill: not a tear-down */
  bin_cap_set(h, cls, cap);
  lt_assert_cmp(h->bins_cap_bytes, ==, bins_cap_bytes(h));
  lt_assert_cmp(h->bins_cap_bytes, <=, BIN_HEAP_BYTES + bins_first_bytes());
  h->bins->bin_room[cls] += (int32_t)(cap - old);
  return cap;
}

/* Move s's whole free list to the empty bin (it may hold more than the
 * bin's capacity: bin_room goes below 0 and frees go to the spans until
 * malloc has taken the excess) and hand out its first block.  The bin
 * grows first if a free found it full since the last refill. */
static void *bin_refill(heap_t *h, span_t *s, unsigned cls) {
  uint32_t cap = bin_grow(h, cls);
  block_t *b = s->free;
  uint32_t n = s->nfree;
  lt_assert_block(s, b);
  lt_assert_cmp(s->used + n, <=, s->capacity);
  s->free = NULL;
  s->nfree = 0;
  s->used += n;
  h->bins->bin[cls] = block_pop_next(b);
  h->bins->bin_room[cls] = (int32_t)cap - (int32_t)(n - 1);
  block_clear(b);
  return b;
}

/* What h->bins points at, copied to *out (false: not readable): another
 * thread's TLS block is read with os_peek, as a heap whose thread has
 * gone without its exit may point at an unmapped one (heap_bins_reachable;
 * heaps_lock held: a thread that exits detaches its bins under it). */
static bool heap_bins_copy(heap_t *h, void *out, size_t off, size_t n) {
  const char *at = (const char *)h->bins + off;
  int r = h->bins == &h->bins_own || h->bins == &lithe_tls_bins ? -1 : os_peek(at, out, n);
  if (r < 0) memcpy(out, at, n); /* (process_vm_readv refused: as a live heap's) */
  return r != 0;
}

bool heap_bin_has(heap_t *h, unsigned cls, const block_t *b) {
  /* may be another thread's bin: bounded, and every link is checked to be
   * a handed-out part of a small span before it is followed */
  const block_t *x;
  if (!heap_bins_copy(h, &x, offsetof(heap_bins_t, bin) + cls * sizeof x, sizeof x)) return false;
  for (uint32_t i = 0; x && i <= BIN_MAX_BLOCKS + 1; i++) {
    if (x == b) return true;
    span_t *t = pagemap_lookup(x);
    if (!t || (size_t)((const char *)x - t->start) * t->div_magic >= span_carved_lim(t)) return false;
    x = block_next(x);
  }
  return false;
}

/* Is b, a block of s, in a bin: its owner's (looked at first) or any
 * thread heap's (heap_free_remote files a freed block of another heap's
 * span in the freeing thread's bin)?  The misuse path only: a free that
 * found the free key in the block.  Under heaps_lock: all_heaps (heaps
 * are never freed), and a thread's bins stay in its TLS block while it
 * is held. */
bool heaps_bin_has(span_t *s, const block_t *b) {
  pthread_mutex_lock(&heaps_lock);
  heap_t *o = atomic_load_explicit(&s->owner, memory_order_acquire);
  bool found = o && heap_bin_has(o, s->cls, b);
  for (heap_t *h = all_heaps; h && !found; h = h->next_all)
    if (h != o) found = heap_bin_has(h, s->cls, b);
  pthread_mutex_unlock(&heaps_lock);
  return found;
}

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
    heaps_live++;
  } else if ((h = heap_find_lost()) != NULL) {
    /* still counted live: its dead thread's count passes to this one */
  } else if ((h = meta_alloc(sizeof(heap_t))) != NULL) {
    h->next_all = all_heaps;
    all_heaps = h;
    heaps_live++;
  }
  if (h) {
    heaps_created++;
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

/* ---- spans in and out of a heap ---------------------------------------- */

static _Atomic size_t spans_small_live; /* spans holding small objects */

/* An empty small span stops counting as one, on its way to the page heap. */
static void span_unlive(span_t *s) {
  lt_assert_cmp(s->used, ==, 0u);
  lt_assert_v(s->kind == SPAN_SMALL, s->kind);
  atomic_fetch_sub_explicit(&spans_small_live, 1, memory_order_relaxed);
}

/* An empty small span goes back to the page heap. */
static void span_to_pages(span_t *s) {
  span_unlive(s);
  pages_free(s);
}

static void span_release(heap_t *h, span_t *s) {
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
static span_t *cache_grab(heap_t *h, unsigned i) {
  if (!atomic_load_explicit(&h->cache[i], memory_order_relaxed)) return NULL;
  return atomic_exchange_explicit(&h->cache[i], NULL, memory_order_acquire);
}

/* Every cached span, off the cache and no longer counted as live, as a
 * list linked through `next` (a cached span is on no list) for the page
 * heap: lithe_collect's flush, a thread under memory pressure, and a heap
 * whose cache held no span of the size it needs (heap_span_new). */
static span_t *cache_take_all(heap_t *h) {
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

static void cache_flush(heap_t *h) {
  for (span_t *s = cache_take_all(h), *next; s; s = next) {
    next = s->next;
    pages_free(s);
  }
}

/* File an exhausted span as full; false if remote frees arrived (collect
 * them instead). */
static bool span_mark_full(span_t *s) {
  uintptr_t expect = TF_NORMAL;
  return atomic_compare_exchange_strong_explicit(&s->thread_free, &expect, TF_NOTIFY,
                                                 memory_order_acq_rel, memory_order_relaxed);
}

/* Take s off the full list (its notify state already cleared): back to
 * the page heap if empty, else to the end of its class's available list. */
static void span_abandon(span_t *s);

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

static void refile_from_full(heap_t *h, span_t *s, bool remote) {
  unmark_full_list(h, s);
  span_collect_remote(s);
  if (s->used == 0) {
    span_release(h, s);
    return;
  }
  if (remote && !h->scoped && atomic_load_explicit(&heaps_live, memory_order_relaxed) > 1 &&
      avail_crowded(h, s->cls)) {
    span_abandon(s);
    return;
  }
  list_push_back(&h->avail[s->cls], s);
  if (h->current[s->cls] == &lithe_empty_span) set_current(h, s->cls);
}

/* Full spans that remote threads freed into: make them available again. */
static void heap_drain_remote(heap_t *h) {
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
static span_t *cache_take(heap_t *h, unsigned cls, size_t bytes, size_t first) {
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
static span_t *heap_adopt(heap_t *h, unsigned cls) {
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
  if (!h->scoped && atomic_load_explicit(&abandoned_in[cls], memory_order_relaxed)) {
    span_t *s = heap_adopt(h, cls);
    if (s) return s;
  }
  size_t bytes = class_span_bytes[cls];
  size_t first = h->spans_made[cls] ? bytes : class_first_span_bytes[cls];
  span_t *s = cache_take(h, cls, bytes, first);
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
  if (atomic_load_explicit(&heaps_live, memory_order_relaxed) <= 1) h->flush_skip = h->flush_misses = 0;
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
static void span_free_remote(span_t *s, block_t *b) {
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

/* A free by a thread that does not own s.  The block goes on the freeing
 * thread's own bin of its class while that has room, so that thread's
 * next malloc of the size reuses it (as tcmalloc's thread caches do),
 * and only a full bin sends it to the span's thread_free.  Handing the
 * block back to its owner alone strands memory: in bench-mtrandom (4
 * threads on 2 cores, one free in 4 of another thread's block) an owner
 * that is not running, or is served from its bins, leaves the blocks
 * other threads freed into its full spans unused while those threads take
 * fresh spans; 41-48 % of the used blocks of every class from 1.5 KiB up
 * sat in thread_free lists.  A bin may therefore hold blocks of other
 * heaps' spans (still counted `used` by their spans): a flush sends each
 * block to its own span's owner (give_back_list), and the double-free
 * scan walks every heap's bin (heaps_bin_has).  A first-class heap's
 * blocks never enter a thread's bin: lithe_heap_destroy frees its spans
 * whole, without looking at bins (their bin_cls is 0, a bin that never
 * has room).  The push is free_inline's own, and a full bin, like the
 * owner's, is heap_bin_spill's; this path serves the slow paths
 * (alloc.c's small_free). */
void heap_free_remote(span_t *s, block_t *b) {
  heap_t *h = lithe_tls_heap;
  block_set_key(b, span_free_key(s));
  if (unlikely(h == &lithe_empty_heap)) {
    span_free_remote(s, b);
    return;
  }
  unsigned c = s->bin_cls;
  block_t *head = h->bins->bin[c];
  if (unlikely(b == head)) { /* the head of our bin is free: its key was overwritten */
    lithe_report("free", b, "double free");
    return;
  }
  if (likely(--h->bins->bin_room[c] >= 0)) {
    block_set_next(b, head);
    h->bins->bin[c] = b;
    return;
  }
  heap_bin_spill(h, s, b);
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

static void span_abandon(span_t *s) {
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

/* heap_abandon's step 3, under abandoned_lock: held once for the whole
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

static void heap_abandon(heap_t *h) {
  heap_bins_flush(h); /* 0. every block back in its span */
  heap_quiesce(h);    /* 1, 2 */
  pthread_mutex_lock(&abandoned_lock);
  heap_spans_each(h, span_abandon_locked, NULL); /* 3. give every span away */
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
  heaps_live--;
  pthread_mutex_unlock(&heaps_lock);
  /* only now: while h is live, its thread's slot names it (heap_find_lost) */
  lithe_tls_heap = &lithe_empty_heap;
  /* the flush left the rooms at the capacities: 0, so that a later free
   * by this thread goes to heap_bin_spill, which sends it to the span */
  memset(&lithe_tls_bins, 0, sizeof lithe_tls_bins);
  tls_heap_gone = true;
}

/* A snapshot of the blocks sitting in every heap's bins (other threads
 * keep changing theirs: read without ordering, as the span counts are). */
void heaps_binned(uint64_t out[NCLASSES]) {
  memset(out, 0, NCLASSES * sizeof out[0]);
  pthread_mutex_lock(&heaps_lock);
  for (heap_t *h = all_heaps; h; h = h->next_all) {
    int32_t room[NCLASSES];
    if (!heap_bins_copy(h, room, offsetof(heap_bins_t, bin_room), sizeof room)) continue;
    for (unsigned c = 1; c < NCLASSES; c++) {
      int64_t n = bins_held(h, room, c);
      if (n > 0) out[c] += (uint64_t)n;
    }
  }
  pthread_mutex_unlock(&heaps_lock);
}

void heaps_stats(size_t *live, size_t *created, size_t *small_spans, size_t *nabandoned) {
  pthread_mutex_lock(&heaps_lock);
  *live = atomic_load_explicit(&heaps_live, memory_order_relaxed);
  *created = heaps_created;
  pthread_mutex_unlock(&heaps_lock);
  *nabandoned = atomic_load(&abandoned_count);
  *small_spans = atomic_load(&spans_small_live);
}

/* ---- fork -------------------------------------------------------------- */
/* Every lock, in the order the code nests them. */
extern pthread_mutex_t pagemap_lock, meta_lock;
/* First-class heaps' locks (userheap.c: its pool's, each heap's large
 * list's), taken last: nothing is locked while one is held.  A hook, set
 * by the first lithe_heap_new (heap.c must not call up); the one prepare
 * saw is the one parent and child call, so a hook set meanwhile waits for
 * the next fork. */
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
  heaps_live--;
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
