/* SPDX-License-Identifier: MIT */
/* pagemap.c — address -> span descriptor, in O(1), for any address.
 *
 * Entries are stored as offsets so that free() reads them with the fewest
 * instructions (internal.h, pagemap_t: a span's address less lithe_flat.base,
 * 0 for none).  Two structures, each page in exactly one:
 *   the flat map: one entry per 8 KiB page from address 0 to the top of
 *       user space (the next power of two above the stack: 2^47 on x86-64,
 *       a 128 GiB PROT_READ reservation of zero pages: readable, so a
 *       lookup of a foreign pointer reads 0 instead of faulting; not
 *       writable, so not charged), committed in 64 KiB pieces, each
 *       covering 64 MiB of address space, only where lithe maps memory.
 *       free()'s fast path reads it with a shift, a bound and one load (the
 *       two-level map below took 11 instructions, the flat one 6);
 *   L1 + L2, as Go's arena index: 4096 words in .bss (32 KiB), indexed by
 *       address bits 47..36, each naming an L2 of 2^23 entries reserved and
 *       committed as the flat map is: for what the flat map does not cover
 *       (everything when its reservation is refused: ulimit -v).
 * So the committed size of the map grows with the heap (8 bytes per 8 KiB
 * page = 0.1 %), never with the address space.  Entries are written under
 * pagemap_lock or by the owner of the pages; readers take no lock.  This
 * map is also how free() proves a pointer is lithe's. */
#include <errno.h>
#include <string.h>
#include "internal.h"

pagemap_t lithe_pagemap BIG_BSS;
/* a line of its own: read by every free(), written once */
pagemap_flat_t lithe_flat __attribute__((aligned(CACHE_LINE))) = {(uintptr_t)&lithe_pagemap.none, 0};
static uint64_t *l2_pieces[L1_COUNT] BIG_BSS; /* bitmap: which 64 KiB pieces are RW */
/* A sparse level: its 64 MiB reservation was refused (ulimit -v), so only
 * the pieces in use are mapped, each at its place relative to the first.
 * A lookup elsewhere in it (a pointer that is not lithe's, in the same
 * 64 GiB of address space) then reads whatever is mapped there, or
 * faults: misuse is no longer always reported under such a limit.
 * A piece's place can be taken by another mapping (the kernel maps top
 * down, so the place just above the first piece usually is): the level is
 * then moved (relevel below), and while any level is sparse, writers take
 * pagemap_lock so that no entry is written into a level being copied. */
static bool l2_sparse[L1_COUNT] BIG_BSS;
static atomic_bool any_sparse;
pthread_mutex_t pagemap_lock = PTHREAD_MUTEX_INITIALIZER;

#define PIECE_ENTRIES (L2_PIECE / sizeof(span_t *))
#define PIECES_PER_L2 (L2_COUNT / PIECE_ENTRIES)

/* Level i1 is now at l2 (internal.h: the L1 entry is its address less
 * i1 * L2_BYTES).  An entry of 0 would read as "no level": a level placed
 * at exactly i1 * L2_BYTES (below 256 GiB, where mmap does not place
 * anything on Linux unless asked) cannot be published, and its caller
 * fails as when out of address space. */
static bool publishable(size_t i1, span_t **l2) { return (uintptr_t)l2 - i1 * L2_BYTES != 0; }
static void publish(size_t i1, span_t **l2) {
  lt_assert(publishable(i1, l2));
  atomic_store_explicit(&lithe_pagemap.l1[i1], (uintptr_t)l2 - i1 * L2_BYTES, memory_order_release);
}

/* Bits are only ever set, under pagemap_lock; pagemap_forget reads its
 * arena's bit (set before the arena was handed out) without the lock while
 * pagemap_ensure may set another bit of the same word: both sides atomic
 * (relaxed), or the word is a data race (TSan's stress_threads_collect
 * caught one). */
static bool piece_used(const uint64_t *bits, size_t piece) {
  return __atomic_load_n(&bits[piece / 64], __ATOMIC_RELAXED) & (1ull << (piece % 64));
}
static void piece_set(uint64_t *bits, size_t piece) {
  __atomic_fetch_or(&bits[piece / 64], 1ull << (piece % 64), __ATOMIC_RELAXED);
}

/* Map piece `piece` of a sparse level based at l2, at its place. */
static bool map_piece(span_t **l2, size_t piece) {
  return os_map_at(&l2[piece * PIECE_ENTRIES], L2_PIECE) != NULL;
}

/* Level i1 is sparse and piece `want`'s place is taken: give it a new base
 * where every piece in use and `want` fit, copy the pieces in use there and
 * publish it.  The dense reservation is tried first (the refusal may have
 * passed); else the highest piece needed is mapped anywhere and the others
 * at their places below it (the kernel maps top down, so the space below
 * its newest mapping is the likeliest to be free), a few times over.  The
 * old pieces stay mapped for good: a lookup without the lock may still be
 * reading the old level (it finds there every entry written before this
 * copy, which is all it can rely on).  Called with pagemap_lock held;
 * writers take it too while a level is sparse (pagemap_set). */
static span_t **relevel(size_t i1, span_t **old, size_t want) {
  lt_assert_held(&pagemap_lock);
  uint64_t *bits = l2_pieces[i1];
  size_t top = want;
  for (size_t p = 0; p < PIECES_PER_L2; p++)
    if (piece_used(bits, p) && p > top) top = p;
  span_t **l2 = os_reserve_readonly(L2_BYTES);
  if (l2 && !publishable(i1, l2)) {
    os_release(l2, L2_BYTES);
    l2 = NULL;
  }
  bool dense = l2 != NULL;
  if (dense) {
    size_t p = 0;
    for (; p < PIECES_PER_L2; p++)
      if ((piece_used(bits, p) || p == want) && !os_commit(&l2[p * PIECE_ENTRIES], L2_PIECE)) break;
    if (p < PIECES_PER_L2) {
      while (p-- > 0)
        if (piece_used(bits, p) || p == want) os_decommit(&l2[p * PIECE_ENTRIES], L2_PIECE);
      os_release(l2, L2_BYTES);
      return NULL;
    }
  } else {
    for (int tries = 0; tries < 4 && !l2; tries++) {
      char *anchor = os_map_at(NULL, L2_PIECE);
      if (!anchor) return NULL;
      l2 = (span_t **)((uintptr_t)anchor - top * L2_PIECE);
      if (!publishable(i1, l2)) {
        os_unmap(anchor, L2_PIECE);
        l2 = NULL;
        continue;
      }
      size_t p = 0;
      for (; p < top; p++)
        if ((piece_used(bits, p) || p == want) && !map_piece(l2, p)) break;
      if (p < top) {
        while (p-- > 0)
          if (piece_used(bits, p) || p == want) os_unmap(&l2[p * PIECE_ENTRIES], L2_PIECE);
        os_unmap(anchor, L2_PIECE);
        l2 = NULL;
      }
    }
    if (!l2) return NULL;
  }
  size_t pieces = 0;
  for (size_t p = 0; p < PIECES_PER_L2; p++) {
    if (piece_used(bits, p)) memcpy(&l2[p * PIECE_ENTRIES], &old[p * PIECE_ENTRIES], L2_PIECE);
    pieces += piece_used(bits, p) || p == want;
  }
  atomic_fetch_add_explicit(&os_stats.metadata, pieces * L2_PIECE, memory_order_relaxed);
  piece_set(bits, want);
  l2_sparse[i1] = !dense;
  publish(i1, l2);
  return l2;
}

/* Lowest address lithe maps memory at: the entries below it overlap the
 * flat map's `none` descriptor (a span_t at its base), which must stay
 * zero.  Linux maps nothing below mmap_min_addr (64 KiB) unless asked. */
#define MAP_LOW_LIMIT ((uintptr_t)1 * MiB)
_Static_assert(sizeof(span_t) / sizeof(uintptr_t) * PAGE_SIZE <= MAP_LOW_LIMIT, "none overlaps no entry in use");

/* The flat map, made once, at the first pagemap_ensure (pagemap_lock
 * held), before any entry is written.  It covers up to the next power of
 * two above the stack and lithe itself (the kernel maps below the stack),
 * or less where that is refused with no address-space limit set (valgrind
 * lends at most 32 GiB at once), down to one L2's worth; under a limit
 * (ulimit -v) only the whole, if under 1/16 of it, else none (the limit
 * is for the program's memory, and a map that misses the program's
 * mappings serves nothing).  A page outside it is in the two-level map,
 * whose frees take the slow path (alloc.c, free_slow: ~2x the
 * instructions of the fast one). */
static void flat_init(void) {
  static bool tried;
  if (tried) return;
  tried = true;
  uintptr_t hi = (uintptr_t)__builtin_frame_address(0);
  if ((uintptr_t)&lithe_pagemap > hi) hi = (uintptr_t)&lithe_pagemap;
  unsigned bits = 64 - (unsigned)__builtin_clzll(hi | 1);
  if (bits > ADDR_BITS) bits = ADDR_BITS;
  size_t limit = os_address_limit();
  for (unsigned top = bits; bits >= L1_SHIFT; bits--) {
    size_t pages = (size_t)1 << (bits - PAGE_SHIFT), bytes = pages * sizeof(uintptr_t);
    if (limit != SIZE_MAX && (bytes > limit / 16 || bits < top)) return;
    char *r = os_reserve_readonly(bytes);
    if (!r) continue;
    __atomic_store_n(&lithe_flat.base, (uintptr_t)r, __ATOMIC_RELAXED);
    __atomic_store_n(&lithe_flat.pages, pages, __ATOMIC_RELEASE);
    return;
  }
}

/* Make the entries for [p, p+size) writable. */
bool pagemap_ensure(const void *p, size_t size) {
  uintptr_t a = (uintptr_t)p, end = a + size - 1;
  if ((a >> ADDR_BITS) || (end >> ADDR_BITS) || a < MAP_LOW_LIMIT) return false;
  bool ok = true;
  pthread_mutex_lock(&pagemap_lock);
  flat_init();
  for (uintptr_t page = a >> PAGE_SHIFT; page <= end >> PAGE_SHIFT;) {
    size_t i1 = page >> (L1_SHIFT - PAGE_SHIFT);
    span_t **l2 = pagemap_level(i1);
    size_t i2 = page & (L2_COUNT - 1);
    size_t piece = i2 / PIECE_ENTRIES;
    if (l2 && !l2_pieces[i1]) { /* a slice of the flat map, first used */
      uint64_t *bits = meta_alloc(PIECES_PER_L2 / 8);
      if (!bits) { ok = false; break; }
      l2_pieces[i1] = bits;
    } else if (!l2) {
      uint64_t *bits = meta_alloc(PIECES_PER_L2 / 8);
      if (!bits) { ok = false; break; }
      l2 = os_reserve_readonly(L2_BYTES);
      /* once more before going sparse: a refusal may be passing */
      if (!l2) l2 = os_reserve_readonly(L2_BYTES);
      if (l2 && !publishable(i1, l2)) {
        os_release(l2, L2_BYTES);
        l2 = NULL;
      }
      if (!l2) {
        /* sparse: this piece anywhere; the level is placed around it */
        char *first = os_map_at(NULL, L2_PIECE);
        if (!first) { ok = false; break; }
        l2 = (span_t **)((uintptr_t)first - piece * L2_PIECE);
        if (!publishable(i1, l2)) {
          os_unmap(first, L2_PIECE);
          ok = false;
          break;
        }
        l2_sparse[i1] = true;
        atomic_store_explicit(&any_sparse, true, memory_order_relaxed);
        atomic_fetch_add_explicit(&os_stats.metadata, L2_PIECE, memory_order_relaxed);
        piece_set(bits, piece);
      }
      l2_pieces[i1] = bits;
      publish(i1, l2);
    }
    if (!piece_used(l2_pieces[i1], piece)) {
      span_t **at = &l2[piece * PIECE_ENTRIES];
      int saved = errno;
      errno = 0;
      bool got = !l2_sparse[i1] ? os_commit(at, L2_PIECE) : os_map_at(at, L2_PIECE) != NULL;
      /* ENOMEM, not EEXIST: no room for 64 KiB anywhere, so none for a
       * level moved elsewhere (a failing malloc at the limit made two
       * more failing mmaps for it) */
      bool no_room = errno == ENOMEM;
      errno = saved;
      if (got) {
        atomic_fetch_add_explicit(&os_stats.metadata, L2_PIECE, memory_order_relaxed);
        piece_set(l2_pieces[i1], piece);
      } else if (!l2_sparse[i1] || no_room || !relevel(i1, l2, piece)) {
        ok = false; /* out of memory or address space */
        break;
      }
    }
    page = (page | (PIECE_ENTRIES - 1)) + 1; /* next piece */
  }
  pthread_mutex_unlock(&pagemap_lock);
  return ok;
}

/* Callers have ensured the range.  While a level is sparse (a ulimit -v
 * far too small for the heap) it may be moved by relevel, so writers hold
 * pagemap_lock and read the level's address under it. */
void pagemap_set(const void *p, size_t npages, span_t *s) {
  uintptr_t page = (uintptr_t)p >> PAGE_SHIFT, end = page + npages;
  uintptr_t e = pagemap_span_entry(s);
  bool lock = atomic_load_explicit(&any_sparse, memory_order_relaxed);
  if (unlikely(lock)) pthread_mutex_lock(&pagemap_lock);
  /* a level at a time, its entries a plain fill: 4 instructions a page,
   * against 11 with the level looked up again for every page (large runs
   * are written whole, every page naming its run; the one-entry calls are
   * pagemap_set_one, inline: docs/lab/2026-12-06-page-heap-pagemap-writes.md) */
  while (page < end) {
    size_t i1 = page >> (L1_SHIFT - PAGE_SHIFT);
    uintptr_t *l2 = (uintptr_t *)pagemap_level(i1);
    lt_assert_v(l2 != NULL, page << PAGE_SHIFT); /* pagemap_ensure first */
    uintptr_t lim = (uintptr_t)(i1 + 1) << (L1_SHIFT - PAGE_SHIFT); /* the next level's first page */
    if (lim > end) lim = end;
#if LITHE_DEBUG
    /* every piece written is one pagemap_ensure made writable (the bits
     * and the bitmap's pointer were set by the caller's ensure, before) */
    for (uintptr_t q = page; q < lim; q = (q | (PIECE_ENTRIES - 1)) + 1)
      lt_assert_v(l2_pieces[i1] && piece_used(l2_pieces[i1], (q & (L2_COUNT - 1)) / PIECE_ENTRIES),
                  q << PAGE_SHIFT);
#endif
    uintptr_t *at = &l2[page & (L2_COUNT - 1)], *stop = at + (lim - page);
    while (at < stop) *at++ = e;
    page = lim;
  }
  if (unlikely(lock)) pthread_mutex_unlock(&pagemap_lock);
}

/* Entries [from, to) of one committed piece to 0, each written only if it
 * is not 0 already: a purged page of the map stays unfaulted. */
static void entries_clear(uintptr_t *from, uintptr_t *to) {
  for (uintptr_t *e = from; e < to; e++)
    if (*e) *e = 0;
}

/* [p, p+size) holds no span any more: an arena's top given back by
 * lithe_collect(true) (pages.c, pages_lock held).  Its entries read 0,
 * "not lithe's", as they did before the pages were first handed out, and
 * the whole OS pages of the map among them are purged: a 64 MiB arena
 * emptied by the program kept its 64 KiB of map resident (medium, ~1 GiB
 * of 1-8 KiB blocks freed, 19 arenas: 1.2 MB of the 1.4 MB lithe still
 * held after lithe_collect(true)).  Nothing of lithe's reads an entry
 * above an arena's bump pointer, and a stale one named a freed
 * descriptor: free() of such a pointer was reported as misuse and still
 * is. */
void pagemap_forget(const void *p, size_t size) {
  lt_assert_v((((uintptr_t)p | size) & (PAGE_SIZE - 1)) == 0, (uintptr_t)p); /* whole pages */
  uintptr_t page = (uintptr_t)p >> PAGE_SHIFT, end = page + (size >> PAGE_SHIFT);
  uintptr_t ps = os_page_size();
  bool lock = atomic_load_explicit(&any_sparse, memory_order_relaxed);
  if (unlikely(lock)) pthread_mutex_lock(&pagemap_lock);
  while (page < end) {
    size_t i1 = page >> (L1_SHIFT - PAGE_SHIFT), i2 = page & (L2_COUNT - 1);
    uintptr_t stop = (page | (PIECE_ENTRIES - 1)) + 1; /* this piece's end */
    if (stop > end) stop = end;
    uintptr_t *l2 = (uintptr_t *)pagemap_level(i1);
    if (l2 && l2_pieces[i1] && piece_used(l2_pieces[i1], i2 / PIECE_ENTRIES)) { /* a flat slice may be unused */
      uintptr_t *from = &l2[i2], *to = from + (stop - page);
      uintptr_t *lo = (uintptr_t *)align_up((uintptr_t)from, ps);
      uintptr_t *hi = (uintptr_t *)((uintptr_t)to & ~(ps - 1));
      if (lo < hi && os_purge(lo, (size_t)((char *)hi - (char *)lo))) {
        entries_clear(from, lo);
        entries_clear(hi, to);
      } else {
        entries_clear(from, to);
      }
    }
    page = stop;
  }
  if (unlikely(lock)) pthread_mutex_unlock(&pagemap_lock);
}

/* For the white-box test: whether level i1 maps only its pieces in use. */
bool pagemap_level_sparse(size_t i1) {
  pthread_mutex_lock(&pagemap_lock);
  bool sparse = l2_sparse[i1];
  pthread_mutex_unlock(&pagemap_lock);
  return sparse;
}

