/* SPDX-License-Identifier: MIT */
/* alloc.c — lithe's public allocation API and its fast paths.
 *
 * ======================== lithe: design overview ========================
 *
 * Layers, bottom up.  A file calls only files listed above it here; the
 * test tests/layering/check-layers.py reads this list and fails on any
 * call (a symbol one release object uses and another defines) that runs
 * up it.  One line per file, the file name first:
 *
 *   options.c   LITHE_* options; misuse reports, fatal errors, formatting.
 *   debug.c     checked invariants (debug.h): lt_assert*, the lock-rank
 *               check, lithe_verify, fault injection (Debug build only).
 *   os.c        the only code that calls mmap/mprotect/madvise/munmap.
 *               Memory is reserved (PROT_NONE, free of charge), committed
 *               (read/write, charged) on demand, purged (MADV_DONTNEED).
 *   meta.c      span descriptors, heaps, arena records: never unmapped.
 *   pagemap.c   address -> span descriptor: one flat array reserved
 *               read-only and committed per 64 MiB of heap, two levels
 *               (L1 in .bss) where it does not reach.  How free() finds a
 *               block's span, and proves a pointer is ours.
 *   sizeclass.c 44 small classes, 16 B .. 32 KiB, rounding <= 20 % of a block.
 *   limit.c     the memory limit (LITHE_MEMORY_LIMIT or the cgroup's): its
 *               figures and pressure flag, which the layers above query.
 *   arena.c     64 MiB aligned arenas, committed just ahead of use.
 *   pages.c     the page heap: free page runs on size lists, coalesced,
 *               purged after a delay; one lock, off the hot path.
 *   span.c      a span = pages holding blocks of one class: an owner-only
 *               free list, an atomic list for frees from other threads,
 *               lazily carved from a bump pointer.
 *   xlarge.c    objects above 1 MiB: a mapping each, resized with mremap;
 *               freed ones kept for the purge delay and reused best-fit.
 *   large.c     large objects (page runs, up to 1 MiB) and their per-thread
 *               cache; sends bigger ones to xlarge.c.
 *   sample.c    when the profiler samples: its mode, random intervals.
 *   heap.c      a thread heap's spans: per class the available and full
 *               lists, the cache of empty spans, remote-free notification,
 *               spans abandoned and adopted; the free slow paths.
 *   bin.c       a thread's bins (per-class free blocks in its TLS block):
 *               spill, flush back to the spans, capacities, decay, refill.
 *   thread.c    a thread's heap over its life (initial-exec TLS): made,
 *               the malloc slow path, collection, thread exit, fork.
 *   unwind.c    the profiler's cached x86-64 unwinder: a CFA rule learnt
 *               once per return address from .eh_frame.
 *   prof.c      sampled heap profiles (LITHE_PROF) and leak reports
 *               (LITHE_LEAKS); its hook is one subtract-and-compare in
 *               fastpath.h.
 *   purge.c     the purge thread: started where the program makes its
 *               first thread or at load (override.c), never inside malloc.
 *   init.c      once-per-process set-up; lithe's constructor.
 *   alloc.c     this file: malloc/free/realloc/... with their C semantics;
 *               fastpath.h, the hot path on one screen.
 *   userheap.c  first-class heaps (lithe_heap_new / _destroy).
 *   stats.c     counters, the heap walk, lithe_stats_get, the report at exit.
 *   introspect.c glibc's mallinfo2/mallinfo/malloc_stats/malloc_info/mallopt.
 *   override.c  the exported malloc family and C++ operators.
 *   pthread.c   pthread_create, where the purge thread starts (the shared
 *               library only).
 *
 * Headers: types.h (the tunables, each with its reason, and the types),
 * internal.h (every layer's prototypes and inline helpers; includes
 * types.h), fastpath.h (the hot path), unwind.h (unwind.c for prof.c),
 * debug.h (checked invariants), names.h (link names).
 *
 * Where a lower layer must start work above it, a hook set once before
 * the first allocation carries the call, and only there: the page heap's
 * purge reaching the large caches (pages.c, page_caches, set by
 * large_init), the memory limit taking back the heaps' caches (limit.c,
 * limit_reclaim, set by heap_key_init), a thread's first block sampled
 * (sample.c, prof_sampled_malloc, set by prof_init), a first-class
 * heap's large object freed (large.c, large_owner_forget, set by
 * lithe_heap_new), and a fork holding the first-class heaps' locks
 * (thread.c, heap_fork_hook, set by lithe_heap_new).
 *
 * malloc(n <= 32 KiB), the common case, with no lock and no atomic:
 *     heap = tls; c = lut[index(n)];
 *     block = heap->bin[c]; if (block) { heap->bin[c] = block->next; ... }
 * free(p), any thread:
 *     span = pagemap[p]; check p is a block start; push on this thread's
 *     heap->bin[span->bin_cls] (the class) whoever owns the block, while
 *     that bin has room; else to the span: its free list (the owner's
 *     free) or a CAS push on span->thread_free.
 * An empty bin takes its class's current span's whole free list; a free
 * into a full bin goes to the block's span, so no bin is ever walked and
 * a wave of same-size frees and mallocs within the bin moves no span.
 * A heap that needs a new span looks in its span cache; before it takes
 * one from the page heap, the full bins of the other classes go back to
 * their spans and the spans that leaves empty are released (the classes
 * a program stopped using give their pages to the new span).
 * A freed block holds its span's key in its second word (the descriptor's
 * address; XORed with a random key in the hardened build): a free
 * that finds the key there is a suspected double free, confirmed by a scan
 * of the span's free lists and the owner's bin (one compare on the fast
 * path).
 * ======================================================================== */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "fastpath.h"

void *lt_malloc(size_t n) { return malloc_api(n); }

/* malloc's slow path (fastpath.h): a thread's first allocation, a sample,
 * an empty bin, a large object.  (NOINLINE: the same code as when it
 * lived in heap.c (now thread.c), not inlined into the entry points.) */
NOINLINE void *heap_malloc_generic(size_t size, heap_t *h) {
  if (unlikely(size > ALLOC_MAX)) { errno = ENOMEM; return NULL; } /* (malloc_inline's) */
  if (unlikely(h == &lithe_empty_heap)) lithe_process_init(); /* size_class needs it */
  else if (prof_due(h, size)) return prof_malloc(size, h);
  if (size <= SMALL_MAX) return heap_malloc_class(h, size_class(size));
  if (h != &lithe_empty_heap) heap_decay(h);
  return large_alloc(size, 0);
}

/* ---- pointer validation ------------------------------------------------ */

/* The span of a pointer lithe handed out, or NULL after reporting misuse. */
static NOINLINE span_t *bad_pointer(const char *op, const void *p, span_t *s) {
  /* (a freed large run kept in a thread's cache is free pages too) */
  bool gone = s && (s->kind == SPAN_FREE || s->kind == SPAN_DEAD || s->kind == SPAN_CACHED);
  if (gone && ((uintptr_t)p & (PAGE_SIZE - 1)) == 0)
    lithe_report(op, p, "double free (its pages are already free)");
  else if (s && s->kind == SPAN_SMALL && (const char *)p >= span_bump(s) &&
           (size_t)((const char *)p - s->start) < s->bytes)
    lithe_report(op, p, "pointer not allocated by lithe (never handed out)");
  else if (s && !gone && (size_t)((const char *)p - s->start) < s->bytes)
    lithe_report(op, p, "interior pointer, not the start of a block");
  else
    lithe_report(op, p, "pointer not allocated by lithe");
  return NULL;
}


/* Suspected double free (the key matched): confirm by scanning. */
static NOINLINE bool is_double_free(span_t *s, block_t *b) {
  return span_contains_free(s, b) || heaps_bin_has(s, b);
}

static inline span_t *checked_span(const char *op, const void *p) {
  span_t *s = pagemap_lookup(p);
  if (unlikely(!s)) return bad_pointer(op, p, s);
  size_t off = (size_t)((const char *)p - s->start);
  if (likely(s->kind == SPAN_SMALL)) {
    if (unlikely((const char *)p >= span_bump(s) || off >= s->bytes || !small_block_start(s, off)))
      return bad_pointer(op, p, s);
    return s;
  }
  if (unlikely(off != 0 || (s->kind != SPAN_LARGE && s->kind != SPAN_XLARGE)))
    return bad_pointer(op, p, s);
  return s;
}

/* ---- free -------------------------------------------------------------- */

/* b, a block start of small span s (checked_span), is free already?
 * Suspects: the free key in place, or b at the head of this thread's bin
 * of the class (where this thread's last free put it, its own block or
 * another thread's: key overwritten since), or at the head of the span's
 * remote list (where the free of a thread with no heap yet put it:
 * bin.c, heap_bin_spill); in the hardened build also second in the bin. */
static inline bool small_freed(span_t *s, block_t *b) {
  heap_t *h = lithe_tls_heap;
  return (block_key(b) == span_free_key(s) || b == h->bins->bin[s->cls] || b == h->bins->bin[s->bin_cls] ||
#if LITHE_SECURE
          /* (or under the head: no immediate reuse, fastpath.h) */
          b == bin_second(h->bins->bin[s->cls]) || b == bin_second(h->bins->bin[s->bin_cls]) ||
#endif
          b == TF_PTR(atomic_load_explicit(&s->thread_free, memory_order_relaxed))) &&
         is_double_free(s, b);
}

/* Free b, a live block of small span s: on the owner's bin, or remote. */
static inline void small_free(span_t *s, block_t *b) {
  heap_t *h = lithe_tls_heap;
  if (atomic_load_explicit(&s->owner, memory_order_relaxed) == h) bin_push(h, s, b, span_free_key(s));
  else heap_free_remote(s, b);
}

/* Everything but a small block: NULL, large/xlarge, misuse. */
NOINLINE void free_slow(void *p, const char *op) {
  if (p == NULL) return;
  span_t *s = checked_span(op, p);
  if (!s) return;
  if (s->kind == SPAN_SMALL) {
    if (!small_freed(s, p)) small_free(s, p);
    else lithe_report(op, p, "double free");
    return;
  }
  if (unlikely(s->prof != NULL)) prof_free(s);
  heap_t *h = lithe_tls_heap;
  if (h != &lithe_empty_heap) heap_decay(h);
  large_free(s);
}

/* free() of an address the flat pagemap does not cover (internal.h; all
 * of them when its reservation was refused, under ulimit -v): the
 * two-level map's entry, then the fast path's checks and push, as
 * before the flat map (free_slow alone cost 79 instructions a free). */
void free_unmapped(void *p) {
  uintptr_t a = (uintptr_t)p, l1e;
  if (unlikely(a >> ADDR_BITS) || unlikely((l1e = pagemap_l1_entry(a >> L1_SHIFT)) == 0)) {
    free_slow(p, "free");
    return;
  }
  free_span(p, (span_t *)(pagemap_base() + pagemap_l2_entry(l1e, a))); /* 0: `none` */
}

void lt_free(void *p) { free_api(p); }
/* The size must be the block's: at most its usable size, and for a large
 * or xlarge object (whole pages, exactly what the request rounded to, a
 * size 0 one page) more than one page less.  A small block's lower bound
 * is not checked: an aligned request or an in-place realloc gives a class
 * above the size's. */
void lt_free_sized(void *p, size_t size) {
  size = lt_vg_pad(size); /* valgrind build: the size lithe was asked for */
  span_t *s = pagemap_lookup(p);
  if (s && (s->kind == SPAN_SMALL ? size > s->block_size
                                  : (s->kind == SPAN_LARGE || s->kind == SPAN_XLARGE) &&
                                        p == s->start &&
                                        (size > s->bytes || (size ? size : 1) <= s->bytes - PAGE_SIZE))) {
    lithe_report("free_sized", p, "size does not match the block's");
    return;
  }
  free_api(p);
}

/* ---- calloc, realloc --------------------------------------------------- */

static size_t usable_of(const span_t *s) { /* valgrind build: less its gap */
  return (s->kind == SPAN_SMALL ? s->block_size : s->bytes) - LT_VG_PAD;
}

void *lt_calloc(size_t count, size_t size) {
  size_t n;
  if (unlikely(__builtin_mul_overflow(count, size, &n))) { errno = ENOMEM; return NULL; }
  if (n > SMALL_MAX) {
    lithe_process_init();
    heap_t *h = lithe_tls_heap;
    if (h != &lithe_empty_heap && prof_tick(h, n)) return lt_vg_malloced(prof_alloc(lt_vg_pad(n), 0, true), true);
    return lt_vg_malloced(large_alloc_zero(lt_vg_pad(n), 0, true), true);
  }
  void *p = malloc_api(n);
  if (p) memset(p, 0, n);
  return p;
}

void *lt_realloc(void *p, size_t n) {
  if (p == NULL) return malloc_api(n);
  if (n == 0) { /* as glibc */
    if (lt_vg_freeing(p)) free_slow(p, "realloc");
    return NULL;
  }
  span_t *s = checked_span("realloc", p);
  if (!s) { errno = EINVAL; return NULL; } /* reported; LITHE_ON_ERROR=ignore */
  if (unlikely(n > ALLOC_MAX)) { errno = ENOMEM; return NULL; }
  size_t usable = usable_of(s);
  if (s->kind == SPAN_SMALL) {
    if (unlikely(small_freed(s, p))) {
      lithe_report("realloc", p, "double free (realloc of a freed block)");
      errno = EINVAL; /* LITHE_ON_ERROR=ignore: as for any misuse above */
      return NULL;
    }
    /* stay in place unless shrinking below half the block */
    if (n <= usable && (n > usable / 2 || usable <= 16)) return p;
  } else {
    /* while sampling, a sampled block is counted anew and an unsampled
     * one's growth is charged (prof.c) */
    void *q = likely(s->prof == NULL && prof_mode != PROF_SAMPLE) ? large_realloc(s, lt_vg_pad(n))
                                                                 : prof_realloc(s, lt_vg_pad(n), n, usable);
    if (q) { /* valgrind build: always in place (large_realloc) */
      lt_vg_resized(q, usable, usable_of(s));
      return q;
    }
  }
  void *q = malloc_api(n);
  if (!q) return NULL; /* p is untouched, errno is ENOMEM */
  memcpy(q, p, n < usable ? n : usable);
  if (s->kind != SPAN_SMALL) free_api(p);
  else if (lt_vg_freeing(p)) small_free(s, p); /* checked above: no second lookup */
  return q;
}

void *lt_reallocarray(void *p, size_t count, size_t size) {
  size_t n;
  if (unlikely(__builtin_mul_overflow(count, size, &n))) { errno = ENOMEM; return NULL; }
  return lt_realloc(p, n);
}

/* ---- aligned allocation ------------------------------------------------ */

/* align: a power of two.  Small blocks sit at span start (8 KiB aligned) +
 * i * class size, so a class whose size is a multiple of align gives
 * aligned blocks; otherwise a page run (large) or a mapping (xlarge). */
static void *aligned_raw(size_t align, size_t n) {
  if (align <= 16) return malloc_inline(n);
  if (unlikely(n > ALLOC_MAX || align > ALLOC_MAX)) { errno = ENOMEM; return NULL; }
  lithe_process_init();
  heap_t *h = lithe_tls_heap;
  if (h != &lithe_empty_heap && prof_tick(h, n)) return prof_alloc(n, align, false);
  if (align <= PAGE_SIZE && n <= SMALL_MAX) {
    size_t m = align_up(n ? n : 1, align);
    if (m <= SMALL_MAX) {
      unsigned c = size_class(m);
      while (c < NCLASSES && class_size[c] % align) c++;
      if (c < NCLASSES) {
        return heap_malloc_class(h, c);
      }
    }
  }
  return large_alloc(n ? n : 1, align);
}
static inline void *aligned_inner(size_t align, size_t n) {
  return lt_vg_malloced(aligned_raw(align, lt_vg_pad(n)), false);
}

static inline bool pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

int lt_posix_memalign(void **out, size_t align, size_t n) {
  if (!pow2(align) || align % sizeof(void *)) return EINVAL;
  int saved = errno; /* posix_memalign reports through its result only */
  void *p = aligned_inner(align, n);
  errno = saved;
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

void *lt_aligned_alloc(size_t align, size_t n) {
  if (!pow2(align)) { errno = EINVAL; return NULL; }
  return aligned_inner(align, n);
}

void *lt_memalign(size_t align, size_t n) {
  if (!pow2(align)) { errno = EINVAL; return NULL; }
  return aligned_inner(align, n);
}

void *lt_valloc(size_t n) { return aligned_inner(os_page_size(), n); }

void *lt_pvalloc(size_t n) {
  size_t ps = os_page_size();
  if (n > ALLOC_MAX) { errno = ENOMEM; return NULL; }
  return aligned_inner(ps, n ? align_up(n, ps) : ps);
}

/* ---- introspection, collection ----------------------------------------- */

/* The usable size of p for a realloc by `op` (userheap.c), in *usable;
 * false, errno = EINVAL, after reporting a pointer that is not a live
 * block of lithe's (LITHE_ON_ERROR=ignore), as lt_realloc does. */
bool lt_realloc_usable(const void *p, const char *op, size_t *usable) {
  span_t *s = checked_span(op, p);
  if (s && s->kind == SPAN_SMALL && small_freed(s, (block_t *)p)) {
    lithe_report(op, p, "double free (realloc of a freed block)");
    s = NULL;
  }
  if (!s) {
    errno = EINVAL;
    return false;
  }
  *usable = usable_of(s);
  return true;
}

size_t lt_malloc_usable_size(const void *p) {
  if (!p) return 0;
  span_t *s = checked_span("malloc_usable_size", p);
  if (s && s->kind == SPAN_SMALL && block_key(p) == span_free_key(s) &&
      is_double_free(s, (block_t *)p)) {
    lithe_report("malloc_usable_size", p, "freed block");
    return 0;
  }
  return s ? usable_of(s) : 0;
}

void lt_collect(bool force) {
  if (!atomic_load_explicit(&lithe_initialized, memory_order_acquire)) return;
  heap_collect(lithe_tls_heap, force);
  heaps_collect_abandoned();
  pages_collect(force);
  if (force) meta_collect(); /* after pages_collect, whose merges free descriptors */
}

int lt_malloc_trim(size_t pad) {
  (void)pad;
  if (!atomic_load_explicit(&lithe_initialized, memory_order_acquire)) return 0;
  size_t before = atomic_load(&os_stats.purges);
  size_t cached = atomic_load(&stat_xlarge_cached_bytes); /* freed xlarge: unmapped */
  lt_collect(true);
  return atomic_load(&os_stats.purges) != before || cached != 0;
}
