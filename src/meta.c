/* SPDX-License-Identifier: MIT */
/* meta.c — lithe's own metadata: span descriptors, thread heaps, arena
 * records, pagemap bitmaps.  Bump-allocated from 64 KiB read/write chunks
 * that are never unmapped, so a stale pointer to a descriptor always
 * points at readable memory: the pagemap's lookups of bad pointers rely
 * on that.
 *
 * Span descriptors live in units of whole OS pages of their own (taken
 * from the top of a chunk, while the other metadata bumps up from its
 * bottom) and are recycled through a free list.  A program that once had a big heap
 * has many descriptors free at the end: medium (~1 GiB of 1-8 KiB
 * blocks) left 7.1 MB of them resident after lithe_collect(true), against
 * the 128 kB glibc's malloc_trim(0) leaves of the whole process.  So
 * lithe_collect(true) (meta_collect) gives back the units whose
 * descriptors are all free: it sorts the free list by address, purges
 * (MADV_DONTNEED, os_purge) every unit it covers whole, and keeps those
 * units on a list of purged ranges that descriptor allocation carves
 * before it takes fresh ones.  A purged unit stays mapped and reads as
 * zero, and a zeroed descriptor means "no block here" to every reader of
 * a stale pagemap entry, as a freed one (SPAN_DEAD, bytes 0, carved_lim
 * 0) does:
 *   - free()'s carved test (off * div_magic < carved_lim) fails on
 *     carved_lim 0, so the pointer goes to free_slow;
 *   - checked_span then sees kind SPAN_FREE with start NULL: bad_pointer
 *     reports "double free (its pages are already free)" for a page start
 *     and "pointer not allocated by lithe" otherwise, with the address,
 *     exactly as for a SPAN_DEAD descriptor (bytes 0: no range holds p);
 *   - the page heap's free_neighbour wants kind SPAN_FREE, its own arena
 *     and bytes != 0 (arena NULL, bytes 0 here);
 *   - the bin scans (heap_bin_has) and prof.c's block_live want a small
 *     span or a live block (carved_lim 0, kind SPAN_FREE: neither).
 * A recycled descriptor is zeroed by span_desc_alloc outside any lock
 * already, so every reader met zero descriptors before this too.  Only
 * fully free units go: a descriptor in use, or being freed (written
 * before it joins the list), is never in a purged unit.  The sort costs
 * O(n log n) in the free descriptors, in a mapping of its own: medium's
 * 18,000 once; a collection with none freed since does nothing. */
#include <string.h>
#include "internal.h"

/* 64 KiB: one chunk holds 192 span descriptors (320 bytes each); a
 * program with a tiny heap commits one chunk (commit proportional to the
 * heap). */
#define META_CHUNK ((size_t)64 * KiB)

/* Descriptors come in units: the fewest whole OS pages (up to 8) that
 * they tile exactly, so that a unit whose descriptors are all free goes
 * back alone and no byte is left over: 5 pages of 4 KiB hold 64
 * descriptors of 320 bytes.  (Pages with their tail unused, 12 to a
 * 4 KiB page, raised medium's peak by 400 kB, 1/16 of its 7 MB of
 * descriptors.)  Should no such unit exist, a unit is one page and its
 * tail stays unused.  Within a unit only its first descriptor starts on
 * a page boundary: that is how meta_collect finds unit starts. */
_Static_assert(sizeof(span_t) % CACHE_LINE == 0 && sizeof(span_t) <= 4096,
               "descriptors are whole cache lines, several to an OS page");
static size_t unit_size, unit_descs; /* bytes of a unit, descriptors in it */
static void unit_init(void) {
  size_t ps = os_page_size();
  unit_size = ps;
  for (size_t k = 1; k <= 8; k++)
    if ((k * ps) % sizeof(span_t) == 0) {
      unit_size = k * ps;
      break;
    }
  unit_descs = unit_size / sizeof(span_t);
}

pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
/* Other metadata bumps up from meta_cur to meta_end; descriptor units come
 * down from desc_top to desc_lo.  The first chunk is shared (meta_end ==
 * desc_top, desc_lo == meta_cur, moved together); once either needs a
 * chunk of its own, the other keeps the rest of the shared one.  Apart,
 * the few small records (heaps, arena records, pagemap bitmaps, range
 * nodes) fill pages of their own instead of pinning one page of every
 * descriptor chunk each: medium's 19 arena records, made as its heap
 * grew, kept 64 kB of descriptor chunks resident after collection. */
static char *meta_cur, *meta_end;
static char *desc_lo, *desc_top;
static bool meta_shared;               /* both in the first chunk still */
static char *desc_cur, *desc_end;      /* the descriptor unit being carved */
static span_t *span_free_list;         /* freed descriptors, kind SPAN_DEAD */
static size_t span_free_count;         /* ... on it */
static size_t span_freed_since;        /* descriptors freed since the last meta_collect */

/* Descriptor units given back (purged), carved before fresh ones.  The
 * nodes are metadata of their own, recycled (node_free). */
typedef struct desc_range_s {
  char *start;
  size_t bytes;
  struct desc_range_s *next;
} desc_range_t;
static desc_range_t *purged_ranges, *node_free;
static _Atomic size_t purged_meta; /* bytes of descriptor units purged now */

static size_t chunk_bytes(void) {
  size_t ps = os_page_size();
  return ps > META_CHUNK ? ps : META_CHUNK;
}

/* A fresh chunk of `size` bytes (a multiple of chunk_bytes()). */
static char *chunk_map(size_t size) {
  size_t mapped;
  void *base;
#if LITHE_SECURE
  /* Hardened build: a PROT_NONE guard page on each side of a metadata
   * chunk, so a linear overflow from a neighbouring mapping (a large or
   * xlarge object) faults before it reaches descriptors or heaps. */
  size_t guard = os_page_size();
  char *g = os_map(size + 2 * guard, 0, &mapped, &base);
  if (!g) return NULL;
  os_decommit(g, guard);
  os_decommit(g + guard + size, guard);
  char *p = g + guard;
  mapped = size;
#else
  char *p = os_map(size, 0, &mapped, &base);
  if (!p) return NULL;
#endif
  atomic_fetch_add_explicit(&os_stats.metadata, mapped, memory_order_relaxed);
  lt_vg_hide(p, mapped);
  return p;
}

/* A fresh chunk for the other metadata or for descriptors, which the
 * caller takes as its own.  The first one either asks for is shared: both
 * start in it (meta_cur and desc_lo at its bottom, meta_end and desc_top
 * at its top); any later one ends the sharing, and the side that did not
 * ask keeps the rest of the shared chunk. */
static char *chunk_new(size_t bytes) {
  lt_assert_held(&meta_lock);
  char *p = chunk_map(bytes);
  if (!p) return NULL;
  meta_shared = !meta_end && !desc_top;
  if (meta_shared) {
    meta_cur = desc_lo = p;
    meta_end = desc_top = p + bytes;
  }
  return p;
}

static void *meta_alloc_locked(size_t size) {
  lt_assert_held(&meta_lock);
  size = align_up(size, 64); /* cache-line aligned: no false sharing */
  if ((size_t)(meta_end - meta_cur) < size) {
    size_t unit = chunk_bytes();
    size_t chunk = size > unit ? align_up(size, unit) : unit;
    char *p = chunk_new(chunk); /* descriptors keep the rest of a shared one */
    if (!p) return NULL;
    meta_cur = p;
    meta_end = p + chunk;
  }
  void *r = meta_cur;
  meta_cur += size;
  if (meta_shared) desc_lo = meta_cur;
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

/* A unit of zeroed memory for descriptors: a purged one if any (it reads
 * as zero again), else the top unit of the chunk, else a fresh chunk. */
static bool desc_unit_new(void) {
  lt_assert_held(&meta_lock);
  if (!unit_size) unit_init();
  size_t u = unit_size;
  desc_range_t *r = purged_ranges;
  if (r) {
    desc_cur = r->start;
    desc_end = r->start + unit_descs * sizeof(span_t);
    r->start += u;
    r->bytes -= u;
    if (!r->bytes) {
      purged_ranges = r->next;
      r->next = node_free;
      node_free = r;
    }
    atomic_fetch_sub_explicit(&purged_meta, u, memory_order_relaxed);
    atomic_fetch_add_explicit(&os_stats.metadata, u, memory_order_relaxed);
    return true;
  }
  if ((size_t)(desc_top - desc_lo) < u) {
    size_t chunk = chunk_bytes() / u * u; /* 3 units of 20 KiB */
    if (!chunk) chunk = u;
    char *p = chunk_new(chunk); /* the other metadata keeps the rest of a shared one */
    if (!p) return false;
    desc_lo = p;
    desc_top = p + chunk;
  }
  desc_top -= u;
  if (meta_shared) meta_end = desc_top;
  desc_cur = desc_top;
  desc_end = desc_top + unit_descs * sizeof(span_t);
  return true;
}

span_t *span_desc_alloc(void) {
#if LITHE_DEBUG
  if (lithe_fault_meta("span descriptor allocation")) return NULL; /* LITHE_FAULT_META=N */
#endif
  pthread_mutex_lock(&meta_lock);
  span_t *s = span_free_list;
  if (s) {
    lt_assert_v(s->kind == SPAN_DEAD, (uintptr_t)s);
    span_free_list = s->next;
    span_free_count--;
  } else if (desc_cur < desc_end || desc_unit_new()) {
    s = (span_t *)desc_cur;
    desc_cur += sizeof(span_t);
  }
  pthread_mutex_unlock(&meta_lock);
  if (s) memset(s, 0, sizeof *s);
  return s;
}

void span_desc_free(span_t *s) {
  span_desc_mark_dead(s);
  pthread_mutex_lock(&meta_lock);
  s->next = span_free_list;
  span_free_list = s;
  span_free_count++;
  span_freed_since++;
  pthread_mutex_unlock(&meta_lock);
}

/* n descriptors already marked freed (SPAN_DEAD, bytes 0), linked by
 * next from first (the page heap's stash, pages.c), onto the free list. */
void span_desc_free_dead(span_t *first, unsigned n) {
  if (!first) return;
  span_t *last = first;
  for (unsigned i = 1; i < n; i++) last = last->next;
  lt_assert(last->next == NULL);
  pthread_mutex_lock(&meta_lock);
  last->next = span_free_list;
  span_free_list = first;
  span_free_count += n;
  span_freed_since += n;
  pthread_mutex_unlock(&meta_lock);
}

/* In-place heapsort of n addresses, ascending: meta_collect's sort runs
 * under meta_lock and may not allocate (qsort may call malloc). */
static void sift_down(uintptr_t *a, size_t root, size_t n) {
  for (;;) {
    size_t c = 2 * root + 1;
    if (c >= n) return;
    if (c + 1 < n && a[c + 1] > a[c]) c++;
    if (a[root] >= a[c]) return;
    uintptr_t t = a[root];
    a[root] = a[c];
    a[c] = t;
    root = c;
  }
}

static void sort_addrs(uintptr_t *a, size_t n) {
  for (size_t k = n / 2; k-- > 0;) sift_down(a, k, n);
  while (n > 1) {
    uintptr_t t = a[0];
    a[0] = a[--n];
    a[n] = t;
    sift_down(a, 0, n);
  }
}

/* Record [start, start + bytes) as purged: a node, or false if none. */
static bool range_add(char *start, size_t bytes) {
  desc_range_t *r = node_free;
  if (r) node_free = r->next;
  else if (!(r = meta_alloc_locked(sizeof *r))) return false;
  r->start = start;
  r->bytes = bytes;
  r->next = purged_ranges;
  purged_ranges = r;
  return true;
}

/* Give back [run, run_end), whole free units whose descriptors are out of
 * every list (meta_collect holds them), and record it; false if it stays
 * (madvise refused, or no node for the range): its descriptors are then
 * rewritten whole, in case a part of it was dropped. */
static bool run_purge(char *run, char *run_end) {
  size_t bytes = (size_t)(run_end - run);
  bool ok = os_purge(run, bytes);
  if (ok) {
    pthread_mutex_lock(&meta_lock);
    ok = range_add(run, bytes);
    if (ok) {
      atomic_fetch_add_explicit(&purged_meta, bytes, memory_order_relaxed);
      atomic_fetch_sub_explicit(&os_stats.metadata, bytes, memory_order_relaxed);
    }
    pthread_mutex_unlock(&meta_lock);
  }
  if (!ok)
    for (char *d = run; d < run_end; d += sizeof(span_t)) {
      memset(d, 0, sizeof(span_t));
      ((span_t *)d)->kind = SPAN_DEAD;
    }
  return ok;
}

/* lithe_collect(true): give back every descriptor unit whose descriptors
 * are all free.  Returns the bytes purged.  The free list is taken whole
 * and sorted, purged and put back outside meta_lock (medium's 18,000
 * descriptors: a few ms), so other threads meanwhile carve fresh or
 * purged units instead of waiting. */
size_t meta_collect(void) {
  size_t ps = os_page_size(), purged = 0;
  pthread_mutex_lock(&meta_lock);
  size_t u = unit_size, per = unit_descs, n = span_free_count;
  if (!span_freed_since || !u || n < per) {
    pthread_mutex_unlock(&meta_lock);
    return 0;
  }
  span_t *list = span_free_list;
  span_free_list = NULL;
  span_free_count = 0;
  span_freed_since = 0;
  pthread_mutex_unlock(&meta_lock);
  /* the list's addresses, sorted, in a mapping of its own (not from
   * lithe's heap: this may run inside a call of malloc's family) */
  size_t mapped = 0;
  void *base;
  uintptr_t *a = os_map(n * sizeof *a, 0, &mapped, &base);
  span_t *head = list, *tail = NULL;
  size_t kept = n;
  if (a) {
    size_t i = 0;
    for (span_t *s = list; s; s = s->next) a[i++] = (uintptr_t)s;
    lt_assert_cmp(i, ==, n);
    sort_addrs(a, n);
    /* runs of whole free units: purged, and taken out of the array (0).
     * a[i] starts a unit if it is on a page boundary; the unit is free if
     * its last descriptor is a[i + per - 1] (the addresses are distinct,
     * so the per of them are all of the unit's). */
    char *run = NULL, *run_end = NULL;
    size_t run_first = 0; /* index of the run's first descriptor */
    for (i = 0; i <= n; i++) {
      char *unit = i < n ? (char *)a[i] : NULL;
      bool whole = i + per <= n && ((uintptr_t)unit & (ps - 1)) == 0 &&
                   a[i + per - 1] == (uintptr_t)unit + (per - 1) * sizeof(span_t);
      if (whole && unit == run_end) { /* extends the run */
        run_end += u;
        i += per - 1;
        continue;
      }
      if (run && run_purge(run, run_end)) {
        memset(&a[run_first], 0, (size_t)(run_end - run) / u * per * sizeof *a);
        purged += (size_t)(run_end - run);
      }
      run = run_end = NULL;
      if (whole) {
        run = unit;
        run_end = unit + u;
        run_first = i;
        i += per - 1;
      }
    }
    /* the rest, lowest address first (so the low units fill up and the
     * high ones stay free for the next collection) */
    head = NULL;
    kept = 0;
    for (i = n; i-- > 0;) {
      if (!a[i]) continue;
      span_t *s = (span_t *)a[i];
      if (!head) tail = s;
      s->next = head;
      head = s;
      kept++;
    }
  } else {
    for (tail = list; tail && tail->next; tail = tail->next) {}
  }
  pthread_mutex_lock(&meta_lock);
  if (head) { /* before what was freed meanwhile */
    tail->next = span_free_list;
    span_free_list = head;
    span_free_count += kept;
  }
  pthread_mutex_unlock(&meta_lock);
  if (a) os_unmap(a, mapped);
  return purged;
}

size_t meta_purged_bytes(void) { return atomic_load_explicit(&purged_meta, memory_order_relaxed); }

#if LITHE_DEBUG
/* Debug: the free list holds span_free_count descriptors, all SPAN_DEAD,
 * none inside a purged range, which are whole units (lithe_verify). */
void meta_verify(void) {
  size_t ps = os_page_size(), n = 0, ranged = 0;
  pthread_mutex_lock(&meta_lock);
  for (desc_range_t *r = purged_ranges; r; r = r->next) {
    lt_assert_v(((uintptr_t)r->start & (ps - 1)) == 0 && r->bytes && r->bytes % unit_size == 0, (uintptr_t)r->start);
    ranged += r->bytes;
  }
  lt_assert_cmp(ranged, ==, meta_purged_bytes());
  for (span_t *s = span_free_list; s; s = s->next) {
    lt_assert_v(s->kind == SPAN_DEAD && s->bytes == 0, (uintptr_t)s);
    for (desc_range_t *r = purged_ranges; r; r = r->next)
      lt_assert_v((char *)s < r->start || (char *)s >= r->start + r->bytes, (uintptr_t)s);
    n++;
  }
  lt_assert_cmp(n, ==, span_free_count);
  pthread_mutex_unlock(&meta_lock);
}
#endif
