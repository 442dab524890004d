/* large.c — objects too big for a size class.
 *
 *   large   SMALL_MAX < size <= large_max: a run of pages from the page
 *           heap (arena.c), reused before it is purged; realloc grows and
 *           shrinks it in place when the neighbouring pages allow.
 *   xlarge  above large_max: a mapping of its own, resized with mremap (no
 *           copy) by realloc.  A freed one is kept (the xlarge cache, below)
 *           for the purge delay and reused best-fit before any new mapping,
 *           so a program churning big blocks does not fault every page in
 *           again (13-16 us a 4 KiB page here, ~3-4 ns a byte).
 * large_max is 16 MiB, or a quarter of an arena when arenas are smaller. */
#include <errno.h>
#include <string.h>
#include "internal.h"

_Atomic size_t large_live, xlarge_live, xlarge_bytes, xlarge_cached_bytes;

/* ---- the xlarge cache -----------------------------------------------------
 * Freed xlarge mappings, newest first, under pages_lock (the fork handlers
 * already take it).  A cached mapping's pagemap entry is freed_xlarge (a
 * second free is reported as a double free), it is counted in xlarge_cached_bytes (resident
 * and purgeable: pages_usage adds it) and is unmapped once it has been
 * free for LITHE_PURGE_DELAY_MS (purge_runs, arena.c, calls
 * xcache_expire), on lithe_collect, or when the cache holds more than
 * XCACHE_MAX mappings or XCACHE_MAX_BYTES: a churn frees one block and
 * allocates the next, so a few suffice, and the bound keeps what waits for
 * reuse below what one more live block would cost.  Reuse is best-fit; a
 * mapping more than 1/8 bigger than the request is first shrunk in place
 * (mremap) so the excess is not kept resident. */
#ifndef XCACHE_MAX
#define XCACHE_MAX 8
#endif
#ifndef XCACHE_MAX_BYTES
#define XCACHE_MAX_BYTES ((size_t)128 * MiB)
#endif
static span_list_t xcache;
static size_t xcache_n;

/* What the pagemap says for the start of a freed (or moved) xlarge block:
 * a second free is then reported as a double free, not as a pointer lithe
 * never made.  Until something else is mapped there. */
static span_t freed_xlarge = {.kind = SPAN_DEAD};

static void xcache_unmap_list(span_t *s) {
  while (s) {
    span_t *next = s->next;
    os_unmap(s->map_base, s->map_bytes);
    span_desc_free(s);
    s = next;
  }
}

/* Take entries off, oldest first: all of them, or those expired and any
 * beyond the bounds; returns them linked through `next`. */
static span_t *xcache_trim_locked(uint64_t now, bool all) {
  span_t *out = NULL;
  long delay = lithe_opt.purge_delay_ms;
  for (span_t *s = xcache.last, *prev; s; s = prev) {
    prev = s->prev;
    bool expired = delay >= 0 && now - s->freed_ms >= (uint64_t)delay;
    if (!all && !expired && xcache_n <= XCACHE_MAX &&
        atomic_load_explicit(&xlarge_cached_bytes, memory_order_relaxed) <= XCACHE_MAX_BYTES)
      break;
    list_remove(&xcache, s);
    xcache_n--;
    atomic_fetch_sub_explicit(&xlarge_cached_bytes, s->map_bytes, memory_order_relaxed);
    s->next = out;
    out = s;
  }
  return out;
}

void xcache_expire(uint64_t now, bool all) {
  lt_assert_held(&pages_lock);
  if (xcache_n) xcache_unmap_list(xcache_trim_locked(now, all));
}

static bool xcache_put(span_t *s) {
  if (lithe_opt.purge_delay_ms == 0 || s->block_size /* aligned */ || s->map_base != s->start ||
      (unlikely(limit_pressure_at) && atomic_load_explicit(&limit_pressure, memory_order_relaxed)))
    return false;
  pthread_mutex_lock(&pages_lock);
  s->freed_ms = os_now_ms();
  list_push_front(&xcache, s);
  xcache_n++;
  atomic_fetch_add_explicit(&xlarge_cached_bytes, s->map_bytes, memory_order_relaxed);
  span_t *old = xcache_trim_locked(s->freed_ms, false);
  pthread_mutex_unlock(&pages_lock);
  xcache_unmap_list(old);
  return true;
}

/* Grow cached mapping s to `bytes`, keeping its pages (mremap moves page
 * tables: no copy, no fault for the old part), where the kernel finds
 * room.  A cached mapping holds no data, so if the pagemap cannot take
 * its new place it is simply unmapped by the caller. */
static bool xcache_grow(span_t *s, size_t bytes) {
  char *q = os_remap(s->start, s->map_bytes, bytes);
  if (!q) return false;
  s->start = s->map_base = q;
  s->bytes = s->map_bytes = bytes;
  return pagemap_ensure(q, PAGE_SIZE);
}

/* A cached mapping for `bytes`, or NULL: the smallest that holds it (shrunk
 * in place when more than 1/8 too big), else the biggest grown to it;
 * on a miss every cached mapping is smaller than the request and
 * is given back, or live + cached would grow with every miss (the peak:
 * bench-bigchurn 522 MB kept, 406 MB given back, glibc 398 MB). */
static span_t *xcache_take(size_t bytes) {
  if (!xcache_n) return NULL; /* a racy peek: a miss only maps afresh */
  pthread_mutex_lock(&pages_lock);
  span_t *best = NULL, *biggest = NULL;
  for (span_t *s = xcache.first; s; s = s->next) {
    if (s->map_bytes >= bytes && (!best || s->map_bytes < best->map_bytes)) best = s;
    if (!biggest || s->map_bytes > biggest->map_bytes) biggest = s;
  }
  span_t *s = best ? best : biggest, *others = NULL;
  if (!s) { /* another thread took the last one */
    pthread_mutex_unlock(&pages_lock);
    return NULL;
  }
  list_remove(&xcache, s);
  xcache_n--;
  atomic_fetch_sub_explicit(&xlarge_cached_bytes, s->map_bytes, memory_order_relaxed);
  if (!best) others = xcache_trim_locked(0, true);
  pthread_mutex_unlock(&pages_lock);
  xcache_unmap_list(others);
  if (best) {
    if (s->map_bytes - bytes > bytes / 8 && os_resize(s->start, s->map_bytes, bytes) == s->start)
      s->map_bytes = bytes; /* shrunk in place: the tail is unmapped */
    /* The block is what was asked (malloc_usable_size, free_sized's
     * check), even in a mapping up to 1/8 bigger; map_bytes stays the
     * mapping's length for unmap, mremap and the cache. */
    s->bytes = bytes;
    return s;
  }
  if (xcache_grow(s, bytes)) return s;
  s->next = NULL;
  xcache_unmap_list(s); /* a fresh mapping follows */
  return NULL;
}

static void *xlarge_alloc(size_t size, size_t align, bool zero) {
  size_t mapped;
  void *base;
  if (align <= PAGE_SIZE) {
    span_t *s = xcache_take(align_up(size, PAGE_SIZE));
    if (s) { /* its pagemap entry is still writable: set it, no failure */
      if (zero) memset(s->start, 0, size); /* dirty: calloc must zero it
                                               (a grown tail is zero already,
                                               but rarely worth the split) */
      pagemap_set_one(s->start, s);
      atomic_fetch_add_explicit(&xlarge_live, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&xlarge_bytes, s->map_bytes, memory_order_relaxed);
      return s->start;
    }
  }
  if (align < PAGE_SIZE) align = PAGE_SIZE; /* fresh mappings read as zero */
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
    if (xcache_put(s)) return;
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
  if (bytes == s->map_bytes) { /* a reused mapping may hold more than the block */
    s->bytes = bytes;
    return s->start;
  }
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
