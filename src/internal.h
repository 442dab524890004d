/* SPDX-License-Identifier: MIT */
/* lithe internal header: every layer's prototypes and the inline helpers
 * the hot path needs, over the types and tunables of types.h.  The
 * overview of the whole design is at the top of alloc.c. */
#ifndef LITHE_INTERNAL_H
#define LITHE_INTERNAL_H

#include "types.h"   /* tunables and types (includes names.h, debug.h) */

void lock_reinit(pthread_mutex_t *m) INTERNAL; /* heap.c: a forked child's lock anew */

/* span_t.bump and span_t.carved_lim (which counts the blocks below bump)
 * are written by the owner (span_extend) while frees from other threads
 * read them to refuse never-handed-out blocks: both sides use relaxed
 * atomic accesses (plain loads and stores on x86-64 and arm64; without them
 * it is a data race, and TSan reports it).  Relaxed is enough: bump only
 * grows while the span holds blocks, and a block a thread frees was carved
 * (bump moved past it) before that thread got the pointer -- whatever
 * handed the pointer over orders the carve before the free -- so every
 * value the free can read lies above the block.  A free that sees an older
 * bump than the owner's refuses only blocks nobody can own yet. */
static inline char *span_bump(const span_t *s) {
  return __atomic_load_n(&s->bump, __ATOMIC_RELAXED);
}
static inline void span_set_bump(span_t *s, char *bump) {
  __atomic_store_n(&s->bump, bump, __ATOMIC_RELAXED);
}

/* Which pages of a free run (pages.c) may be resident.
 * A free run merged from a purged run and a freed one holds both: counted
 * resident whole (as it was), the freed blocks' neighbours made the limit
 * (limit.c) purge other runs' real pages for pages that were not there,
 * and the next phase faulted the difference in
 * (docs/lab/2026-12-02-near-the-memory-limit.md).  So a run says where its resident pages may lie and
 * how many they are at most (span_t.dirty_lo, dirty_hi, dirty_n); pages
 * outside that window read as zero.  A split gives each part the window's
 * piece in it, and the count, at most that piece (so an upper bound: the
 * limit is never passed for a count too low); a merge joins the windows
 * and adds the counts; a purge purges only the window.  run_dirty_all:
 * the whole run (large.c's run cache sets it too). */
static inline void run_clean(span_t *s) {
  s->dirty = 0;
  s->dirty_lo = s->dirty_hi = NULL;
  s->dirty_n = 0;
}

/* Run t, a part of run s (or s itself after its bounds moved), takes the
 * piece of s's window that lies in it. */
static inline void run_dirty_part(span_t *t, const span_t *s) {
  char *lo = s->dirty_lo > t->start ? s->dirty_lo : t->start;
  char *end = t->start + t->bytes, *hi = s->dirty_hi < end ? s->dirty_hi : end;
  size_t n = s->dirty_n;
  if (!s->dirty || lo >= hi) {
    run_clean(t);
    return;
  }
  t->dirty = 1;
  t->dirty_lo = lo;
  t->dirty_hi = hi;
  t->dirty_n = n < (size_t)(hi - lo) ? n : (size_t)(hi - lo);
}

/* `into` (grown to cover both) takes `other`'s resident pages too. */
static inline void run_dirty_merge(span_t *into, const span_t *other) {
  if (!other->dirty) return;
  if (!into->dirty) {
    into->dirty_lo = other->dirty_lo;
    into->dirty_hi = other->dirty_hi;
    into->dirty_n = other->dirty_n;
  } else {
    if (other->dirty_lo < into->dirty_lo) into->dirty_lo = other->dirty_lo;
    if (other->dirty_hi > into->dirty_hi) into->dirty_hi = other->dirty_hi;
    into->dirty_n += other->dirty_n;
  }
  into->dirty = 1;
}

/* All of run s may hold resident pages: its window (span_t.dirty_lo,
 * dirty_hi, dirty_n; pages.c) is the whole run. */
static inline void run_dirty_all(span_t *s) {
  s->dirty = 1;
  s->dirty_lo = s->start;
  s->dirty_hi = s->start + s->bytes;
  s->dirty_n = s->bytes;
}
/* free()'s reads of words another thread may write (carved_lim, owner),
 * which take whatever value they find, as a relaxed load does: under TSan
 * a relaxed atomic load, elsewhere a plain load.  The machine code of the
 * two is the same aligned move on x86-64 and arm64, but GCC (12) folds
 * only the plain one into the compare that uses it: free() is two
 * instructions shorter.  The slow paths use the atomic accessors. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
#define LT_TSAN 1
#else
#define LT_TSAN 0
#endif
#if LT_TSAN
static inline uint64_t span_carved_lim(const span_t *s) { return __atomic_load_n(&s->carved_lim, __ATOMIC_RELAXED); }
static inline struct heap_s *span_owner_fast(const span_t *s) {
  return atomic_load_explicit(&s->owner, memory_order_relaxed);
}
#else
static inline uint64_t span_carved_lim(const span_t *s) { return s->carved_lim; }
static inline struct heap_s *span_owner_fast(const span_t *s) { return *(struct heap_s *const *)&s->owner; }
#endif
static inline void span_set_carved_lim(span_t *s, uint64_t lim) {
  __atomic_store_n(&s->carved_lim, lim, __ATOMIC_RELAXED);
}
/* off * div_magic (mod 2^64) at block k's start: k * block_step, with
 * block_step = size * div_magic - 2^64, between 1 and the block size. */
static inline uint64_t block_step(const span_t *s) { return (uint64_t)s->block_size * s->div_magic; }

/* span_t.kind of a span in use changes outside pages_lock (pages_alloc
 * hands a run out as LARGE, span_init_small makes it SMALL) while the page
 * heap, under the lock, reads the kind of a neighbouring run to decide
 * whether to coalesce with it: relaxed atomic accesses on both sides (plain
 * moves).  The reader only asks "FREE or not?", and a run becomes FREE, or
 * stops being FREE, only under pages_lock, so the answer is exact. */
static inline uint8_t span_kind(const span_t *s) {
  return __atomic_load_n(&s->kind, __ATOMIC_RELAXED);
}
static inline void span_set_kind(span_t *s, uint8_t kind) {
  __atomic_store_n(&s->kind, kind, __ATOMIC_RELAXED);
}

/* ---- free-list links ---------------------------------------------------
 * Every read and write of a free block's link goes through these.  Release
 * build: the plain pointer (the same code as b->next).  Hardened build
 * (-DLITHE_SECURE=1: make secure, build/liblithe-secure.so): the link is
 * stored XORed with a per-process secret and the address of the word that
 * holds it (glibc's safe-linking, with a key as in mimalloc's encoded
 * lists).  An overflow from the block before, or a write through a stale
 * pointer, that changes a link makes it decode to noise; block_pop_next,
 * on every pop of a bin or a span's free list, refuses a link that is not
 * NULL, 16-byte aligned and below 2^47 (noise passes with a chance of
 * 2^-21; forging a link needs the secret) and reports the block whose link
 * was overwritten instead of following it. */
#ifndef LITHE_SECURE
#define LITHE_SECURE 0
#endif
#if LITHE_SECURE
/* The secret, and the bits a decoded link must not have (the low 4: not
 * 16-byte aligned; 47 and up: above user space), side by side on one
 * line.  The mask is read from memory, not a constant, so that the check
 * is one `test` with a memory operand and a branch (a 64-bit constant
 * mask takes a movabs into a register first; the rotate-and-shift before
 * it took a mov, a ror and a shr). */
typedef struct __attribute__((aligned(64))) { /* a line of its own: read by every
                                                  malloc and free, never written */
  uintptr_t secret; /* set once by process_init (init.c) */
  uintptr_t bad;    /* LINK_BAD_BITS */
} lithe_link_keys_t;
#define LINK_BAD_BITS (~(((uintptr_t)1 << 47) - 1) | 15)
extern lithe_link_keys_t lithe_link INTERNAL;
static inline uintptr_t link_mask(const block_t *at) { return lithe_link.secret ^ (uintptr_t)at; }
#else
static inline uintptr_t link_mask(const block_t *at) { (void)at; return 0; }
#endif
/* (valgrind build: lt_vg_open / lt_vg_close make the word accessible to
 * memcheck for just this access of a free block; nothing in the others) */
static inline block_t *block_next(const block_t *b) {
  lt_vg_open(&b->next, sizeof b->next);
  block_t *n = (block_t *)((uintptr_t)b->next ^ link_mask(b));
  lt_vg_close(&b->next, sizeof b->next);
  return n;
}
static inline void block_set_next(block_t *b, block_t *next) {
  lt_vg_open(&b->next, sizeof b->next);
#if LITHE_SECURE
  /* next ^ b first and the secret from memory last: free's push keeps b
   * live, and secret ^ b first took a copy of b (one instruction more);
   * the empty asm keeps GCC from reassociating the XORs back */
  uintptr_t x = (uintptr_t)next ^ (uintptr_t)b;
  __asm__("" : "+r"(x));
  b->next = (block_t *)(x ^ lithe_link.secret);
#else
  b->next = (block_t *)((uintptr_t)next ^ link_mask(b));
#endif
  lt_vg_close(&b->next, sizeof b->next);
}
#if LITHE_SECURE
block_t *lithe_link_corrupt(block_t *b) INTERNAL; /* reports; NULL */
block_t *lithe_key_corrupt(block_t *b) INTERNAL;  /* reports; NULL */
/* the block under a bin's head, where free puts the block it frees (no
 * immediate reuse, fastpath.h); NULL for an empty bin */
static inline block_t *bin_second(const block_t *head) { return head ? block_next(head) : NULL; }
extern uintptr_t lithe_class_key[NCLASSES] INTERNAL; /* span.c: span_free_key by class */
void span_secure_init(void) INTERNAL; /* span.c: the carve's window orders */
/* not NULL-or-16-byte-aligned-below-2^47.  x86-64: `test` and the flag
 * as the result, two instructions (GCC writes `x & mask` as a copy and an
 * `and`, which destroy the register, three). */
static inline bool link_bad(const block_t *n) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool bad;
  __asm__("test %2, %1" : "=@ccnz"(bad) : "r"((uintptr_t)n), "m"(lithe_link.bad));
  return bad;
#else
  return (uintptr_t)n & lithe_link.bad;
#endif
}
static inline block_t *block_pop_next(block_t *b) {
  block_t *n = block_next(b);
  if (unlikely(link_bad(n))) return lithe_link_corrupt(b);
  return n;
}
#else
static inline block_t *block_pop_next(block_t *b) { return block_next(b); }
#endif
/* The free key in word 1 (a free block's mark).  Valgrind build: a block
 * memcheck holds addressable is one lithe handed out (the two track the
 * same blocks), so its word 1 is the program's data, not looked at: 0. */
static inline uintptr_t block_key(const block_t *b) {
#if LITHE_VALGRIND
  if (lithe_vg_addressable(&b->key, sizeof b->key)) return 0;
#endif
  lt_vg_open(&b->key, sizeof b->key);
  uintptr_t k = b->key;
  lt_vg_close(&b->key, sizeof b->key);
  return k;
}
static inline void block_set_key(block_t *b, uintptr_t key) {
  lt_vg_open(&b->key, sizeof b->key);
  b->key = key;
  lt_vg_close(&b->key, sizeof b->key);
}
/* A block handed out keeps neither the link nor the key: no heap address
 * or key left for the program to read. */
static inline void block_clear(block_t *b) {
  lt_vg_open(b, sizeof *b);
  b->next = NULL;
  b->key = 0;
  lt_vg_close(b, sizeof *b);
}

/* ---- globals and layer interfaces -------------------------------------- */

/* options.c */
extern options_t lithe_opt INTERNAL;
void options_init(void) INTERNAL;
/* one parser for every option (options.c): a refused value is said on
 * stderr with what is used instead, and *val keeps its default */
const char *option_get(const char *name) INTERNAL;
void option_refuse(const char *name, const char *value, const char *why, const char *instead) INTERNAL;
bool option_size(const char *name, size_t *val, size_t min, size_t max, const char *instead) INTERNAL;
bool option_ms(const char *name, long *val, long min, long max) INTERNAL;
bool option_bool(const char *name, bool *val) INTERNAL;
bool option_enum(const char *name, int *val, const char *const *words, int n) INTERNAL;
void options_report(void) INTERNAL; /* LITHE_VERBOSE: once every layer has read its options */
__attribute__((noreturn)) void lithe_fatal(const char *msg) INTERNAL;
void lithe_report(const char *op, const void *p, const char *what) INTERNAL;
void lithe_warn(const char *msg, size_t value) INTERNAL;
void fmt_hex(char *out, uintptr_t v) INTERNAL;
size_t fmt_dec(char *out, uint64_t v) INTERNAL;
/* A write(2) buffer on the caller's stack, for everything lithe prints
 * that is longer than a line (heap profiles, leak and stats reports):
 * nothing allocates, so it works inside malloc and at exit.  failed: a
 * write returned an error (the rest was dropped). */
typedef struct {
  int fd;
  bool failed;
  size_t n;
  char buf[4096];
} out_t;
bool out_write(int fd, const char *s, size_t n) INTERNAL; /* all of it; false on error */
void out_flush(out_t *o) INTERNAL;
void out_str(out_t *o, const char *s) INTERNAL;
void out_dec(out_t *o, uint64_t v, int width) INTERNAL; /* right-aligned in width */
void out_hex(out_t *o, uintptr_t v) INTERNAL;            /* 0x... */

/* os.c: the only file that calls mmap / mprotect / madvise / munmap */
size_t os_page_size(void) INTERNAL;
void *os_reserve(size_t size, size_t align, size_t fallback) INTERNAL; /* PROT_NONE; else fallback-aligned */
void *os_reserve_readonly(size_t size) INTERNAL;                /* PROT_READ zero pages */
bool os_commit(void *p, size_t size) INTERNAL;                  /* -> RW */
void os_decommit(void *p, size_t size) INTERNAL;                /* -> PROT_NONE, pages freed */
bool os_purge(void *p, size_t size) INTERNAL;                   /* MADV_DONTNEED; true: all zero */
bool os_resident(void *p, size_t size, unsigned char *vec) INTERNAL; /* mincore: one byte an OS page */
void *os_map(size_t size, size_t align, size_t *mapped, void **base) INTERNAL; /* RW */
void os_unmap(void *p, size_t size) INTERNAL;
void os_hugepage(void *p, size_t size) INTERNAL;              /* MADV_HUGEPAGE */
void *os_map_at(void *at, size_t size) INTERNAL;               /* RW, exactly at `at` */
void os_release(void *p, size_t size) INTERNAL;                 /* never-committed reserve */
void *os_resize(void *p, size_t old_size, size_t new_size) INTERNAL; /* mremap in place */
void *os_move(void *p, size_t old_size, size_t new_size, void *dest) INTERNAL; /* onto a reserve */
void *os_remap(void *p, size_t old_size, size_t new_size) INTERNAL; /* anywhere */
int os_move_over(void *p, size_t size, void *dest) INTERNAL;   /* pages onto fresh ones */
void os_random(void *buf, size_t n) INTERNAL;
uint64_t os_now_ms(void) INTERNAL;
size_t os_address_limit(void) INTERNAL;                         /* RLIMIT_AS */
int os_peek(const void *from, void *to, size_t n) INTERNAL;     /* read, never fault */
typedef struct os_stats_s {
  _Atomic size_t reserved, committed, os_calls, purges, metadata;
  /* the report's peaks (stats.c), raised where the counters grow, all off
   * the fast path; in_use: pages handed out for the program's objects
   * (spans and large runs, pages.c) and xlarge mappings (large.c) */
  _Atomic size_t peak_reserved, peak_committed, in_use, peak_in_use;
} os_stats_t;
extern os_stats_t os_stats INTERNAL;
/* *peak = max(*peak, now) */
static inline void stat_raise(_Atomic size_t *peak, size_t now) {
  size_t p = atomic_load_explicit(peak, memory_order_relaxed);
  while (now > p && !atomic_compare_exchange_weak_explicit(peak, &p, now, memory_order_relaxed,
                                                           memory_order_relaxed)) {}
}
/* counter += n, raising its peak */
static inline void stat_add(_Atomic size_t *c, _Atomic size_t *peak, size_t n) {
  stat_raise(peak, atomic_fetch_add_explicit(c, n, memory_order_relaxed) + n);
}
static inline void stat_in_use(size_t add, size_t sub) { /* os_stats.in_use += add - sub */
  if (add) stat_add(&os_stats.in_use, &os_stats.peak_in_use, add);
  if (sub) atomic_fetch_sub_explicit(&os_stats.in_use, sub, memory_order_relaxed);
}

/* pagemap.c.  Entries are stored so that free() reads them with the
 * fewest instructions:
 *  - the flat map: one entry per page from address 0 up to the top of user
 *    space, one array at lithe_flat.base (8 bytes per 8 KiB page: 128 GiB
 *    reserved PROT_READ for 2^47 bytes, committed in 64 KiB pieces only
 *    where lithe maps memory), so the entry of address a is the word at
 *    base + (a >> PAGE_SHIFT) * 8: a shift, a bound and one load;
 *  - an entry holds its span's address less base (0: no span), and the
 *    first bytes at base are a descriptor of zeros, `none` (the entries of
 *    the lowest pages, which lithe never maps: pagemap_ensure refuses
 *    them), whose carved test fails: free() reads "no span" with one add,
 *    no NULL test and no branch.
 * Addresses the flat map does not cover (all of them when its reservation
 * is refused: ulimit -v) are in a two-level map, lithe_pagemap.l1 (the
 * slow paths read both; free()'s fast path only the flat one):
 *  - L1 entry i1 holds its level's address less i1 * L2_BYTES (0: no
 *    level), so the L2 entry of address a is the word at that value plus
 *    (a >> PAGE_SHIFT) * 8: one shift, no mask (pagemap_level gives the
 *    level's own address); its entries are coded as the flat map's.
 * Without a flat map base is &lithe_pagemap.none and pages 0: every
 * free() takes the slow path. */
typedef struct pagemap_s {
  span_t none;         /* base's `none` when there is no flat map */
  _Atomic uintptr_t l1[L1_COUNT];
} pagemap_t;
extern pagemap_t lithe_pagemap INTERNAL;
/* Set once, before any entry is written: base first, then pages (a
 * release store), so a reader that loads pages before base and finds it
 * not 0 has the flat map's base too, even in a free racing with the set-up
 * (on x86-64 plain loads in that order: the hardware keeps loads in order;
 * one line, read by every free). */
typedef struct {
  uintptr_t base;      /* entries decode as base + e                    */
  size_t pages;        /* pages the flat map covers: free()'s bound      */
} pagemap_flat_t;
extern pagemap_flat_t lithe_flat INTERNAL;
#define L2_BYTES (L2_COUNT * sizeof(uintptr_t))
/* lithe_flat.pages, then (pagemap_base) .base, in that order.  A plain
 * load on x86-64 (GCC folds it into the compare that uses it) and an
 * empty asm after it, so that GCC keeps the base's load after it; an
 * acquire load elsewhere and under TSan. */
static inline size_t pagemap_flat_pages(void) {
#if defined(__x86_64__) && !LT_TSAN
  size_t n = lithe_flat.pages;
  __asm__ volatile("" ::: "memory");
  return n;
#else
  return __atomic_load_n(&lithe_flat.pages, __ATOMIC_ACQUIRE);
#endif
}
static inline uintptr_t pagemap_base(void) {
#if LT_TSAN
  return __atomic_load_n(&lithe_flat.base, __ATOMIC_RELAXED);
#else
  return lithe_flat.base;
#endif
}
static inline uintptr_t pagemap_l1_entry(size_t i1) {
  return atomic_load_explicit(&lithe_pagemap.l1[i1], memory_order_relaxed);
}
/* level i1's own address (NULL: none): a slice of the flat map, or a
 * level of its own */
static inline span_t **pagemap_level(size_t i1) {
  if (i1 < pagemap_flat_pages() >> (L1_SHIFT - PAGE_SHIFT)) return (span_t **)(pagemap_base() + i1 * L2_BYTES);
  uintptr_t e = pagemap_l1_entry(i1);
  return e ? (span_t **)(e + i1 * L2_BYTES) : NULL;
}
/* the L2 entry of address a, given its L1 entry (not 0) */
static inline uintptr_t pagemap_l2_entry(uintptr_t l1e, uintptr_t a) {
  return *(const uintptr_t *)(l1e + (a >> PAGE_SHIFT) * sizeof(uintptr_t));
}
static inline span_t *pagemap_entry_span(uintptr_t e) { /* `none` for 0 */
  return (span_t *)(pagemap_base() + e);
}
static inline uintptr_t pagemap_span_entry(const span_t *s) {
  return s ? (uintptr_t)s - pagemap_base() : 0;
}
bool pagemap_ensure(const void *p, size_t size) INTERNAL;  /* commit entries for range */
void pagemap_set(const void *p, size_t npages, span_t *s) INTERNAL;
void pagemap_forget(const void *p, size_t size) INTERNAL; /* no span there now */
/* One entry.  In the flat map a store: its levels are never moved (only a
 * level of its own can be sparse and moved, pagemap.c), so no lock.  The
 * page heap writes a free run's two edges this way at every insert
 * (pages.c, size_list_insert): through pagemap_set they cost several
 * times the instructions (docs/lab/2026-12-06-page-heap-pagemap-writes.md). */
static inline void pagemap_set_one(const void *p, span_t *s) {
  uintptr_t page = (uintptr_t)p >> PAGE_SHIFT;
  if (likely(page < pagemap_flat_pages())) {
    ((uintptr_t *)pagemap_base())[page] = pagemap_span_entry(s);
    return;
  }
  pagemap_set(p, 1, s);
}
bool pagemap_level_sparse(size_t i1) INTERNAL; /* white-box test */

static inline span_t *pagemap_lookup(const void *p) {
  uintptr_t a = (uintptr_t)p, e;
  bool flat = (a >> PAGE_SHIFT) < pagemap_flat_pages();
  uintptr_t m = pagemap_base();
  if (likely(flat)) {
    e = ((const uintptr_t *)m)[a >> PAGE_SHIFT];
  } else {
    if (unlikely(a >> ADDR_BITS)) return NULL;
    uintptr_t l1e = pagemap_l1_entry(a >> L1_SHIFT);
    if (unlikely(l1e == 0)) return NULL;
    e = pagemap_l2_entry(l1e, a);
  }
  return e ? (span_t *)(m + e) : NULL;
}

/* meta.c: fixed metadata (span descriptors, heaps, arenas) */
void *meta_alloc(size_t size) INTERNAL;   /* zeroed, never returned to the OS */
span_t *span_desc_alloc(void) INTERNAL;
void span_desc_free(span_t *s) INTERNAL;
void span_desc_free_dead(span_t *first, unsigned n) INTERNAL; /* n freed ones linked by next */
/* A descriptor freed (span_desc_free, or the page heap's stash, pages.c):
 * a stale pagemap lookup sees a dead span with an empty range. */
static inline void span_desc_mark_dead(span_t *s) {
  lt_assert_v(s->kind != SPAN_DEAD, (uintptr_t)s); /* freed twice */
  s->kind = SPAN_DEAD;
  s->bytes = 0;
}
size_t meta_collect(void) INTERNAL;       /* lithe_collect(true): free descriptor pages back */
size_t meta_purged_bytes(void) INTERNAL;  /* descriptor pages given back now */

/* sizeclass.c */
extern const uint8_t class_lut[LUT_ENTRIES] INTERNAL;
extern uint32_t class_size[NCLASSES] INTERNAL;
extern uint32_t class_span_bytes[NCLASSES] INTERNAL;
extern uint32_t class_first_span_bytes[NCLASSES] INTERNAL;
void sizeclass_init(void) INTERNAL;

/* The class_lut index of a small size (n <= SMALL_MAX), in the part of
 * 16-byte steps (malloc_inline uses the other part up to FINE_MAX). */
static inline size_t lut_index(size_t n) { return LUT_COARSE + ((n + 15) >> 4); }
static inline unsigned size_class(size_t n) { return class_lut[lut_index(n)]; }

/* arena.c: arenas (pages_lock held) */
extern arena_t *arena_list INTERNAL;
extern size_t arena_total INTERNAL;
extern bool arena_starved INTERNAL;
arena_t *arena_new(size_t min_bytes) INTERNAL;
bool arena_commit_to(arena_t *a, char *need) INTERNAL;
void arena_decommit_above(arena_t *a, char *top) INTERNAL;
size_t arena_trim_tails(void) INTERNAL;

/* pages.c: the page heap */
/* the caches above it (large.c, xlarge.c), registered by large_init: see pages.c */
typedef struct {
  bool (*reclaim)(uint64_t now, uint64_t by, uint64_t prev, bool all, bool hinted); /* lcache_reclaim */
  uint64_t (*reclaim_due)(uint64_t now);                                            /* lcache_due */
  bool (*expire)(uint64_t by, bool all);                                            /* xcache_expire */
  uint64_t (*expire_due)(void);                                                     /* xcache_due */
  void (*yield)(size_t bytes);                                                      /* xcache_yield */
} page_caches_t;
extern const page_caches_t *page_caches INTERNAL;
extern pthread_mutex_t pages_lock INTERNAL;
extern size_t large_max INTERNAL;
extern _Atomic uint32_t pages_epoch INTERNAL;
span_t *pages_alloc(size_t npages, size_t align) INTERNAL;   /* kind FREE->caller sets */
span_t *pages_alloc_free(size_t npages) INTERNAL;             /* free runs (fresh: near the limit) or NULL */
bool pages_adopt(void *p, size_t bytes) INTERNAL;              /* a mapping's pages become a free run */
void pages_free(span_t *s) INTERNAL;                          /* takes pages_lock */
void pages_release_locked(span_t *s, uint64_t freed_ms) INTERNAL; /* pages_free, lock held */
void pages_release_list_locked(span_t *list, uint64_t freed_ms) INTERNAL; /* each of a list */
span_t *pages_alloc_after(size_t npages, size_t align, span_t *back) INTERNAL; /* frees `back` first */
bool pages_try_resize(span_t *s, size_t npages, bool fresh_ok) INTERNAL; /* in place */
size_t pages_collect(bool force) INTERNAL;                    /* purge; returns bytes */
void pages_waiting(uint64_t freed_ms) INTERNAL;               /* pages_lock held: memory waits */
void pages_purge_poll(void) INTERNAL;                         /* no lithe lock held: purge what is due */
void pages_fork_child(void) INTERNAL;
/* pages.c's purge state, for the purge thread (purge.c); pages_lock held */
extern pthread_cond_t purge_cond INTERNAL;
extern _Atomic bool purger_running INTERNAL;
extern uint64_t purge_due_ms INTERNAL, purger_lead_ms INTERNAL;
void purger_init(void) INTERNAL;
uint64_t purge_lead_ms(void) INTERNAL;
size_t purge_runs(uint64_t now, uint64_t by, bool force, size_t keep) INTERNAL;

/* purge.c */
typedef int (*purger_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
void purger_start(purger_create_fn create) INTERNAL; /* never inside an allocation call */
purger_create_fn purger_libc_create(void) INTERNAL;      /* override.c: libc's own */
void pages_init(void) INTERNAL;
size_t pages_arena_count(void) INTERNAL;
size_t pages_purged_bytes(void) INTERNAL;
void pages_walk(void (*fn)(const span_t *s, void *arg), void *arg) INTERNAL;

/* introspect.c: one consistent pass over the arenas (under pages_lock),
 * for mallinfo2 / malloc_info / malloc_stats and the JSON statistics.
 * Exact when no other thread allocates meanwhile; otherwise a snapshot
 * whose block counts may lag by the blocks in flight. */
typedef struct class_stats_s {
  size_t spans;        /* spans of this class (in use, cached or abandoned) */
  size_t blocks_live;  /* blocks handed out and not freed                 */
  size_t blocks_free;  /* blocks carved or never used, not handed out     */
  size_t span_bytes;   /* bytes of those spans                            */
} class_stats_t;
typedef struct heap_walk_s {
  class_stats_t cls[NCLASSES];
  size_t small_live_bytes;  /* blocks_live * block size, all classes       */
  size_t small_free_bytes;
  size_t large_live, large_bytes;   /* page-run objects                    */
  size_t large_cached, large_cached_bytes; /* freed ones in the threads' caches */
  size_t free_runs, free_bytes;     /* page-heap runs and their bytes      */
  size_t free_dirty_bytes;          /* ... whose pages may be resident     */
} heap_walk_t;
void heap_walk(heap_walk_t *w) INTERNAL;
void heaps_binned(uint64_t out[NCLASSES]) INTERNAL; /* free blocks in bins, per class */
size_t pages_usage(size_t more) INTERNAL; /* bytes that may be resident (limit.c) */

/* limit.c: the memory limit (LITHE_MEMORY_LIMIT, or the cgroup's) */
extern size_t limit_bytes INTERNAL, limit_pressure_at INTERNAL; /* 0: none */
extern bool limit_hard INTERNAL;
extern _Atomic bool limit_pressure INTERNAL; /* usage >= 90 % of the limit */
void limit_init(void) INTERNAL;
void limit_pressure_collect(void) INTERNAL;
extern void (*limit_reclaim)(void) INTERNAL; /* heaps_reclaim (thread.c), set by heap_key_init */

/* span.c */
void span_init_small(span_t *s, unsigned cls) INTERNAL;
bool span_extend(span_t *s) INTERNAL;
uint32_t span_collect_remote(span_t *s) INTERNAL;
void span_purge_uncarved(span_t *s) INTERNAL;
bool span_contains_free(span_t *s, block_t *b) INTERNAL;

/* heap.c: the shared empty heap, a thread's heap and bins in TLS */
#define EMPTY_ROW(x) [0 ... NCLASSES - 1] = x /* every class: x */
extern __thread heap_t *lithe_tls_heap INTERNAL __attribute__((tls_model("initial-exec")));
extern __thread heap_bins_t lithe_tls_bins INTERNAL __attribute__((tls_model("initial-exec")));
extern heap_t lithe_empty_heap INTERNAL;
extern span_t lithe_empty_span INTERNAL;
/* The free key a free block of span s holds in word 1.  Release build:
 * the descriptor's address, which free() has in a register already (a
 * global key cost a load on every free), and which no block handed out
 * holds: the program is never given a descriptor's address, and malloc
 * clears word 1.  A match is only a suspicion, confirmed by a scan, so a
 * program that stores that value costs only time.  Hardened build: the
 * span's division magic (floor(2^64 / block size) + 1: never 0, as fresh
 * memory is), so a use after free that reads word 1 learns no metadata
 * address, only the class.  free() loads it for the block-start test
 * anyway, so the key costs one move (the descriptor's address XORed with
 * a random process key, as before, cost a load and an XOR). */
static inline uintptr_t span_free_key(const span_t *s) {
#if LITHE_SECURE
  return s->div_magic;
#else
  return (uintptr_t)s;
#endif
}
/* heap.c: a heap's spans (available and full lists, the span cache,
 * remote-free notification, abandon and adopt) and the free slow paths */
extern pthread_mutex_t heaps_lock INTERNAL, abandoned_lock INTERNAL;
extern heap_t *all_heaps INTERNAL;        /* every heap made; under heaps_lock */
extern _Atomic size_t heaps_nlive INTERNAL; /* changed under heaps_lock */
extern size_t heaps_ncreated INTERNAL;     /* under heaps_lock */
extern _Atomic size_t spans_small_live INTERNAL; /* spans holding small objects */
uintptr_t wait_notifying(span_t *s) INTERNAL;
void span_to_pages(span_t *s) INTERNAL;        /* an empty small span back */
void span_release(heap_t *h, span_t *s) INTERNAL; /* to h's cache or the pages */
span_t *cache_grab(heap_t *h, unsigned i) INTERNAL;
span_t *cache_take_all(heap_t *h) INTERNAL;
void cache_flush(heap_t *h) INTERNAL;
span_t *cache_take(heap_t *h, unsigned cls, size_t bytes, size_t first) INTERNAL;
void refile_from_full(heap_t *h, span_t *s, bool remote) INTERNAL;
void heap_drain_remote(heap_t *h) INTERNAL;
span_t *heap_adopt(heap_t *h, unsigned cls) INTERNAL; /* NULL: none abandoned */
void span_abandon(span_t *s) INTERNAL;
void heap_give_away(heap_t *h) INTERNAL; /* every span abandoned (bins empty) */
void span_free_remote(span_t *s, block_t *b) INTERNAL;
void heap_free_local_slow(heap_t *h, span_t *s) INTERNAL;
void heap_discard_all(heap_t *h) INTERNAL;   /* userheap.c's destroy */
void heaps_collect_abandoned(void) INTERNAL;
size_t heaps_take_caches(void) INTERNAL; /* every heap's cached empty spans back; bytes */
void heaps_stats(size_t *live, size_t *created, size_t *small_spans, size_t *abandoned) INTERNAL;

/* bin.c: a thread's bins (its per-class lists of free blocks) */
/* A set of classes, one bit each (bit c: class c). */
typedef uint64_t class_set_t;
_Static_assert(NCLASSES <= 64, "a class_set_t holds a bit per class");
#define CLASSES_ALL ((((class_set_t)1 << (NCLASSES - 1)) - 1) << 1) /* 1 .. NCLASSES - 1 */
#define CLASS_BIT(c) ((class_set_t)1 << (c))
/* (a set's classes in order: for (m = set; m; m &= m - 1), c = ctz(m)) */
static inline unsigned class_first(class_set_t m) { return (unsigned)__builtin_ctzll(m); }

/* The blocks in heap h's bin of class c, from its rooms (another
 * thread's: a snapshot, read without ordering, as the span counts are). */
static inline int64_t bins_held(heap_t *h, const int32_t room[NCLASSES], unsigned c) {
  return (int64_t)__atomic_load_n(&h->bin_cap[c], __ATOMIC_RELAXED) - room[c];
}

void heap_decay(heap_t *h) INTERNAL;
void *bin_pop(heap_t *h, unsigned cls) INTERNAL;
void *bin_refill(heap_t *h, span_t *s, unsigned cls) INTERNAL;
void heap_bins_flush_over(heap_t *h, class_set_t set, class_set_t over) INTERNAL;
void heap_bins_flush(heap_t *h) INTERNAL;
void heap_bins_restart(heap_t *h, class_set_t set) INTERNAL;
void heap_bins_detach(heap_t *h) INTERNAL;
bool heap_bins_reachable(heap_t *h) INTERNAL;
bool heap_bin_has(heap_t *h, unsigned cls, const block_t *b) INTERNAL;
bool heaps_bin_has(span_t *s, const block_t *b) INTERNAL; /* any heap's bin (misuse path) */
void heap_free_remote(span_t *s, block_t *b) INTERNAL;

/* thread.c: a thread's heap made, the malloc slow path, collection,
 * thread exit, fork */
void *heap_malloc_generic(size_t size, heap_t *h) INTERNAL; /* size first: in malloc's register */
void *heap_malloc_class(heap_t *h, unsigned cls) INTERNAL;
void heap_collect(heap_t *h, bool force) INTERNAL;
void heap_thread_exit(void *arg) INTERNAL;
void heap_key_init(void) INTERNAL; /* init: the thread-exit key, limit_reclaim */
void heap_fork_prepare(void) INTERNAL;
void heap_fork_parent(void) INTERNAL;
void heap_fork_child(void) INTERNAL;
/* userheap.c's locks at a fork (stage 0 prepare, 1 parent, 2 child): a hook, see heap.c */
extern void (*heap_fork_hook)(int stage) INTERNAL;

/* xlarge.c: objects above large_max, each a mapping of its own */
extern _Atomic size_t stat_xlarge_live, stat_xlarge_bytes, stat_xlarge_cached_bytes INTERNAL;
/* cached_only: only cached memory that holds it whole, else NULL */
void *xlarge_alloc(size_t size, size_t align, bool zero, bool cached_only) INTERNAL;
void xlarge_free(span_t *s) INTERNAL;
void *xlarge_resize(span_t *s, size_t size) INTERNAL; /* NULL: copy instead */
bool xcache_expire(uint64_t by, bool all) INTERNAL; /* pages_lock held; true: some unmapped */
void xcache_yield(size_t bytes) INTERNAL;             /* pages_lock held */
uint64_t xcache_due(void) INTERNAL;                   /* pages_lock held */

/* large.c */
void *large_alloc(size_t size, size_t align) INTERNAL;
void *large_alloc_zero(size_t size, size_t align, bool zero) INTERNAL;
void large_free(span_t *s) INTERNAL;
void *large_realloc(span_t *s, size_t size) INTERNAL;
extern _Atomic size_t stat_large_live INTERNAL;
extern void (*large_owner_forget)(span_t *s) INTERNAL; /* userheap.c's, see large.c */
void large_init(void) INTERNAL;                       /* init: the large-run cache's key */
bool lcache_reclaim(uint64_t now, uint64_t by, uint64_t prev, bool all, bool hinted) INTERNAL; /* pages_lock held */
uint64_t lcache_due(uint64_t now) INTERNAL;           /* pages_lock held */

/* alloc.c: the API behind the exported names of override.c */
void *lt_malloc(size_t n) INTERNAL;
void lt_free(void *p) INTERNAL;
void lt_free_sized(void *p, size_t size) INTERNAL;
void *lt_calloc(size_t count, size_t size) INTERNAL;
void *lt_realloc(void *p, size_t n) INTERNAL;
void *lt_reallocarray(void *p, size_t count, size_t size) INTERNAL;
int lt_posix_memalign(void **out, size_t align, size_t n) INTERNAL;
void *lt_aligned_alloc(size_t align, size_t n) INTERNAL;
void *lt_memalign(size_t align, size_t n) INTERNAL;
void *lt_valloc(size_t n) INTERNAL;
void *lt_pvalloc(size_t n) INTERNAL;
size_t lt_malloc_usable_size(const void *p) INTERNAL;
bool lt_realloc_usable(const void *p, const char *op, size_t *usable) INTERNAL;
void lt_collect(bool force) INTERNAL;
int lt_malloc_trim(size_t pad) INTERNAL;

/* prof.c: sampled heap profiles, leak reports */
extern int prof_mode INTERNAL;
/* sample.c, for prof.c */
extern size_t prof_rate INTERNAL;
extern void *(*prof_sampled_malloc)(size_t n, heap_t *h) INTERNAL; /* prof_malloc, see sample.c */
extern uint64_t rng_seed INTERNAL;
extern __thread int prof_busy INTERNAL __attribute__((tls_model("initial-exec")));     /* PROF_OFF, PROF_SAMPLE, PROF_LEAKS */
enum { PROF_OFF = 0, PROF_SAMPLE = 1, PROF_LEAKS = 2 };
void prof_init(void) INTERNAL;     /* from process_init; no allocation */
void prof_warm_up(void) INTERNAL;  /* lithe's constructor, before main */
int prof_dump(const char *path) INTERNAL; /* lithe_prof_dump (override.c) */
bool prof_tick_slow(heap_t *h) INTERNAL;   /* prof_left < 0: sample now? */
intptr_t prof_heap_start(void) INTERNAL;  /* a new heap's prof_left */
bool prof_heapless_take(size_t n) INTERNAL; /* PROF_SAMPLE: n bytes fit the interval */
/* May a thread without a heap take this block of class cls from the
 * shared heap (heap.c)?  Profiling off: yes; sampling: while the block's
 * bytes fit the thread's first interval (then they count against it); the
 * leak report: no, it tracks every allocation in the thread's heap. */
static inline bool prof_heapless(unsigned cls) {
  return prof_mode == PROF_OFF || (prof_mode == PROF_SAMPLE && prof_heapless_take(class_size[cls]));
}
void *prof_alloc(size_t n, size_t align, bool zero) INTERNAL; /* a sampled allocation */
void prof_free(span_t *s) INTERNAL;        /* s->prof != NULL */
void *prof_realloc(span_t *s, size_t bytes, size_t n, size_t old) INTERNAL; /* sampling: in place, or NULL */
void *prof_malloc(size_t n, heap_t *h) INTERNAL; /* prof_due: sample, or allocate as usual */
/* The hook every allocation passes: one subtract and one compare; true
 * when the sampling interval ran out (prof_tick_slow decides whether to
 * sample).  h must be a thread's own heap. */
static inline bool prof_due(heap_t *h, size_t n) {
  heap_bins_t *t = h->bins;
  t->prof_left = (intptr_t)((uintptr_t)t->prof_left - n); /* wraps, never UB */
  return unlikely(t->prof_left < 0);
}
static inline bool prof_tick(heap_t *h, size_t n) { return prof_due(h, n) && prof_tick_slow(h); }

/* init.c: process set-up, fork handling */
void lithe_process_init(void) INTERNAL;
extern _Atomic int lithe_initialized INTERNAL;
extern __thread bool lithe_tls_init_thread INTERNAL __attribute__((tls_model("initial-exec")));

#if LITHE_DEBUG /* whole-structure checks: lithe_verify() in debug.c */
void pages_verify(void) INTERNAL;
void heap_verify(heap_t *h) INTERNAL;
void lithe_verify(void) INTERNAL;
void meta_verify(void) INTERNAL;
#endif

/* list helpers */
static inline void list_push_front(span_list_t *l, span_t *s) {
  s->prev = NULL;
  s->next = l->first;
  if (l->first) l->first->prev = s; else l->last = s;
  l->first = s;
}
static inline void list_push_back(span_list_t *l, span_t *s) {
  s->next = NULL;
  s->prev = l->last;
  if (l->last) l->last->next = s; else l->first = s;
  l->last = s;
}
static inline void list_remove(span_list_t *l, span_t *s) {
  if (s->prev) s->prev->next = s->next; else l->first = s->next;
  if (s->next) s->next->prev = s->prev; else l->last = s->prev;
  s->next = s->prev = NULL;
}

/* heap.c's span lists, inline for thread.c's malloc slow path too */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* current = first available span; it alone skips the free slow path. */
static inline void set_current(heap_t *h, unsigned cls) {
  span_t *old = h->current[cls], *f = h->avail[cls].first;
  if (old != &lithe_empty_span && !old->full) old->free_trigger = 0;
  if (f) f->free_trigger = -1;
  h->current[cls] = f ? f : &lithe_empty_span;
}

/* A full span comes back to the available list only once the owner has
 * freed 1/FULL_REFILL_DIV of it: one block freed and taken again would
 * otherwise cost two CAS and two list moves per malloc/free.  Remote frees
 * still notify at once.  Measured (lithe-bench --runs 5, fragment,
 * fragment_parallel, fragment_iterate; time / peak geometric means against
 * moving back at the first free): 1/8: 1.29x faster, 1.09x bigger;
 * 1/16: 1.27x faster, 1.04x bigger; 1/32: 1.13x faster, 1.02x bigger. */
#ifndef FULL_REFILL_DIV
#define FULL_REFILL_DIV 16
#endif
static inline void mark_full_list(heap_t *h, span_t *s) {
  lt_assert(!s->full);
  lt_assert_cmp(s->used, <=, s->capacity);
  int32_t refill = (int32_t)(s->capacity / FULL_REFILL_DIV);
  s->full = 1;
  s->free_trigger = (int32_t)s->used - (refill > 0 ? refill : 1);
  list_push_front(&h->full, s);
}

/* File an exhausted span as full; false if remote frees arrived (collect
 * them instead). */
static inline bool span_mark_full(span_t *s) {
  uintptr_t expect = TF_NORMAL;
  return atomic_compare_exchange_strong_explicit(&s->thread_free, &expect, TF_NOTIFY,
                                                 memory_order_acq_rel, memory_order_relaxed);
}

static inline size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

#endif
