/* large.c — objects too big for a size class.
 *
 *   large   SMALL_MAX < size <= large_max: a run of pages from the page
 *           heap (arena.c), reused before it is purged; realloc grows and
 *           shrinks it in place when the neighbouring pages allow.
 *   xlarge  above large_max: a mapping of its own, unmapped on free, and
 *           resized with mremap (no copy) by realloc.
 * large_max is 16 MiB, or a quarter of an arena when arenas are smaller. */
#include <errno.h>
#include <string.h>
#include "internal.h"

_Atomic size_t large_live, xlarge_live, xlarge_bytes;

/* What the pagemap says for the start of a freed (or moved) xlarge block:
 * a second free is then reported as a double free, not as a pointer lithe
 * never made.  Until something else is mapped there. */
static span_t freed_xlarge = {.kind = SPAN_DEAD};

static void *xlarge_alloc(size_t size, size_t align, bool zero) {
  (void)zero; /* fresh mappings read as zero */
  size_t mapped;
  void *base;
  if (align < PAGE_SIZE) align = PAGE_SIZE;
  if (unlikely(limit_pressure_at) && !limit_allow_map(align_up(size, PAGE_SIZE))) return NULL;
  char *p = os_map(align_up(size, PAGE_SIZE), align, &mapped, &base);
  if (!p) return NULL;
  span_t *s = span_desc_alloc();
  if (!s || !pagemap_ensure(p, PAGE_SIZE)) {
    if (s) span_desc_free(s);
    os_unmap(base, mapped);
    return NULL;
  }
  s->kind = SPAN_XLARGE;
  s->start = p;
  s->bytes = mapped;
  s->map_base = base;
  s->map_bytes = mapped;
  s->block_size = (uint32_t)(align > PAGE_SIZE ? 1 : 0); /* 1: must keep its alignment */
  pagemap_set_one(p, s);
  atomic_fetch_add_explicit(&xlarge_live, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&xlarge_bytes, mapped, memory_order_relaxed);
  return p;
}

void *large_alloc(size_t size, size_t align) {
  return large_alloc_zero(size, align, false);
}

void *large_alloc_zero(size_t size, size_t align, bool zero) {
  if (unlikely(size > ALLOC_MAX || align > ALLOC_MAX)) { errno = ENOMEM; return NULL; }
  void *p = NULL;
  if (size <= large_max && align <= large_max) {
    span_t *s = pages_alloc(align_up(size, PAGE_SIZE) >> PAGE_SHIFT, align);
    if (s) {
      span_set_kind(s, SPAN_LARGE);
      atomic_store_explicit(&s->owner, NULL, memory_order_relaxed);
      atomic_fetch_add_explicit(&large_live, 1, memory_order_relaxed);
      if (zero && s->dirty) memset(s->start, 0, size);
      p = s->start;
    }
  } else {
    p = xlarge_alloc(size, align, zero);
  }
  if (!p) errno = ENOMEM;
  return p;
}

void large_free(span_t *s) {
  /* owner is NULL for large objects but a lithe_heap_t's (userheap.c) */
  if (unlikely(atomic_load_explicit(&s->owner, memory_order_relaxed) != NULL)) userheap_large_forget(s);
  if (s->kind == SPAN_XLARGE) {
    pagemap_set_one(s->start, &freed_xlarge);
    atomic_fetch_sub_explicit(&xlarge_live, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&xlarge_bytes, s->map_bytes, memory_order_relaxed);
    os_unmap(s->map_base, s->map_bytes);
    span_desc_free(s);
    return;
  }
  lt_assert_v(s->kind == SPAN_LARGE, s->kind);
  lt_assert(atomic_load_explicit(&large_live, memory_order_relaxed) > 0);
  atomic_fetch_sub_explicit(&large_live, 1, memory_order_relaxed);
  pages_free(s);
}

/* Resize in place (large: neighbouring pages; xlarge: mremap).  Returns the
 * object's (possibly moved, for xlarge) address, or NULL to copy instead. */
void *large_realloc(span_t *s, size_t size) {
  if (s->kind == SPAN_LARGE) {
    if (size <= SMALL_MAX || size > large_max) return NULL;
    return pages_try_resize(s, align_up(size, PAGE_SIZE) >> PAGE_SHIFT) ? s->start : NULL;
  }
  if (size <= large_max || s->block_size /* aligned */) return NULL;
  size_t bytes = align_up(size, PAGE_SIZE);
  if (bytes == s->map_bytes) return s->start;
  char *q = os_resize(s->map_base, s->map_bytes, bytes);
  if (!q) {
    /* Move: reserve the destination and make its pagemap entry writable
     * first, so that once mremap has moved the block nothing can fail
     * (the old block must stay intact when NULL is returned). */
    char *dest = os_reserve(bytes, PAGE_SIZE);
    if (!dest) return NULL;
    if (!pagemap_ensure(dest, PAGE_SIZE)) {
      os_release(dest, bytes);
      return NULL;
    }
    /* Clear the old entry before mremap frees the old range: once it is
     * free another thread's xlarge mapping may land there and set it. */
    pagemap_set_one(s->start, &freed_xlarge);
    q = os_move(s->map_base, s->map_bytes, bytes, dest);
    if (!q) {
      pagemap_set_one(s->start, s); /* the old mapping is still there */
      return NULL;
    }
  }
  atomic_fetch_add_explicit(&xlarge_bytes, bytes - s->map_bytes, memory_order_relaxed);
  s->start = s->map_base = q;
  s->bytes = s->map_bytes = bytes;
  pagemap_set_one(q, s);
  return q;
}
