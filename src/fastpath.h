/* SPDX-License-Identifier: MIT */
/* fastpath.h — the hot path, on one screen: malloc of a small size and
 * free of a small block by the thread that owns it, both on the thread
 * heap's per-class bin (a LIFO list of free blocks).  No lock, no atomic
 * read-modify-write.  Everything else goes through heap.c / alloc.c.
 * Included by alloc.c (lithe's own calls) and override.c (the exported
 * malloc/free), so neither pays a call to reach it. */
#ifndef LITHE_FASTPATH_H
#define LITHE_FASTPATH_H
#include <errno.h>
#include "internal.h"

void free_slow(void *p, const char *op) INTERNAL;
void heap_bin_spill(heap_t *h, span_t *s, block_t *b) INTERNAL;
#if LITHE_SECURE
void *lithe_bin_pop_corrupt(size_t n, unsigned c, heap_t *h, block_t *b) INTERNAL; /* span.c */
#endif

/* This thread's bins (internal.h, heap_bins_t), addressed from the TLS
 * offset alone.  x86-64: the offset (initial-exec: one load from the GOT)
 * as a __seg_fs pointer, so that every access is %fs:(offset, class,
 * scale) and the offset's register serves them all (through
 * &lithe_tls_bins the compiler reads %fs:0 and adds the offset, the two
 * instructions the heap pointer's load took).  Elsewhere, and under
 * ThreadSanitizer, the variable itself. */
#if defined(__x86_64__) && defined(__SEG_FS) && !LT_TSAN
#define LT_TLS_SEG 1
typedef heap_bins_t __seg_fs tls_bins_t;
#define LT_ASM_NAME_(x) #x
#define LT_ASM_NAME(x) LT_ASM_NAME_(x) /* its link name, after names.h */
static inline tls_bins_t *tls_bins(void) {
  uintptr_t off;
  __asm__("movq " LT_ASM_NAME(lithe_tls_bins) "@gottpoff(%%rip), %0" : "=r"(off));
  return (tls_bins_t *)off;
}
#else
#define LT_TLS_SEG 0
typedef heap_bins_t tls_bins_t;
static inline tls_bins_t *tls_bins(void) { return &lithe_tls_bins; }
#endif

/* malloc: every small size (<= SMALL_MAX) is one table lookup away from
 * its class (internal.h, class_lut: by the size itself up to FINE_MAX,
 * by lut_index above); pop this thread's bin of that class.
 * Before set-up (and on a thread without a heap) the bins are all NULL,
 * so the first malloc lands in the slow path that sets everything up.  A
 * block handed out keeps neither the free-list link (word 0) nor the free
 * key (word 1). */
static inline void *malloc_inline(size_t n) {
  tls_bins_t *t = tls_bins();
#if LT_TLS_SEG
  /* the offset in rdx: GCC 12 left it in rax, the return register, and
   * moved the block there at the end (one move more) */
  __asm__("" : "+d"(t));
#endif
  /* the class: the table's entry n up to FINE_MAX (internal.h), else
   * the part of 16-byte steps.  Each branch loads its bin and the cold
   * one tests it too, so that GCC 12 keeps n in rdi and the block in rax
   * on the hot one: with one index for both branches (`i = n`, then
   * lut_index(n) above FINE_MAX) it moved n into rax first, and with the
   * class alone in the branches it returned the block through a move
   * (17 instructions either way, 16 so); the cold branch joins the hot
   * one after its NULL test (20, where a join before it took 21).  With
   * the two loads in a conditional expression GCC tested SMALL_MAX first,
   * and with a class of 0 for "too large" it tested the class (two
   * instructions more either way) */
  unsigned c;
  block_t *b;
  if (likely(n <= FINE_MAX)) {
    c = class_lut[n];
    b = t->bin[c];
  } else {
    if (n > SMALL_MAX) goto generic;
    c = class_lut[lut_index(n)];
    b = t->bin[c];
    if (b == NULL) goto generic;
  }
  if (likely(b != NULL)) {
    lt_assert_block(pagemap_lookup(b), b); /* a corrupted bin stops here (Debug) */
    /* heap profiling: one subtract and one compare (prof.c); b != NULL
     * proves the thread has a heap of its own (the slow paths below
     * load it) */
    t->prof_left = (intptr_t)((uintptr_t)t->prof_left - n); /* wraps, never UB */
    if (unlikely(t->prof_left < 0)) return prof_malloc(n, lithe_tls_heap); /* a tail jump */
#if LITHE_SECURE
    /* hardened build: a bad link, or a free key that is not the class's
     * (bytes 0-15 of the free block written since its free), leaves by a
     * tail jump too (span.c), so nothing stays live across a call and no
     * register is saved */
    block_t *next = block_next(b);
    if (unlikely(link_bad(next) || block_key(b) != lithe_class_key[c]))
      return lithe_bin_pop_corrupt(n, c, lithe_tls_heap, b);
    t->bin[c] = next;
#else
    t->bin[c] = block_pop_next(b);
#endif
    t->bin_room[c]++;
    block_clear(b); /* a block handed out holds no heap address */
    return b;
  }
  /* (sizes above ALLOC_MAX too: refused there, so that no call to
   * __errno_location sits in this function, for which clang 14 saved a
   * register and realigned the stack on the fast path too) */
generic:
  return heap_malloc_generic(n, lithe_tls_heap);
}

/* The owner's free of a block of span s onto s itself (a full bin):
 * `used` falling to the span's free_trigger sends it to the slow path
 * (heap.c: release when empty, refile a full span). */
static inline void span_push(heap_t *h, span_t *s, block_t *b) {
  int32_t used = (int32_t)--s->used;
  block_set_next(b, s->free);
  s->free = b;
  s->nfree++;
  if (unlikely(used <= s->free_trigger)) heap_free_local_slow(h, s);
}

#if LITHE_SECURE
/* b into a bin under its head (no immediate reuse, free_span).  The
 * links' encoding written out: b's link is head's old one re-keyed from
 * head's address to b's, (next ^ secret ^ head) ^ head ^ b, so the secret
 * cancels and is loaded once, for head's new link (cheaper than
 * block_next then block_set_next twice: docs/lab/2026-12-01-hardened-build-cost.md). */
static inline void bin_insert_second(block_t *head, block_t *b) {
  uintptr_t t = (uintptr_t)head ^ (uintptr_t)b;
  b->next = (block_t *)((uintptr_t)head->next ^ t);
  head->next = (block_t *)(t ^ lithe_link.secret);
}
#endif

/* The owner's free (the slow path's; free_inline spells it out with the
 * head check): push on its bin while it has room, else on the span (no
 * walk, no lookup: the span is in hand).  The key in word 1 marks the
 * block free. */
static inline void bin_push(heap_t *h, span_t *s, block_t *b, uintptr_t key) {
  unsigned c = s->bin_cls;
  heap_bins_t *t = h->bins;
  block_set_key(b, key);
  if (likely(--t->bin_room[c] >= 0)) {
#if LITHE_SECURE
    block_t *head = t->bin[c];
    if (likely(head != NULL)) { /* no immediate reuse: second (free_span) */
      bin_insert_second(head, b);
      return;
    }
#endif
    block_set_next(b, t->bin[c]);
    t->bin[c] = b;
    return;
  }
  heap_bin_spill(h, s, b);
}

/* Lemire's divisibility test: off is a block start <=> off * M < M
 * (mod 2^64), M = div_magic = floor(2^64 / block size) + 1, for off < 2^32
 * (spans are smaller).  Written "< M", not "<= M - 1", so M is loaded once
 * and serves the multiply and the compare (two instructions fewer). */
static inline bool small_block_start(const span_t *s, size_t off) {
  return off * s->div_magic < s->div_magic;
}

/* The same product answers "a block start below bump?" in one compare:
 * off * M < carved_lim, for every off = p - start with p and start below
 * 2^48 (negative ones wrapped), block sizes up to 2^15.  With e =
 * block_step (1 <= e <= size), off = k * size + r:
 *  - r = 0: the product is k * e (< 2^48, no wrap), below carved_lim =
 *    carved blocks * e exactly when k is a carved block;
 *  - r > 0: it is k * e + r * M, with M <= r * M < 2^64 - 2^64 / size +
 *    size and k * e < 2^48 <= 2^64 / size - size: no wrap, and at least
 *    M > 2^49 > any carved_lim;
 *  - off < 0 (p below start, by d < 2^48): 2^64 minus d's product (d's
 *    product, as above, at most 2^64 - 2^64 / size + size + 2^48), so at
 *    least 2^64 / size - size - 2^48 > 2^47 > any carved_lim.
 * carved_lim is 0 in every other kind of span.  An entry of the pagemap
 * may name a span elsewhere (the inner pages of a free run keep the
 * descriptor of what was there, maybe recycled since), so off is any such
 * value: all are covered.  tests/sanitize/sizeclass_table.c checks it
 * by brute force for every class. */
static inline bool small_carved_start(const span_t *s, size_t off) {
  return off * s->div_magic < span_carved_lim(s);
}

/* free: no NULL test up front (NULL finds no span and goes slow).  An
 * address the flat map does not cover leaves at its bound (free_unmapped,
 * which reads the two-level map and goes on as here); an address with no
 * span reads the `none` descriptor of zeros (internal.h, pagemap).  Then
 * free_span: one multiply
 * and one compare (small_carved_start) prove p is the start of a block of
 * a small span that has been handed out, and the key compare catches a double
 * free (confirmed by a scan in the slow path).  Then the block goes on
 * the freeing thread's bin (the head, loaded once, also serves the head
 * check and the link), whoever owns it: with no owner test, another
 * thread's block takes the way heap_free_remote gave it before (this
 * thread's bin while it has room).  What must not enter a thread's bin
 * fails the room test and leaves through heap_bin_spill: a first-class
 * heap's block (its span's bin_cls is 0, bin 0's room is never above 0)
 * and a free by a thread with no heap (its TLS rooms stay at or below
 * 0). */
void free_unmapped(void *p) INTERNAL; /* alloc.c */
static inline __attribute__((always_inline)) void free_span(void *p, span_t *s);
static inline void free_inline(void *p) {
  uintptr_t a = (uintptr_t)p;
  /* the flat map (internal.h): its bound, then its base, which also
   * decodes the entry */
  uintptr_t page = a >> PAGE_SHIFT;
#if defined(__x86_64__) && !LT_TSAN
  /* the bound's load inside the compare, and the asm's memory clobber
   * keeps the base's load after it (pagemap_flat_pages: an empty asm
   * between the two made GCC 12 load the bound into a register first) */
  __asm__ goto("cmpq %[n], %[page]\n\tjae %l[unmapped]"
                : : [n] "m"(lithe_flat.pages), [page] "r"(page) : "cc", "memory" : unmapped);
#else
  if (unlikely(page >= pagemap_flat_pages())) goto unmapped;
#endif
  uintptr_t map = pagemap_base();
  free_span(p, (span_t *)(map + ((const uintptr_t *)map)[page]));
  return;
unmapped:
  free_unmapped(p);
}

/* The rest of free, once the pagemap named s for p (`none` for no span). */
static inline __attribute__((always_inline)) void free_span(void *p, span_t *s) {
  size_t off = (size_t)((char *)p - s->start);
  block_t *b = p;
  uintptr_t key = span_free_key(s);
  if (unlikely(!small_carved_start(s, off) || block_key(b) == key)) goto slow;
  tls_bins_t *t = tls_bins();
  unsigned c = s->bin_cls;
  block_t *head = t->bin[c];
  /* b at the head of the bin: freed just before, its key overwritten */
  if (unlikely(b == head)) goto slow;
  block_set_key(b, key);
  /* decrement first (one read-modify-write and a sign test); a full bin
   * undoes it, off the fast path.  In asm on x86-64: GCC 12 computes
   * c + 0x52 into a register (an lea) to address bin_room[c] at 0x148,
   * in every C spelling tried (with bin_room first, bin[c] got the lea) */
#if LT_TLS_SEG
  __asm__ goto("subl $1, %%fs:%c[off](%[t],%q[c],4)\n\tjs %l[full]"
                : : [t] "r"(t), [c] "r"((uintptr_t)c), [off] "i"(offsetof(heap_bins_t, bin_room))
                : "cc", "memory" : full);
#else
  if (unlikely(--t->bin_room[c] < 0)) goto full;
#endif
#if LITHE_SECURE
  /* hardened build: no immediate reuse.  b goes in under the head, so the
   * next malloc of the class gets another block, and a write through the
   * stale pointer after it lands on a free block, whose link and key the
   * pop checks (malloc_inline).  An empty bin takes b as its head. */
  if (likely(head != NULL)) {
    /* b already under the head (freed just before, its key overwritten
     * since): the slow path's scan finds it there (the key is back) */
    uintptr_t x = (uintptr_t)head ^ (uintptr_t)b, raw = (uintptr_t)head->next;
    if (unlikely((raw ^ x) == lithe_link.secret)) {
      t->bin_room[c]++;
      goto slow;
    }
    b->next = (block_t *)(raw ^ x); /* bin_insert_second */
    head->next = (block_t *)(x ^ lithe_link.secret);
    return;
  }
#endif
  block_set_next(b, head);
  t->bin[c] = b;
  return;
full:
  /* full, or no heap (its rooms are 0): to the span (out of line, so the
   * decrement above stays one instruction) */
  heap_bin_spill(lithe_tls_heap, s, b);
  return;
slow:
  free_slow(p, "free");
}

/* The program's malloc and free (override.c, alloc.c): the two above, and
 * in the valgrind build memcheck told of the block (debug.h). */
static inline void *malloc_api(size_t n) { return lt_vg_malloced(malloc_inline(lt_vg_pad(n)), false); }
static inline void free_api(void *p) {
  if (lt_vg_freeing(p)) free_inline(p);
}

#endif
