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

static inline void *malloc_inline(size_t n) {
  heap_t *h = lithe_tls_heap;
  if (likely(n <= LUT_MAX)) {
    span_t *s = h->current[class_lut[(n + 15) >> 4]];
    block_t *b = s->free;
    if (likely(b != NULL)) {
      lt_assert_block(s, b); /* a corrupted free list stops here (Debug) */
      s->free = b->next;
      s->used++;
      b->next = NULL; /* a block handed out holds no heap address */
      b->key = 0;
      return b;
    }
  }
  if (unlikely(n > ALLOC_MAX)) { errno = ENOMEM; return NULL; }
  return heap_malloc_generic(h, n);
}

/* Lemire's divisibility test: off is a block start <=> off * M <= M - 1,
 * M = 2^64 / block size rounded up, for off < 2^32 (spans are smaller). */
static inline bool small_block_start(const span_t *s, size_t off) {
  return off * s->div_magic <= s->div_magic - 1;
}

/* The fast path: no NULL test up front (NULL finds no span and goes slow),
 * and an address above 2^48 wraps its L1 index but then fails the span's
 * range check, so one path proves the pointer is a block start. */
static inline void free_inline(void *p) {
  uintptr_t a = (uintptr_t)p;
  span_t **l2 = atomic_load_explicit(&pagemap_l1[(a >> L1_SHIFT) & (L1_COUNT - 1)], memory_order_relaxed);
  if (unlikely(l2 == NULL)) { free_slow(p, "free"); return; }
  span_t *s = l2[(a >> PAGE_SHIFT) & (L2_COUNT - 1)];
  if (unlikely(s == NULL || s->kind != SPAN_SMALL)) { free_slow(p, "free"); return; }
  size_t off = (size_t)((char *)p - s->start);
  block_t *b = p;
  uintptr_t key = lithe_free_key;
  if (unlikely(off >= s->bytes || (char *)p >= s->bump || !small_block_start(s, off) ||
               b->key == key)) {
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
