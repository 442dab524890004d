/* meta.c — lithe's own metadata: span descriptors, thread heaps, arena
 * records, pagemap bitmaps.  Bump-allocated from 64 KiB read/write chunks
 * that are never returned (descriptors are recycled through a free list),
 * so a stale pointer to a descriptor always points at readable memory:
 * the pagemap's lookups of bad pointers rely on that. */
#include <string.h>
#include "internal.h"

/* 64 KiB: one chunk holds ~400 span descriptors; a program with a tiny heap
 * commits one chunk (seed 000: commit proportional to the heap). */
#define META_CHUNK ((size_t)64 * KiB)

pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static char *meta_cur, *meta_end;
static span_t *span_free_list;

static void *meta_alloc_locked(size_t size) {
  lt_assert_held(&meta_lock);
  size = align_up(size, 64); /* cache-line aligned: no false sharing */
  if ((size_t)(meta_end - meta_cur) < size) {
    size_t chunk = size > META_CHUNK ? align_up(size, META_CHUNK) : META_CHUNK;
    size_t mapped;
    void *base;
#if LITHE_SECURE
    /* Hardened build: a PROT_NONE guard page on each side of a metadata
     * chunk, so a linear overflow from a neighbouring mapping (a large or
     * xlarge object) faults before it reaches descriptors or heaps. */
    size_t guard = os_page_size();
    char *g = os_map(chunk + 2 * guard, 0, &mapped, &base);
    if (!g) return NULL;
    os_decommit(g, guard);
    os_decommit(g + guard + chunk, guard);
    char *p = g + guard;
    mapped = chunk;
#else
    char *p = os_map(chunk, 0, &mapped, &base);
    if (!p) return NULL;
#endif
    atomic_fetch_add_explicit(&os_stats.metadata, mapped, memory_order_relaxed);
    lt_vg_hide(p, mapped);
    meta_cur = p;
    meta_end = p + mapped;
  }
  void *r = meta_cur;
  meta_cur += size;
  return r; /* fresh mapping: already zero */
}

void *meta_alloc(size_t size) {
#if LITHE_DEBUG
  if (lithe_fault_meta("metadata allocation")) return NULL; /* LITHE_FAULT_META=N */
#endif
  pthread_mutex_lock(&meta_lock);
  void *p = meta_alloc_locked(size);
  pthread_mutex_unlock(&meta_lock);
  return p;
}

span_t *span_desc_alloc(void) {
#if LITHE_DEBUG
  if (lithe_fault_meta("span descriptor allocation")) return NULL; /* LITHE_FAULT_META=N */
#endif
  pthread_mutex_lock(&meta_lock);
  span_t *s = span_free_list;
  if (s) span_free_list = s->next;
  else s = meta_alloc_locked(sizeof(span_t));
  pthread_mutex_unlock(&meta_lock);
  if (s) memset(s, 0, sizeof *s);
  return s;
}

void span_desc_free(span_t *s) {
  lt_assert_v(s->kind != SPAN_DEAD, (uintptr_t)s); /* freed twice */
  s->kind = SPAN_DEAD;
  s->bytes = 0; /* stale lookups see an empty range */
  pthread_mutex_lock(&meta_lock);
  s->next = span_free_list;
  span_free_list = s;
  pthread_mutex_unlock(&meta_lock);
}
