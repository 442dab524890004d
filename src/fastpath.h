/* fastpath.h — the hot path, on one screen: malloc of a small size and
 * free of a small block by the thread that owns it.  No lock, no atomic
 * read-modify-write.  Everything else goes through heap.c / alloc.c.
 * Included by alloc.c (lithe's own calls) and override.c (the exported
 * malloc/free), so neither pays a call to reach it. */
#ifndef LITHE_FASTPATH_H
#define LITHE_FASTPATH_H
#include <errno.h>
#include "internal.h"

void free_slow(void *p, const char *op) INTERNAL;

/* malloc: every small size (<= SMALL_MAX) is one table lookup away from
 * its class (internal.h, lut_index); pop the current span's free list.
 * Before set-up class_lut is all zero: class 0's current span is the empty
 * one, whose free list is NULL, so the first malloc lands in the slow path
 * that sets everything up.  `key = 0` clears the double-free mark. */
static inline void *malloc_inline(size_t n) {
  heap_t *h = lithe_tls_heap;
  size_t i;
  if (likely(n <= LUT_MAX)) i = (n + 15) >> 4; /* tested first: the common sizes */
  else if (n <= SMALL_MAX) i = LUT_HI_BASE + ((n + 255) >> 8);
  else goto slow;
  {
    span_t *s = h->current[class_lut[i]];
    block_t *b = s->free;
    if (likely(b != NULL)) {
      lt_assert_block(s, b); /* a corrupted free list stops here (Debug) */
      /* heap profiling: one subtract and one compare (prof.c); b != NULL
       * proves h is this thread's own heap, not the shared empty one */
      if (prof_due(h, n)) return prof_malloc(h, n); /* a tail jump */
      s->free = b->next;
      s->used++;
      b->next = NULL; /* a block handed out holds no heap address */
      b->key = 0;
      return b;
    }
  }
slow:
  if (unlikely(n > ALLOC_MAX)) { errno = ENOMEM; return NULL; }
  return heap_malloc_generic(h, n);
}

/* Lemire's divisibility test: off is a block start <=> off * M <= M - 1,
 * M = 2^64 / block size rounded up, for off < 2^32 (spans are smaller). */
static inline bool small_block_start(const span_t *s, size_t off) {
  return off * s->div_magic <= s->div_magic - 1;
}

/* free: no NULL test up front (NULL finds no span and goes slow).  One
 * unsigned compare, off < carved, proves p lies in the part of a small
 * span that has been handed out: carved is 0 in every other kind of span,
 * a p below start wraps to a huge off, and so does an address above 2^48
 * (its L1 index wraps, but it lies above every span).  Lemire's test then
 * proves p is a block start, and the key compare catches a double free
 * (confirmed by a scan in the slow path).  Then the owner pushes on the
 * span's free list; the span goes to the slow path only when `used` falls
 * to its free_trigger (heap.c); another thread's free is a CAS push. */
static inline void free_inline(void *p) {
  uintptr_t a = (uintptr_t)p;
  span_t **l2 = atomic_load_explicit(&pagemap_l1[(a >> L1_SHIFT) & (L1_COUNT - 1)], memory_order_relaxed);
  if (unlikely(l2 == NULL)) { free_slow(p, "free"); return; }
  span_t *s = l2[(a >> PAGE_SHIFT) & (L2_COUNT - 1)];
  if (unlikely(s == NULL)) { free_slow(p, "free"); return; }
  size_t off = (size_t)((char *)p - s->start);
  block_t *b = p;
  uintptr_t key = lithe_free_key;
  if (unlikely(off >= s->carved || !small_block_start(s, off) || b->key == key)) {
    free_slow(p, "free");
    return;
  }
  heap_t *h = lithe_tls_heap;
  if (likely(atomic_load_explicit(&s->owner, memory_order_relaxed) == h)) {
    b->next = s->free;
    b->key = key;
    s->free = b;
    if (unlikely((int32_t)--s->used <= s->free_trigger)) heap_free_local_slow(h, s);
    return;
  }
  heap_free_remote(s, b);
}

#endif
