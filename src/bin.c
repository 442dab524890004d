/* SPDX-License-Identifier: MIT */
/* bin.c — a thread's bins: per size class a LIFO list of free blocks in
 * the thread's TLS block, where free pushes and malloc pops (fastpath.h);
 * here their slow side: a free past a full bin (spill), the flush of bins
 * back to their spans (give back, splice), their capacities and budget,
 * decay, refill from a span, and the misuse scans.  The spans under them
 * are heap.c's. */
#define _GNU_SOURCE
#include <string.h>
#include "internal.h"
#include "fastpath.h" /* span_push */

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
 * walks a bin on the way (sending an overflowing bin back block by block,
 * a pagemap lookup each, cost far more: docs/lab/2026-11-29-hot-paths-and-bins.md).
 * Capacity grows (x2, to BIN_MAX_BYTES)
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
void heap_bins_flush_over(heap_t *h, class_set_t set, class_set_t over) {
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

void heap_bins_flush(heap_t *h) { heap_bins_flush_set(h, CLASSES_ALL); }

/* The bytes heap h's bins may hold at their capacities, counted anew:
 * the assertions' check of h->bins_cap_bytes, which bin_grow reads (kept
 * as a sum because this loop in each grow was costly:
 * docs/lab/2026-11-29-hot-paths-and-bins.md). */
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
void heap_bins_restart(heap_t *h, class_set_t set) {
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

void *bin_pop(heap_t *h, unsigned cls) {
  block_t *b = h->bins->bin[cls];
  lt_assert_block(pagemap_lookup(b), b);
#if LITHE_SECURE
  if (unlikely(cls != 0 && block_key(b) != lithe_class_key[cls])) {
    h->bins->bin[cls] = lithe_key_corrupt(b);
    h->bins->bin_room[cls]++;
    block_clear(b);
    return b;
  }
#endif
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
 * overflowed it fits the next time: doubling alone grew a flushed bin
 * too slowly for a program whose waves are flushed every few rounds, and
 * its frees spilled to the spans, which went back to the page heap and
 * were carved again (regress_bin_wave;
 * docs/lab/2026-12-02-rows-behind-mimalloc.md). */
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
void *bin_refill(heap_t *h, span_t *s, unsigned cls) {
  uint32_t cap = bin_grow(h, cls);
  block_t *b = s->free;
  uint32_t n = s->nfree;
  lt_assert_block(s, b);
  lt_assert_cmp(s->used + n, <=, s->capacity);
  s->free = NULL;
  s->nfree = 0;
  s->used += n;
#if LITHE_SECURE
  if (unlikely(block_key(b) != span_free_key(s))) {
    h->bins->bin[cls] = lithe_key_corrupt(b);
    h->bins->bin_room[cls] = (int32_t)cap;
    block_clear(b);
    return b;
  }
#endif
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



/* A heap's bins back in the heap itself, empty (a heap leaving its
 * thread: its TLS block goes with the thread).  Under heaps_lock (or in a forked child), so that
 * the scans of other heaps' bins (heaps_bin_has, heaps_binned) never read
 * a thread's TLS block after the thread has gone. */
void heap_bins_detach(heap_t *h) {
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
bool heap_bins_reachable(heap_t *h) {
  if (h->bins == &h->bins_own || h->bins == &lithe_tls_bins) return true;
  heap_t *in_slot;
  int r = os_peek(h->tls_slot, &in_slot, sizeof in_slot);
  return r < 0 || (r == 1 && in_slot == h);
}

/* A free by a thread that does not own s.  The block goes on the freeing
 * thread's own bin of its class while that has room, so that thread's
 * next malloc of the size reuses it (as tcmalloc's thread caches do),
 * and only a full bin sends it to the span's thread_free.  Handing the
 * block back to its owner alone strands memory: an owner that is not
 * running, or is served from its bins, leaves the blocks other threads
 * freed into its full spans unused while those threads take fresh spans
 * (docs/lab/2026-12-01-mtrandom-free-reads-block.md).  A bin may therefore hold blocks of other
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
