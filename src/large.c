/* SPDX-License-Identifier: MIT */
/* large.c — objects too big for a size class: which way each goes, and
 * the large ones.
 *
 *   large   SMALL_MAX < size <= large_max: a run of pages from the page
 *           heap (pages.c), reused before it is purged (the large-run
 *           cache, below); realloc grows and shrinks it in place when the
 *           neighbouring pages allow.
 *   xlarge  above large_max: a mapping of its own (xlarge.c).
 * large_max is LARGE_MAX_CAP (1 MiB), or a quarter of an arena if smaller.
 * Page runs cannot serve a bigger block than the free space around them,
 * and moving their pages would punch holes in an arena, while cached
 * mappings of any sizes combine: so blocks above 1 MiB are mappings
 * (docs/lab/2026-11-29-thresholds-and-small-max.md, has the sweep) -- but a free page run
 * that already holds such a block serves it first (a large block then,
 * never made of fresh arena pages), so pages freed by small and large
 * objects are not kept while as many more are mapped for big blocks. */
#include <errno.h>
#include <string.h>
#include "internal.h"

_Atomic size_t stat_large_live;
/* A first-class heap's large object freed (userheap.c, which sits above
 * and sets this before it makes its first such object: only it sets an
 * owner).  A hook: large objects must not call up into the heaps API. */
void (*large_owner_forget)(span_t *s);

/* ---- the large-run cache --------------------------------------------------
 * A thread's freed large blocks, kept as they are: a malloc of the same
 * page count takes one back with no lock and no pagemap write (its entries
 * still name the run).  A 128 KiB malloc+free pair cost 1,055 instructions
 * through the page heap (callgrind, bench-cgloop a 131072): pagemap_set's
 * 32 entries ~444, pages_lock ~110, the bins and coalescing ~120; tcmalloc
 * 80 (docs/lab/2026-12-01-rows-behind-glibc.md has the figures since).
 *
 * A cached run has kind SPAN_CACHED, so a second free of the block (or
 * realloc, malloc_usable_size) is reported as a double free at once, as
 * for a run back in the page heap; it stays counted in the page heap's
 * pages in use (the memory limit sees it), not in stat_large_live, and the
 * heap walk counts it as large_cached (lithe_stats_print_json).
 *
 * Each thread has LCACHE_SLOTS slots (an lcache_t, found by every purge
 * through a list of all of them under pages_lock).  Only the owner fills a
 * slot; anyone may empty one, by exchanging it with NULL, so the owner
 * takes its runs back with one atomic exchange and the page heap's purge
 * takes them (lcache_reclaim, pages_lock held) without the owner:
 *   - a purge pass: the runs freed at least the purge delay ago; they
 *     become free runs, purged at once (a free reads no clock: a slot's
 *     time is set by the first pass that sees it, to the pass before);
 *   - lithe_collect (and the memory limit's pressure): all of them;
 *   - a request the page heap's free runs cannot serve: all of them,
 *     before any fresh page is carved or mapped, so cached runs never add
 *     to the peak;
 * and the owner gives all of its runs back on a malloc that finds no run
 * of its size (under the same lock, before the page heap looks: the cache
 * holds sizes that repeat, others are as before), and at thread exit. */
#define LCACHE_SLOTS 8
typedef struct lcache_s {
  span_t *_Atomic slot[LCACHE_SLOTS];
  _Atomic uint64_t seen_ms[LCACHE_SLOTS]; /* its free time as purges see it; 0: no
                                             pass has seen it yet */
  size_t npages[LCACHE_SLOTS];            /* the owner's: the slot's run's pages */
  char *start[LCACHE_SLOTS];              /* ... and its first byte (a purge may
                                             take the run and reuse its
                                             descriptor: never read there) */
  struct lcache_s *next;                  /* all caches (pages_lock)            */
  struct lcache_s *spare_next;            /* exited threads' (pages_lock)       */
} lcache_t;
static lcache_t *lcache_all, *lcache_spare;
/* some slot may hold a run: a hint, set by puts, cleared by reclaims (a
 * missed run waits for the next purge pass) */
static _Atomic bool lcache_any;
static __thread lcache_t *lcache_mine __attribute__((tls_model("initial-exec")));
static __thread bool lcache_gone __attribute__((tls_model("initial-exec")));
static pthread_key_t lcache_key;
static bool lcache_key_ok;

static span_t *lcache_drain(lcache_t *c) {
  span_t *out = NULL;
  for (unsigned i = 0; i < LCACHE_SLOTS; i++) {
    if (!atomic_load_explicit(&c->slot[i], memory_order_relaxed)) continue; /* (only its owner fills it) */
    span_t *s = atomic_exchange_explicit(&c->slot[i], NULL, memory_order_acquire);
    if (s) {
      s->next = out;
      out = s;
    }
  }
  return out;
}

static void lcache_exit(void *arg) {
  (void)arg; /* (the program may have overwritten the key's value) */
  lcache_t *c = lcache_mine;
  lcache_mine = NULL;
  lcache_gone = true; /* later frees of this thread bypass the cache */
  if (!c) return;
  span_t *back = lcache_drain(c);
  pthread_mutex_lock(&pages_lock);
  pages_release_list_locked(back, os_now_ms());
  c->spare_next = lcache_spare;
  lcache_spare = c;
  pthread_mutex_unlock(&pages_lock);
}

void large_init(void) {
  static const page_caches_t caches = {lcache_reclaim, lcache_due, xcache_expire, xcache_due, xcache_yield};
  page_caches = &caches;
  lcache_key_ok = pthread_key_create(&lcache_key, lcache_exit) == 0;
}

static NOINLINE lcache_t *lcache_new(void) {
  if (lcache_gone || !lcache_key_ok) return NULL;
  pthread_mutex_lock(&pages_lock);
  lcache_t *c = lcache_spare;
  if (c) lcache_spare = c->spare_next;
  pthread_mutex_unlock(&pages_lock);
  if (!c) {
    if (!(c = meta_alloc(sizeof *c))) return NULL;
    memset(c, 0, sizeof *c);
    pthread_mutex_lock(&pages_lock);
    c->next = lcache_all;
    lcache_all = c;
    pthread_mutex_unlock(&pages_lock);
  }
  if (pthread_setspecific(lcache_key, c) != 0) { /* no destructor: not used */
    pthread_mutex_lock(&pages_lock);
    c->spare_next = lcache_spare;
    lcache_spare = c;
    pthread_mutex_unlock(&pages_lock);
    lcache_gone = true;
    return NULL;
  }
  lcache_mine = c;
  return c;
}

/* Keep freed large run s in this thread's cache; false: the caller frees it.
 * Not under a memory limit (LITHE_MEMORY_LIMIT or the cgroup's, limit.c):
 * runs held in threads' caches are pages the limit's purge cannot weigh
 * or reuse for other sizes, and bench-limitcycle --limit 80m took 83.0k
 * minor faults with the cache (skipped only from 90 % of the limit on)
 * against 67.5k without it (65.8k before the cache), 293 against 278 ms
 * (the row without a limit, 33.4k, is untouched).  What the cache saves,
 * ~840 instructions a 128 KiB pair, did not show in alloc_free's time. */
static bool lcache_put(span_t *s) {
  if (unlikely(lithe_opt.purge_delay_ms == 0 || s->bytes > large_max || limit_pressure_at))
    return false;
  lcache_t *c = lcache_mine;
  if (unlikely(!c) && !(c = lcache_new())) return false;
  for (unsigned i = 0; i < LCACHE_SLOTS; i++) {
    if (atomic_load_explicit(&c->slot[i], memory_order_relaxed)) continue;
    span_set_kind(s, SPAN_CACHED);
    run_dirty_all(s); /* all of it may hold the block's bytes (large_run) */
    c->npages[i] = s->bytes >> PAGE_SHIFT;
    c->start[i] = s->start;
    atomic_store_explicit(&c->seen_ms[i], 0, memory_order_relaxed);
    atomic_store_explicit(&c->slot[i], s, memory_order_release);
    if (unlikely(!atomic_load_explicit(&lcache_any, memory_order_relaxed))) {
      /* the first run cached since a pass found none: the purge thread is
       * told (as a free into the page heap tells it), so it does not sleep
       * past the run's delay (later puts find
       * the hint set and say nothing: a run kept while the thread sleeps
       * towards a later due waits until then) */
      atomic_store_explicit(&lcache_any, true, memory_order_relaxed);
      pthread_mutex_lock(&pages_lock);
      pages_waiting(os_now_ms());
      pthread_mutex_unlock(&pages_lock);
    }
    return true;
  }
  return false;
}

/* A cached run of `npages` pages starting on an `align` boundary (a power
 * of two), or NULL; *back: on a miss, all the thread's cached runs (for
 * pages_alloc_after).  (A miss that kept them: bench-mallocbench's
 * memalign row, 32 blocks at each alignment up to 1 MiB, peaked at 4,752
 * kB against 2,062.) */
static span_t *lcache_take(size_t npages, size_t align, span_t **back) {
  lcache_t *c = lcache_mine;
  *back = NULL;
  if (!c) return NULL;
  for (unsigned i = 0; i < LCACHE_SLOTS; i++) {
    if (c->npages[i] != npages || ((uintptr_t)c->start[i] & (align - 1)) ||
        !atomic_load_explicit(&c->slot[i], memory_order_relaxed))
      continue;
    span_t *s = atomic_exchange_explicit(&c->slot[i], NULL, memory_order_acquire);
    if (s) return s; /* (NULL: a purge took it meanwhile) */
  }
  *back = lcache_drain(c);
  return NULL;
}

/* pages_lock held: give the cached runs back to the page heap, those freed
 * the purge delay ago by `by` (now, or the purge thread's time ahead of
 * it) or, with all, every one.  A run no pass has seen was
 * freed after the last one (`prev`, 0: none): that is its time, so it waits
 * at most the delay (a program that frees and goes quiet has it purged
 * with the rest; stamped with the pass that first saw it, a run waited up
 * to twice the delay, and the benchmarks' unassisted end, a delay + 100 ms
 * after the last call, found stress_aligned's 1.1 MB more resident), and
 * at least the delay less the time between passes; with hinted only
 * if a put may have cached one since the last reclaim that left none (a
 * purge pass looks anyway, so the hint's race only delays a run).  true:
 * some. */
bool lcache_reclaim(uint64_t now, uint64_t by, uint64_t prev, bool all, bool hinted) {
  lt_assert_held(&pages_lock);
  if (hinted && !atomic_load_explicit(&lcache_any, memory_order_relaxed)) return false;
  long delay = lithe_opt.purge_delay_ms;
  bool got = false, left = false;
  for (lcache_t *c = lcache_all; c; c = c->next)
    for (unsigned i = 0; i < LCACHE_SLOTS; i++) {
      if (!atomic_load_explicit(&c->slot[i], memory_order_relaxed)) continue;
      uint64_t seen = atomic_load_explicit(&c->seen_ms[i], memory_order_relaxed);
      if (!seen) {
        /* (its owner may have taken the run back and cached another
         * meanwhile: freed after `prev` too) */
        seen = prev ? prev : now;
        atomic_store_explicit(&c->seen_ms[i], seen, memory_order_relaxed);
      }
      if (!all && (delay < 0 || by - seen < (uint64_t)delay)) {
        left = true;
        continue;
      }
      span_t *s = atomic_exchange_explicit(&c->slot[i], NULL, memory_order_acquire);
      if (!s) continue; /* its owner took it back */
      pages_release_locked(s, seen);
      got = true;
    }
  if (!left) atomic_store_explicit(&lcache_any, false, memory_order_relaxed);
  return got;
}

/* pages_lock held, after a pass at `now`: when the oldest cached run is
 * due (UINT64_MAX: none, or no delay); one no pass has seen yet was freed
 * after this one, and is due a delay from now. */
uint64_t lcache_due(uint64_t now) {
  lt_assert_held(&pages_lock);
  long delay = lithe_opt.purge_delay_ms;
  if (delay <= 0) return UINT64_MAX;
  uint64_t due = UINT64_MAX;
  for (lcache_t *c = lcache_all; c; c = c->next)
    for (unsigned i = 0; i < LCACHE_SLOTS; i++) {
      if (!atomic_load_explicit(&c->slot[i], memory_order_relaxed)) continue;
      uint64_t seen = atomic_load_explicit(&c->seen_ms[i], memory_order_relaxed);
      uint64_t d = (seen ? seen : now) + (uint64_t)delay;
      if (d < due) due = d;
    }
  return due;
}

static void *large_run(span_t *s, size_t size, bool zero) {
  if (!s) return NULL;
  span_set_kind(s, SPAN_LARGE);
  atomic_store_explicit(&s->owner, NULL, memory_order_relaxed);
  atomic_fetch_add_explicit(&stat_large_live, 1, memory_order_relaxed);
  if (zero && s->dirty) {
    /* only the window of pages that may hold old bytes (pages.c): the
     * rest read as zero, as the fresh pages of a run extended at an
     * arena's top (arena_carve), which a whole memset would fault in */
    char *end = s->start + size, *hi = s->dirty_hi < end ? s->dirty_hi : end;
    lt_assert_v(s->dirty_lo >= s->start, (uintptr_t)s->dirty_lo);
    lt_vg_writable(s->start, size); /* valgrind build: freed blocks' pages */
    if (s->dirty_lo < hi) memset(s->dirty_lo, 0, (size_t)(hi - s->dirty_lo));
  }
  return s->start;
}

void *large_alloc(size_t size, size_t align) {
  return large_alloc_zero(size, align, false);
}

void *large_alloc_zero(size_t size, size_t align, bool zero) {
  if (unlikely(size > ALLOC_MAX || align > ALLOC_MAX)) { errno = ENOMEM; return NULL; }
  void *p = NULL;
  size_t npages = align_up(size, PAGE_SIZE) >> PAGE_SHIFT;
  if (size <= large_max && align <= large_max) {
    span_t *back = NULL, *s;
    /* (a cached run is dirty: large_run zeroes it when asked) */
    if ((s = lcache_take(npages, align > PAGE_SIZE ? align : PAGE_SIZE, &back)))
      return large_run(s, size, zero);
    p = large_run(back ? pages_alloc_after(npages, align, back) : pages_alloc(npages, align), size, zero);
    /* no free run holds it and no arena could be made (ulimit -v): a
     * mapping of the block's own size, as glibc maps a block above its
     * mmap threshold, where a new arena needed 1 MiB or more of address
     * space */
    if (!p) p = xlarge_alloc(size, align, zero, false);
  } else {
    /* Above large_max: cached memory that holds the block whole first
     * (the freed mapping of a block of this size: no system call, no
     * fresh page), then a free page run that holds it, before any mapping
     * made or moved: a program whose small objects grew the arenas and
     * went (replay_sqlite: a 1 -> 16 MiB realloc ladder among them)
     * otherwise keeps those pages and maps as many again for its big
     * blocks.  With the page run first, bench-mallocbench medium's second
     * run took its 16 MiB record table from the arena's free runs while
     * the first run's table stayed cached, and its spans then carved as
     * many never-touched arena pages: the run faulted 8,021 times for the
     * warm-up's work again, 4,091 so (peak 2.5 MB lower).  (Near the memory
     * limit fresh arena pages too, filled with free runs' resident pages:
     * pages.c, pages_take.) */
    if (align <= PAGE_SIZE && !(p = xlarge_alloc(size, align, zero, true)))
      p = large_run(pages_alloc_free(npages), size, zero);
    if (!p) p = xlarge_alloc(size, align, zero, false);
  }
  if (!p) errno = ENOMEM;
  pages_purge_poll();
  return p;
}

void large_free(span_t *s) {
  /* owner is NULL for large objects but a lithe_heap_t's (userheap.c) */
  if (unlikely(atomic_load_explicit(&s->owner, memory_order_relaxed) != NULL)) large_owner_forget(s);
  if (s->kind == SPAN_XLARGE) {
    xlarge_free(s);
    return;
  }
  lt_assert_v(s->kind == SPAN_LARGE, s->kind);
  lt_assert(atomic_load_explicit(&stat_large_live, memory_order_relaxed) > 0);
  atomic_fetch_sub_explicit(&stat_large_live, 1, memory_order_relaxed);
  if (lcache_put(s)) { pages_purge_poll(); return; }
  pages_free(s);
}

/* Resize in place (large: neighbouring pages; xlarge: mremap).  Returns the
 * object's (possibly moved, for xlarge) address, or NULL to copy instead. */
void *large_realloc(span_t *s, size_t size) {
  if (s->kind == SPAN_LARGE) {
    /* (above large_max only into a free neighbour: fresh pages for such
     * a block are a mapping's, not the arena's) */
    if (size <= SMALL_MAX) return NULL;
    return pages_try_resize(s, align_up(size, PAGE_SIZE) >> PAGE_SHIFT, size <= large_max) ? s->start
                                                                                        : NULL;
  }
  if (size <= large_max || s->block_size /* aligned */) return NULL;
  return xlarge_resize(s, size);
}
