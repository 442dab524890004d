/* SPDX-License-Identifier: MIT */
/* xlarge.c — objects above large_max: a mapping of their own, resized
 * with mremap (no copy) by realloc, or copied into cached memory when the
 * cache holds the new size (fresh pages cost more).  A freed one is kept
 * (the xlarge cache, below) for the purge delay and reused before any new
 * mapping, whole or in pieces moved together, so a program churning big
 * blocks does not fault every page in again (13-16 us a 4 KiB page here,
 * ~3-4 ns a byte).  large.c, above, decides which blocks come here. */
#include <errno.h>
#include <string.h>
#include "internal.h"

_Atomic size_t stat_xlarge_live;

/* An xlarge mapping of `bytes` (no lock held): near the limit
 * the free runs are purged first; past a hard limit, refused. */
static bool limit_allow_map(size_t bytes) {
  if (pages_usage(bytes) + bytes <= limit_bytes || !limit_hard) return true;
  limit_reclaim();
  pages_collect(true);
  if (pages_usage(bytes) + bytes <= limit_bytes) return true;
  errno = ENOMEM;
  return false;
}


/* ---- the xlarge cache -----------------------------------------------------
 * Freed xlarge memory, kept as ranges, newest first, under pages_lock (the
 * fork handlers already take it).  A range lies inside one kernel mapping
 * (so mremap can move it whole); its pages hold a freed block's bytes.  It
 * is counted in stat_xlarge_cached_bytes (resident and purgeable: pages_usage
 * adds it) and unmapped once it has been free for LITHE_PURGE_DELAY_MS
 * (purge_runs, pages.c, through page_caches), on lithe_collect, or when
 * the cache holds more than XCACHE_MAX ranges or XCACHE_MAX_BYTES (bounds
 * of bookkeeping, not of memory: what the cache holds never raises the
 * peak, since a request it cannot fill takes all it has and the rest is
 * given back, so live + cached only grows when nothing is cached).
 *
 * A request takes the smallest range that holds it (its front: a
 * remainder of XPIECE_MIN or more stays cached, no system call).  When
 * none does, the block is made of the biggest ranges, up to XPIECES_MAX:
 * the biggest moves with mremap onto a bigger reservation (its new tail is
 * fresh pages), and each next one is moved over that tail with mremap
 * (page tables move: no copy, no fault), so freed memory of any sizes
 * serves a bigger block and only what the ranges lack is faulted in.
 * Such a block is several mappings side by side; its pieces are listed
 * (span_t.map_next) so each goes back to the cache as a range of its own.
 * bench-bigchurn (16 live blocks of 1-32 MiB, 200 ops, blocks above 1 MiB
 * xlarge), minor faults: one range a block, grown on a miss, 248k; up to
 * 4 ranges, biggest first, 83k; up to 16 of at least 1 MiB, 29k; the last
 * one the best fit, 24k; and no 128 MiB bound on the cache, 15.3k (a
 * model with every freed byte reusable: 15.2k; tcmalloc 35k, glibc 156k).
 * A block spans about 3-5 ranges then (the model: mean 4.6, at most 8). */
#ifndef XCACHE_MAX
#define XCACHE_MAX 64
#endif
#ifndef XCACHE_MAX_BYTES
#define XCACHE_MAX_BYTES ((size_t)1 * GiB)
#endif
#define XPIECES_MAX 16               /* cached ranges one block takes */
#define XPIECE_MIN ((size_t)1 * MiB) /* smaller: not worth a range (a system
                                        call to move, a slot; the model:
                                        docs/lab/2026-12-05-xlarge-2mib-layout.md) */
/* The 2 MiB layout (always) and huge pages (LITHE_HUGEPAGES=1).
 *
 * mremap moves a page-table page whole (one PMD entry) only where source
 * and destination both lie on 2 MiB boundaries; anywhere else it copies
 * the 4 KiB entries one by one.  On the virtual machines lithe was
 * measured on the first write to each page moved entry by entry then
 * cost as much as half a fresh page (the hypervisor rebuilds its own
 * tables; docs/lab/2026-12-05-xlarge-2mib-layout.md).  So the cache keeps its
 * memory in whole 2 MiB units where it can: a fresh xlarge mapping of
 * 2 MiB or more starts on a 2 MiB boundary (not under an address-space
 * limit, where the over-map that aligns it counts), ranges are cut at
 * 2 MiB multiples from their (aligned) start, a freed piece's odd tail
 * (its length past the last 2 MiB multiple) becomes a range of its own,
 * and a block made of several ranges puts the odd ones first, placed so
 * that they end on a 2 MiB boundary, so the ranges of whole 2 MiB units
 * after them move with their page-table pages whole and its fresh rest
 * starts on a boundary too.  bench-bigchurn --ops 200 on that machine:
 * 14.4 ms an op with the layout only under LITHE_HUGEPAGES=1, 2.2 ms with
 * it always (docs/lab/2026-12-05-xlarge-2mib-layout.md).
 *
 * Huge pages, with LITHE_HUGEPAGES=1 (off by default: on the virtual
 * machines lithe is measured on, a fresh huge page is often backed by the
 * host only at its first touch, and a first touch can take several times
 * longer; docs/lab/2026-12-01-huge-pages-kept-whole.md): a fresh xlarge
 * mapping from malloc (not calloc) of 2 MiB or more is also advised
 * MADV_HUGEPAGE, and the layout above keeps its huge pages whole (mremap
 * splits a huge page moved to another 2 MiB phase into 4 KiB entries).
 * What it buys is faster writes to reused memory, and a huge page is one
 * fault, not 512.  What it costs: a fresh huge page is backed whole at
 * its first touch, so a block written only in its first 300 KiB holds
 * 2 MiB; calloc's blocks, often big sparse tables,
 * are left on 4 KiB pages, and a block's last partial 2 MiB (past the
 * last whole huge page of its mapping) is never a huge page. */
#define XPHASE ((size_t)2 * MiB)
_Static_assert((XPHASE & (XPHASE - 1)) == 0 && XPHASE % PAGE_SIZE == 0, "a power of two, whole lithe pages");
static inline size_t xphase_up(size_t n) { return align_up(n, XPHASE); }

/* A reservation of `bytes` that starts `shift` bytes past a 2 MiB
 * boundary (a lithe page multiple), so that what mremap moves there from
 * that phase keeps its page-table pages whole.  Lithe-page aligned only
 * under 2 MiB (no whole page-table page to keep) and under an
 * address-space limit (the over-map that aligns it would count). */
static char *xphase_reserve(size_t bytes, size_t shift) {
  lt_assert_v(shift % PAGE_SIZE == 0 && shift < XPHASE, shift);
  if (bytes < XPHASE || os_address_limit() != SIZE_MAX) return os_reserve(bytes, PAGE_SIZE, 0);
  char *dest = os_reserve(bytes + shift, XPHASE, 0);
  if (dest && shift) {
    os_release(dest, shift);
    dest += shift;
  }
  return dest;
}
static span_list_t xcache;
/* Written under pages_lock; xcache_take peeks at it without the lock (a
 * stale 0 only maps afresh), so it is atomic, read and written relaxed. */
static _Atomic size_t xcache_n;

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

static void xrange_unmap(span_t *r) {
  r->next = NULL;
  xcache_unmap_list(r);
}

static void xcache_add_locked(span_t *r, uint64_t freed_ms) {
  lt_assert_held(&pages_lock);
  r->start = r->map_base;
  r->bytes = r->map_bytes;
  r->map_next = NULL;
  r->freed_ms = freed_ms;
  list_push_front(&xcache, r);
  atomic_fetch_add_explicit(&xcache_n, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&stat_xlarge_cached_bytes, r->map_bytes, memory_order_relaxed);
}

static void xcache_del_locked(span_t *r) {
  lt_assert_held(&pages_lock);
  list_remove(&xcache, r);
  atomic_fetch_sub_explicit(&xcache_n, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&stat_xlarge_cached_bytes, r->map_bytes, memory_order_relaxed);
}

/* Take ranges off, oldest first: all of them, or those expired and any
 * beyond the bounds; returns them linked through `next`. */
static span_t *xcache_trim_locked(uint64_t by, bool all) {
  span_t *out = NULL;
  long delay = lithe_opt.purge_delay_ms;
  for (span_t *s = xcache.last, *prev; s; s = prev) {
    prev = s->prev;
    bool expired = delay >= 0 && by - s->freed_ms >= (uint64_t)delay;
    if (!all && !expired && atomic_load_explicit(&xcache_n, memory_order_relaxed) <= XCACHE_MAX &&
        atomic_load_explicit(&stat_xlarge_cached_bytes, memory_order_relaxed) <= XCACHE_MAX_BYTES)
      break;
    xcache_del_locked(s);
    s->next = out;
    out = s;
  }
  return out;
}

/* When the oldest cached range has waited the purge delay (UINT64_MAX:
 * none, or no delay). */
uint64_t xcache_due(void) {
  lt_assert_held(&pages_lock);
  long delay = lithe_opt.purge_delay_ms;
  uint64_t due = UINT64_MAX;
  if (delay > 0)
    for (span_t *r = xcache.first; r; r = r->next)
      if (r->freed_ms + (uint64_t)delay < due) due = r->freed_ms + (uint64_t)delay;
  return due;
}

bool xcache_expire(uint64_t by, bool all) {
  lt_assert_held(&pages_lock);
  span_t *gone = NULL;
  if (atomic_load_explicit(&xcache_n, memory_order_relaxed)) gone = xcache_trim_locked(by, all);
  xcache_unmap_list(gone);
  return gone != NULL;
}

/* The page heap committed `bytes` of fresh arena pages (pages.c, under
 * pages_lock): as many cached bytes go back, oldest first (a range's
 * tail, or all of it when less than XPIECE_MIN would stay), so cached
 * xlarge memory does not add to the peak while small and large objects
 * grow the heap: replay_sqlite (a 1 -> 16 MiB realloc ladder among small
 * objects) peaked at 193.6 MB with large max 1 MiB, 132.7 with 16 MiB
 * (page runs serve both), 163.6 with this rule, and 133.0 once free page
 * runs served blocks above large max too (large_alloc_zero). */
void xcache_yield(size_t bytes) {
  lt_assert_held(&pages_lock);
  while (bytes && atomic_load_explicit(&xcache_n, memory_order_relaxed)) {
    span_t *r = xcache.last;
    size_t cut = align_up(bytes, PAGE_SIZE);
    if (r->map_bytes < cut + XPIECE_MIN) {
      xcache_del_locked(r);
      bytes -= bytes < r->map_bytes ? bytes : r->map_bytes;
      xrange_unmap(r);
    } else {
      os_unmap(r->map_base + r->map_bytes - cut, cut);
      r->map_bytes -= cut;
      r->bytes = r->map_bytes;
      atomic_fetch_sub_explicit(&stat_xlarge_cached_bytes, cut, memory_order_relaxed);
      bytes = 0;
    }
  }
}

/* Free the descriptors of a block's other pieces (its mapping is gone). */
static void xpieces_free(span_t *s) {
  for (span_t *p = s->map_next, *next; p; p = next) {
    next = p->map_next;
    span_desc_free(p);
  }
  s->map_next = NULL;
}

/* A freed block's pieces become cached ranges (too-small ones are
 * unmapped).  false: not cached, the caller unmaps it. */
static bool xcache_put(span_t *s) {
  if (lithe_opt.purge_delay_ms == 0 || s->block_size /* aligned */ || s->map_base != s->start ||
      (unlikely(limit_pressure_at) && atomic_load_explicit(&limit_pressure, memory_order_relaxed)))
    return false;
  span_t *small = NULL;
  pthread_mutex_lock(&pages_lock);
  uint64_t now = os_now_ms();
  char *end = s->map_base + s->map_bytes;
  for (span_t *r = s, *next; r; r = next) {
    next = r->map_next;
    r->map_bytes = (size_t)((next ? next->map_base : end) - r->map_base);
    /* a block's last piece under XPIECE_MIN is its odd tail, split off
     * when it was freed before (below): kept, the ranges side by side
     * serve the same size again with no system call (xcache_take_adjacent;
     * given back, each second request of a size moved the block to grow
     * it: stress_aligned's sweep, 4 MiB + 8 KiB 22 times) */
    if (r->map_bytes < XPIECE_MIN && !(r != s && !next && r->map_bytes < XPHASE)) {
      r->next = small;
      small = r;
      continue;
    }
    /* an odd tail is a range of its own, so the whole huge pages before
     * it can go anywhere aligned (one under XPIECE_MIN is given back when
     * it comes back from its next block) */
    size_t odd = r->map_bytes & (XPHASE - 1);
    span_t *t;
    if (odd && r->map_bytes > XPHASE && !((uintptr_t)r->map_base & (XPHASE - 1)) &&
        (t = span_desc_alloc())) {
      t->kind = SPAN_XLARGE;
      t->map_base = r->map_base + r->map_bytes - odd;
      t->map_bytes = odd;
      r->map_bytes -= odd;
      xcache_add_locked(t, now);
    }
    xcache_add_locked(r, now);
  }
  span_t *old = xcache_trim_locked(now, false);
  pages_waiting(now);
  pthread_mutex_unlock(&pages_lock);
  xcache_unmap_list(small);
  xcache_unmap_list(old);
  return true;
}

/* A block of `bytes` made of cached ranges pick[0..k) (address order as
 * given): pick[0] moves to a new place of `total` bytes, `shift` bytes past
 * a 2 MiB boundary (its tail fresh pages), each next range is moved over
 * the tail, and
 * `tail` (a descriptor, or NULL when the ranges fill the block) describes
 * what stays fresh.  *dirty: how many leading bytes hold old data.  NULL
 * when the kernel refuses: what could not be used is unmapped. */
static span_t *xassemble(span_t **pick, unsigned k, size_t total, size_t shift, span_t *tail,
                         size_t *dirty) {
  lt_assert_v((shift & (PAGE_SIZE - 1)) == 0, shift);
  span_t *h = pick[0];
  size_t got = h->map_bytes;
  char *q = h->map_base;
  unsigned i = 1;
  bool head_gone = false;
  if (total > got) {
    /* Onto a reservation of ours on a lithe page: mremap's own choice of
     * address is only OS-page aligned, and a block starts on a lithe page
     * (posix_memalign of 8 KiB takes cached memory too: fuzz_alloc found
     * one misaligned).  Under an address-space limit the reservation
     * would count the block twice (api_cxx's new_handler child failed so):
     * there mremap places it, and a place off a lithe page is given up. */
    char *dest = os_address_limit() == SIZE_MAX ? xphase_reserve(total, shift) : NULL;
    if (dest) {
      q = os_move(h->map_base, got, total, dest);
    } else {
      q = os_remap(h->map_base, got, total);
      if (q && ((uintptr_t)q & (PAGE_SIZE - 1))) {
        os_unmap(q, total);
        span_desc_free(h);
        head_gone = true;
        q = NULL;
      }
    }
    if (!q) goto refused;
  }
  h->start = h->map_base = q;
  h->map_bytes = total;
  span_t **link = &h->map_next;
  for (; i < k; i++) {
    span_t *p = pick[i];
    int r = os_move_over(p->map_base, p->map_bytes, q + got);
    if (r < 0) { /* [q + got, + p's length) is not ours to unmap */
      os_unmap(q, got);
      if (q + got + p->map_bytes < q + total)
        os_unmap(q + got + p->map_bytes, total - got - p->map_bytes);
      xpieces_free(h);
      span_desc_free(h);
      h = NULL;
      break;
    }
    if (r == 0) break; /* the block stays as it is: the rest fresh */
    p->start = p->map_base = q + got;
    *link = p;
    link = &p->map_next;
    got += p->map_bytes;
  }
  if (h && got < total && tail) { /* (one range grown: one mapping, no tail) */
    tail->kind = SPAN_XLARGE;
    tail->start = tail->map_base = q + got;
    tail->map_bytes = total - got;
    *link = tail;
    tail = NULL;
  }
  *dirty = got;
refused:
  for (; i < k; i++) xrange_unmap(pick[i]); /* not moved: given back */
  if (!q && !head_gone) xrange_unmap(pick[0]);
  if (tail) span_desc_free(tail);
  return q ? h : NULL;
}

/* Cached ranges that lie side by side and hold `bytes` with less than
 * XPIECE_MIN to spare, taken as a block of several pieces where they lie
 * (no system call), or NULL.  Such ranges are most often the pieces of a
 * block that was assembled and freed whole: xcache_put caches each piece
 * apart, and without this every later request of the same size moved
 * them all again.  The run chosen is the smallest that holds the block
 * (then the one of fewest pieces).  MallocBench's stress_aligned asks, at
 * each size from 16 MiB to 2 GiB, 22 times for nearly that many bytes
 * (aligned to 8 B .. 8 KiB, and 128 B more), freeing each at once, with
 * 50 MB of 1-4 MiB blocks cached: 2,035 mremaps per run, its time 1.9x
 * glibc's; with this, the size and its 8 KiB more are assembled once
 * each.  A run with more to spare is left to xassemble (the biggest
 * ranges first): taken in place with its last piece cut, its small pieces
 * served big blocks, the ranges multiplied (35 cached on average against
 * 31) and more blocks found that 16 of them could not hold them --
 * bench-bigchurn's ops made 20.1-21.7k minor faults, 15.4k so, as before
 * side-by-side reuse (stress_aligned's takes the same: 111 blocks from
 * side-by-side ranges a run). */
#define XRUN_MAX (XCACHE_MAX + 2 * XPIECES_MAX) /* ranges looked at */
static span_t *xcache_take_adjacent(size_t bytes) {
  lt_assert_held(&pages_lock);
  span_t *by_addr[XRUN_MAX];
  unsigned n = 0;
  for (span_t *r = xcache.first; r && n < XRUN_MAX; r = r->next) {
    unsigned i = n++; /* insertion sort by address: n is small */
    while (i > 0 && by_addr[i - 1]->map_base > r->map_base) {
      by_addr[i] = by_addr[i - 1];
      i--;
    }
    by_addr[i] = r;
  }
  unsigned best = 0, best_k = 0;
  size_t best_len = SIZE_MAX;
  for (unsigned i = 0; i < n; i++) {
    size_t len = by_addr[i]->map_bytes;
    unsigned j = i;
    while (len < bytes && j + 1 < n && by_addr[j]->map_base + by_addr[j]->map_bytes == by_addr[j + 1]->map_base)
      len += by_addr[++j]->map_bytes;
    if (len >= bytes && j > i && (len < best_len || (len == best_len && j + 1 - i < best_k))) {
      best = i;
      best_k = j + 1 - i;
      best_len = len;
    }
  }
  /* (the block keeps whole 2 MiB units: it may hold up to the next 2 MiB) */
  if (!best_k || (best_len > xphase_up(bytes) && best_len - xphase_up(bytes) >= XPIECE_MIN)) return NULL;
  span_t *h = by_addr[best], **link = &h->map_next;
  for (unsigned i = best; i < best + best_k; i++) {
    span_t *p = by_addr[i];
    xcache_del_locked(p);
    p->start = p->map_base;
    if (p != h) {
      *link = p;
      link = &p->map_next;
    }
  }
  *link = NULL;
  h->map_bytes = best_len; /* the block's whole extent: xcache_put and unmap */
  h->bytes = bytes;
  return h;
}

/* Cached memory for a block of `bytes`, or NULL.  *dirty: how many leading
 * bytes of it hold old data (the rest reads as zero).  whole: only a range,
 * or ranges side by side, that hold the block where they lie (no system
 * call, no fresh page); else the biggest ranges moved together too. */
static span_t *xcache_take(size_t bytes, size_t *dirty, bool whole) {
  /* a racy peek: a miss only maps afresh */
  if (!atomic_load_explicit(&xcache_n, memory_order_relaxed)) return NULL;
  pthread_mutex_lock(&pages_lock);
  span_t *best = NULL;
  for (span_t *r = xcache.first; r; r = r->next)
    if (r->map_bytes >= bytes && (!best || r->map_bytes < best->map_bytes)) best = r;
  if (best) {
    xcache_del_locked(best);
    span_t *rest;
    size_t cut = xphase_up(bytes);
    if (best->map_bytes > cut && best->map_bytes - cut >= XPIECE_MIN && (rest = span_desc_alloc())) {
      rest->kind = SPAN_XLARGE;
      rest->map_base = best->map_base + cut;
      rest->map_bytes = best->map_bytes - cut;
      xcache_add_locked(rest, best->freed_ms);
      best->map_bytes = cut;
    }
    pthread_mutex_unlock(&pages_lock);
    /* The block is what was asked (malloc_usable_size, free_sized's
     * check), even in a range up to XPIECE_MIN bigger (unmapping such a
     * remainder when over 1/8 of the block: bench-bigchurn 26.0k -> 28.1k
     * faults in one A/B); map_bytes stays the range's length for unmap,
     * mremap and the cache. */
    best->bytes = bytes;
    *dirty = bytes;
    return best;
  }
  if ((best = xcache_take_adjacent(bytes)) || whole) {
    pthread_mutex_unlock(&pages_lock);
    *dirty = bytes;
    return best;
  }
  /* none holds it: the biggest ranges, until one holds what is still
   * needed; that last one is the smallest that does (its front, if it has
   * more), so big ranges are not cut up for small ends */
  span_t *pick[XPIECES_MAX];
  unsigned k = 0;
  size_t got = 0;
  while (k < XPIECES_MAX && got < bytes) {
    size_t need = bytes - got;
    span_t *big = NULL, *fit = NULL;
    for (span_t *r = xcache.first; r; r = r->next) {
      if (!big || r->map_bytes > big->map_bytes) big = r;
      if (r->map_bytes >= need && (!fit || r->map_bytes < fit->map_bytes)) fit = r;
    }
    if (fit) big = fit;
    if (!big) break;
    xcache_del_locked(big);
    span_t *front;
    size_t cut = xphase_up(need);
    if (big->map_bytes > cut && big->map_bytes - cut >= XPIECE_MIN &&
        (front = span_desc_alloc())) {
      front->kind = SPAN_XLARGE;
      front->map_base = big->map_base;
      front->map_bytes = cut;
      big->map_base += cut;
      big->map_bytes -= cut;
      xcache_add_locked(big, big->freed_ms);
      big = front;
    }
    pick[k++] = big;
    got += big->map_bytes;
  }
  /* a block bigger than all the cache holds: the program grows, and what
   * it did not take would only add to the peak (bench-bigchurn kept the
   * smaller cached mappings on a miss: peak 522 MB; gave them back: 406) */
  /* odd ranges (tails) first, the block placed so that they end on a
   * 2 MiB boundary: the ranges of whole huge pages after them and the
   * fresh rest then start on one, and mremap moves their huge pages whole */
  size_t shift = 0;
  {
    span_t *even[XPIECES_MAX];
    unsigned e = 0, o = 0;
    for (unsigned i = 0; i < k; i++) {
      if (pick[i]->map_bytes & (XPHASE - 1)) {
        shift += pick[i]->map_bytes;
        pick[o++] = pick[i];
      } else {
        even[e++] = pick[i];
      }
    }
    for (unsigned i = 0; i < e; i++) pick[o + i] = even[i];
    shift = (XPHASE - (shift & (XPHASE - 1))) & (XPHASE - 1);
  }
  span_t *others = got < bytes ? xcache_trim_locked(0, true) : NULL;
  pthread_mutex_unlock(&pages_lock);
  xcache_unmap_list(others);
  if (!k) return NULL;
  size_t total = got > bytes ? got : bytes;
  span_t *tail = NULL;
  if (got < total && k > 1 && !(tail = span_desc_alloc())) {
    for (unsigned i = 1; i < k; i++) xrange_unmap(pick[i]);
    k = 1; /* grown alone, it needs no tail descriptor */
  }
  if (unlikely(limit_pressure_at) && got < total && !limit_allow_map(total - got)) {
    for (unsigned i = 0; i < k; i++) xrange_unmap(pick[i]);
    if (tail) span_desc_free(tail);
    return NULL;
  }
  span_t *s = xassemble(pick, k, total, shift, tail, dirty);
  if (s) s->bytes = bytes;
  return s;
}

/* cached_only: a block only from cached memory that holds it whole
 * (xcache_take), else NULL with nothing mapped. */
void *xlarge_alloc(size_t size, size_t align, bool zero, bool cached_only) {
  size_t mapped;
  void *base;
  if (align <= PAGE_SIZE) {
    size_t dirty;
    span_t *s = xcache_take(align_up(size, PAGE_SIZE), &dirty, cached_only);
    if (s && !pagemap_ensure(s->start, PAGE_SIZE)) {
      os_unmap(s->map_base, s->map_bytes);
      xpieces_free(s);
      span_desc_free(s);
      s = NULL;
    }
    if (s) {
      /* calloc zeroes what holds old data; the fresh rest reads as zero */
      if (zero) {
        lt_vg_writable(s->start, dirty < size ? dirty : size); /* valgrind build: freed blocks */
        memset(s->start, 0, dirty < size ? dirty : size);
      }
      pagemap_set_one(s->start, s);
      atomic_fetch_add_explicit(&stat_xlarge_live, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&stat_xlarge_bytes, s->map_bytes, memory_order_relaxed);
      stat_in_use(s->map_bytes, 0);
      return s->start;
    }
  }
  if (cached_only) return NULL;
  if (align < PAGE_SIZE) align = PAGE_SIZE; /* fresh mappings read as zero */
  if (unlikely(limit_pressure_at) && !limit_allow_map(align_up(size, PAGE_SIZE))) return NULL;
  bool phase = align <= XPHASE && size >= XPHASE && os_address_limit() == SIZE_MAX;
  char *p = os_map(align_up(size, PAGE_SIZE), phase ? XPHASE : align, &mapped, &base);
  if (!p && atomic_load_explicit(&xcache_n, memory_order_relaxed)) {
    /* the cache holds address space too: under ulimit -v it may be what
     * is missing (regress_ulimit_v saw python3 fail to start under 16 MiB
     * once, with blocks above 1 MiB cached; not reproduced in 10 runs) */
    pthread_mutex_lock(&pages_lock);
    xcache_expire(0, true);
    pthread_mutex_unlock(&pages_lock);
    p = os_map(align_up(size, PAGE_SIZE), phase ? XPHASE : align, &mapped, &base);
  }
  if (!p) return NULL;
  if (phase && !zero && lithe_opt.hugepages) os_hugepage(p, mapped);
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
  atomic_fetch_add_explicit(&stat_xlarge_live, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&stat_xlarge_bytes, mapped, memory_order_relaxed);
  stat_in_use(mapped, 0);
  return p;
}

/* A page run handed out as a large block (NULL stays NULL). */

/* An xlarge block freed: to the cache, else (near the memory limit) its
 * pages to the page heap, else unmapped. */
void xlarge_free(span_t *s) {
  pagemap_set_one(s->start, &freed_xlarge);
  atomic_fetch_sub_explicit(&stat_xlarge_live, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&stat_xlarge_bytes, s->map_bytes, memory_order_relaxed);
  stat_in_use(0, s->map_bytes);
  if (xcache_put(s)) { pages_purge_poll(); return; }
  /* near the memory limit: its pages serve the page heap (pages.c) */
  if (unlikely(limit_pressure_at) && atomic_load_explicit(&limit_pressure, memory_order_relaxed) &&
      !s->map_next && s->map_base == s->start && pages_adopt(s->map_base, s->map_bytes)) {
    span_desc_free(s);
    return;
  }
  os_unmap(s->map_base, s->map_bytes); /* every piece: they lie side by side */
  xpieces_free(s);
  span_desc_free(s);
}

/* Resize xlarge block s to size (above large_max, not aligned) in place
 * or by mremap: its (possibly moved) address, or NULL to copy instead. */
void *xlarge_resize(span_t *s, size_t size) {
  size_t bytes = align_up(size, PAGE_SIZE);
  if (bytes == s->map_bytes) { /* a reused mapping may hold more than the block */
    s->bytes = bytes;
    return s->start;
  }
  if (s->map_next) {
    /* several mappings: mremap moves one at a time, so a bigger block is
     * copied; a smaller one keeps its place and gives back its tail */
    if (bytes > s->map_bytes) return NULL;
    if (s->map_bytes - bytes >= XPIECE_MIN) {
      char *end = s->start + bytes;
      os_unmap(end, s->map_bytes - bytes);
      span_t **link = &s->map_next;
      while (*link && (*link)->map_base < end) link = &(*link)->map_next;
      for (span_t *p = *link, *next; p; p = next) {
        next = p->map_next;
        span_desc_free(p);
      }
      *link = NULL;
      atomic_fetch_sub_explicit(&stat_xlarge_bytes, s->map_bytes - bytes, memory_order_relaxed);
      stat_in_use(0, s->map_bytes - bytes);
      s->map_bytes = bytes;
    }
    s->bytes = bytes;
    return s->start;
  }
  /* Growing while the cache holds the whole new size: the caller copies
   * the block into cached memory (malloc, copy, free) instead of growing
   * it by fresh pages: a copy costs a fraction of a nanosecond a byte, a
   * fresh page ~3-4 ns a byte here (a realloc ladder of 1 -> 64 MiB, in
   * docs/lab/2026-12-05-xlarge-2mib-layout.md).  The old block goes to
   * the cache, so resident memory does not grow. */
  if (bytes > s->map_bytes && atomic_load_explicit(&stat_xlarge_cached_bytes, memory_order_relaxed) >= bytes)
    return NULL;
  char *q = os_resize(s->map_base, s->map_bytes, bytes);
  /* valgrind build: no move by mremap (memcheck would keep the block at
   * its old address); the caller copies it to a new block instead */
  if (!q && LITHE_VALGRIND) return NULL;
  if (!q) {
    /* Move: reserve the destination and make its pagemap entry writable
     * first, so that once mremap has moved the block nothing can fail
     * (the old block must stay intact when NULL is returned). */
    char *dest = xphase_reserve(bytes, (uintptr_t)s->map_base & (XPHASE - 1));
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
  atomic_fetch_add_explicit(&stat_xlarge_bytes, bytes - s->map_bytes, memory_order_relaxed);
  stat_in_use(bytes > s->map_bytes ? bytes - s->map_bytes : 0, bytes < s->map_bytes ? s->map_bytes - bytes : 0);
  s->start = s->map_base = q;
  s->bytes = s->map_bytes = bytes;
  pagemap_set_one(q, s);
  return q;
}
