/* pagemap.c — address -> span descriptor, in O(1), for any address.
 *
 * Two levels, as Go's arena index (seed 000):
 *   L1: 4096 pointers in .bss (32 KiB), indexed by address bits 47..36;
 *   L2: one per 64 GiB of address space actually used, 2^23 entries (one per
 *       8 KiB page), reserved PROT_READ (64 MiB of zero pages: readable, so a
 *       lookup of a foreign pointer reads 0 instead of faulting; not
 *       writable, so not charged) and committed in 64 KiB pieces, each
 *       covering 64 MiB of address space, only where lithe maps memory.
 * So the committed size of the map grows with the heap (8 bytes per 8 KiB
 * page = 0.1 %), never with the address space.  Entries are written under
 * pagemap_lock or by the owner of the pages; readers take no lock.  This
 * map is also how free() proves a pointer is lithe's. */
#include <string.h>
#include "internal.h"

span_t **_Atomic pagemap_l1[L1_COUNT];
static uint64_t *l2_pieces[L1_COUNT]; /* bitmap: which 64 KiB pieces are RW */
/* A sparse level: its 64 MiB reservation was refused (ulimit -v), so only
 * the pieces in use are mapped, each at its place relative to the first.
 * A lookup elsewhere in it (a pointer that is not lithe's, in the same
 * 64 GiB of address space) then reads whatever is mapped there, or
 * faults: misuse is no longer always reported under such a limit. */
static bool l2_sparse[L1_COUNT];
pthread_mutex_t pagemap_lock = PTHREAD_MUTEX_INITIALIZER;

#define PIECE_ENTRIES (L2_PIECE / sizeof(span_t *))
#define PIECES_PER_L2 (L2_COUNT / PIECE_ENTRIES)

/* Make the L2 entries for [p, p+size) writable. */
bool pagemap_ensure(const void *p, size_t size) {
  uintptr_t a = (uintptr_t)p, end = a + size - 1;
  if ((a >> ADDR_BITS) || (end >> ADDR_BITS)) return false;
  bool ok = true;
  pthread_mutex_lock(&pagemap_lock);
  for (uintptr_t page = a >> PAGE_SHIFT; page <= end >> PAGE_SHIFT;) {
    size_t i1 = page >> (L1_SHIFT - PAGE_SHIFT);
    span_t **l2 = atomic_load_explicit(&pagemap_l1[i1], memory_order_relaxed);
    size_t i2 = page & (L2_COUNT - 1);
    size_t piece = i2 / PIECE_ENTRIES;
    if (!l2) {
      uint64_t *bits = meta_alloc(PIECES_PER_L2 / 8);
      if (!bits) { ok = false; break; }
      l2 = os_reserve_readonly(L2_COUNT * sizeof(span_t *));
      /* once more before going sparse for good: a refusal may be passing */
      if (!l2) l2 = os_reserve_readonly(L2_COUNT * sizeof(span_t *));
      if (!l2) {
        /* sparse: this piece anywhere; the level is placed around it */
        char *first = os_map_at(NULL, L2_PIECE);
        if (!first) { ok = false; break; }
        l2 = (span_t **)((uintptr_t)first - piece * L2_PIECE);
        l2_sparse[i1] = true;
        atomic_fetch_add_explicit(&os_stats.metadata, L2_PIECE, memory_order_relaxed);
        bits[piece / 64] |= 1ull << (piece % 64);
      }
      l2_pieces[i1] = bits;
      atomic_store_explicit(&pagemap_l1[i1], l2, memory_order_release);
    }
    if (!(l2_pieces[i1][piece / 64] & (1ull << (piece % 64)))) {
      span_t **at = &l2[piece * PIECE_ENTRIES];
      if (l2_sparse[i1] ? !os_map_at(at, L2_PIECE) : !os_commit(at, L2_PIECE)) { ok = false; break; }
      atomic_fetch_add_explicit(&os_stats.metadata, L2_PIECE, memory_order_relaxed);
      l2_pieces[i1][piece / 64] |= 1ull << (piece % 64);
    }
    page = (page | (PIECE_ENTRIES - 1)) + 1; /* next piece */
  }
  pthread_mutex_unlock(&pagemap_lock);
  return ok;
}

/* Callers have ensured the range. */
void pagemap_set(const void *p, size_t npages, span_t *s) {
  uintptr_t page = (uintptr_t)p >> PAGE_SHIFT;
  for (size_t i = 0; i < npages; i++, page++) {
    span_t **l2 = atomic_load_explicit(&pagemap_l1[page >> (L1_SHIFT - PAGE_SHIFT)], memory_order_relaxed);
    lt_assert_v(l2 != NULL, page << PAGE_SHIFT); /* pagemap_ensure first */
    l2[page & (L2_COUNT - 1)] = s;
  }
}

void pagemap_set_one(const void *p, span_t *s) { pagemap_set(p, 1, s); }
