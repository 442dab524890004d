/* SPDX-License-Identifier: MIT */
/* pages.c — the page heap: page runs for spans and large objects, from
 * the arenas (arena.c).
 *
 * Pages come back as free runs: span descriptors of kind SPAN_FREE, kept
 * on size lists by length (exact lists for 1..63 pages, one list above),
 * coalesced with their neighbours through the pagemap (a free run's first
 * and last page map to it).  A run that no free run holds takes the free
 * run at an arena's top, if one ends at the bump pointer, and only the
 * pages it lacks from above it (arena_carve).  Free runs keep their pages
 * until they have been free for LITHE_PURGE_DELAY_MS (reuse before giving
 * back: a fault costs more than a reuse), then madvise(DONTNEED) returns
 * them; lithe_collect(true) does it at once, and also gives back the
 * commit of free runs at an arena's top.
 *
 * One lock guards it all: the page heap is off the hot path (a thread
 * takes whole spans from it, ~64 KiB at a time, and caches empty ones). */
#define _GNU_SOURCE /* PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP (internal.h, LOCK_INIT) */
#include <errno.h>
#include <signal.h>
#include <stdlib.h> /* atexit */
#include <string.h>
#include <time.h>
#include "internal.h"

/* pages_lock is adaptive (LOCK_INIT): threads that take and free spans by
 * the thousand meet on it, and a futex sleep per meeting cost more than a
 * short spin (docs/lab/2026-12-01-medium-parallel.md). */
pthread_mutex_t pages_lock = LOCK_INIT;
size_t large_max;
/* xlarge mappings, live and freed (xlarge.c keeps them): counted here as
 * memory that may be resident (usage_locked) */
_Atomic size_t stat_xlarge_bytes, stat_xlarge_cached_bytes;

/* The caches above the page heap (large.c: the threads' large runs and
 * the freed xlarge mappings) hold memory that the page heap's purge pass
 * and its shortage of address space must reach.  The page heap sits
 * below them, so large_init registers them here, once, before the first
 * allocation: the one call up the layers, through a hook (alloc.c). */
static bool no_reclaim(uint64_t now, uint64_t by, uint64_t prev, bool all, bool hinted) {
  (void)now, (void)by, (void)prev, (void)all, (void)hinted;
  return false;
}
static uint64_t no_reclaim_due(uint64_t now) { (void)now; return UINT64_MAX; }
static bool no_expire(uint64_t by, bool all) { (void)by, (void)all; return false; }
static uint64_t no_expire_due(void) { return UINT64_MAX; }
static void no_yield(size_t bytes) { (void)bytes; }
static const page_caches_t no_caches = {no_reclaim, no_reclaim_due, no_expire, no_expire_due, no_yield};
const page_caches_t *page_caches = &no_caches;

_Atomic uint32_t pages_epoch; /* purge passes so far: heaps empty their bins
                                 when it moves (bin.c, heap_decay) */

#define NSIZE_LISTS 64 /* size_lists[1..63]: exact page counts; [0]: 64 pages and up */
static span_list_t size_lists[NSIZE_LISTS];
static uint64_t list_bits; /* bit i: size_lists[i] non-empty */
static uint64_t last_purge_ms;
static _Atomic uint64_t purge_seen_ms; /* last_purge_ms, for pages_purge_poll's look without the lock */
static size_t dirty_bytes;  /* free runs whose pages may be resident */
static size_t clean_bytes;  /* free runs known not resident (purged/fresh) */
static size_t in_use_bytes; /* pages handed out (spans, large objects) */

pthread_cond_t purge_cond;
_Atomic bool purger_running; /* the thread exists (in this process) */
uint64_t purge_due_ms = UINT64_MAX; /* when the oldest waiting memory is due */

void purger_init(void) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&purge_cond, &ca);
  pthread_condattr_destroy(&ca);
}

void pages_init(void) {
  large_max = lithe_opt.arena_size / 4;
  if (large_max > LARGE_MAX_CAP) large_max = LARGE_MAX_CAP;
}

size_t pages_arena_count(void) { return arena_total; }

/* Committed bytes that hold no resident page: clean free runs, and the
 * committed space above each arena's bump pointer.  Caller holds the lock. */
size_t pages_purged_bytes(void) {
  lt_assert_held(&pages_lock);
  size_t n = clean_bytes;
  for (arena_t *a = arena_list; a; a = a->next) n += (size_t)(a->commit_top - a->bump);
  return n;
}

static inline unsigned size_list_of(size_t npages) { return npages < NSIZE_LISTS ? (unsigned)npages : 0; }
static inline size_t npages_of(const span_t *s) { return s->bytes >> PAGE_SHIFT; }

/* ---- which pages of a free run may be resident ------------------------------
 * (the window: internal.h, run_dirty_part and run_dirty_merge) */

/* A window merged across a purged or moved-out hole holds fewer resident
 * bytes than its length, and its bound says neither how many nor where:
 * near the memory limit a cut from its start faulted in the hole, and the
 * limit's purge of its end took the bytes beyond the bound too.  mincore
 * says which pages are resident: the count becomes exact (s in the size lists)
 * and resident_vec[i] says whether the window's page i is.  The window
 * stays as it was: a page swapped out is not resident, but not zero.
 * Returns the window's pages, 0 when not looked at. */
#define REFINE_MAX ((size_t)64 * MiB)
static unsigned char resident_vec[REFINE_MAX / 4096] BIG_BSS; /* (pages_lock) */
static size_t run_refine(span_t *s, size_t len) {
  size_t w = (size_t)(s->dirty_hi - s->dirty_lo), ps = os_page_size();
  if (len > w) len = w;
  if (!s->dirty || s->dirty_n >= w || len > REFINE_MAX || ps > PAGE_SIZE || REFINE_MAX / ps > sizeof resident_vec ||
      !os_resident(s->dirty_lo, len, resident_vec))
    return 0;
  size_t per = PAGE_SIZE / ps, np = len >> PAGE_SHIFT, n = 0;
  for (size_t i = 0; i < np; i++) {
    unsigned char r = 0;
    for (size_t j = 0; j < per; j++) r |= resident_vec[i * per + j] & 1;
    resident_vec[i] = r; /* (i <= i * per: read before written) */
    n += r;
  }
  n = n ? n << PAGE_SHIFT : PAGE_SIZE; /* (a dirty run counts a page at least) */
  if (len == w && n < s->dirty_n) { /* (the whole window: its count) */
    dirty_bytes -= s->dirty_n - n;
    clean_bytes += s->dirty_n - n;
    s->dirty_n = n;
  }
  return np;
}

static void size_list_insert(span_t *s) {
  lt_assert_held(&pages_lock);
  lt_assert_v(s->kind == SPAN_FREE, s->kind);
  lt_assert_v(s->bytes && s->bytes % PAGE_SIZE == 0, s->bytes);
  lt_assert_v(s->start >= s->arena->base && s->start + s->bytes <= s->arena->bump,
              (uintptr_t)s->start);
  /* the window lies in the run and holds the count */
  lt_assert_v(!s->dirty == !s->dirty_n, s->dirty_n);
  if (s->dirty) {
    lt_assert_v(s->dirty_lo >= s->start && s->dirty_lo < s->dirty_hi && s->dirty_hi <= s->start + s->bytes,
                (uintptr_t)s->dirty_lo);
    lt_assert_cmp(s->dirty_n, <=, (size_t)(s->dirty_hi - s->dirty_lo));
  }
  unsigned b = size_list_of(npages_of(s));
  /* newest first; under a memory limit resident runs first, clean ones
   * last (find_fit_resident looks at a list's first runs).  Without a
   * limit newest first: clean runs last raised stress's peak
   * (docs/lab/2026-12-07-free-run-descriptors.md) */
  if (s->dirty || !limit_pressure_at) list_push_front(&size_lists[b], s);
  else list_push_back(&size_lists[b], s);
  list_bits |= 1ull << b;
  dirty_bytes += s->dirty_n;
  clean_bytes += s->bytes - s->dirty_n;
  pagemap_set_one(s->start, s);
  pagemap_set_one(s->start + s->bytes - PAGE_SIZE, s);
}

static void size_list_remove(span_t *s) {
  lt_assert_held(&pages_lock);
  lt_assert_v(s->kind == SPAN_FREE, s->kind);
  /* the byte counters never underflow */
  lt_assert_cmp(dirty_bytes, >=, s->dirty_n);
  lt_assert_cmp(clean_bytes, >=, s->bytes - s->dirty_n);
  unsigned b = size_list_of(npages_of(s));
  list_remove(&size_lists[b], s);
  if (!size_lists[b].first) list_bits &= ~(1ull << b);
  dirty_bytes -= s->dirty_n;
  clean_bytes -= s->bytes - s->dirty_n;
}

/* Descriptors of free runs, kept under pages_lock: a split takes one and
 * a merge gives one back at nearly every page-heap call, and each went
 * through meta_lock (span_desc_alloc and span_desc_free, a lock and an
 * unlock each).  RUN_DESC_STASH of them stay here, SPAN_DEAD with bytes 0
 * as on meta's free list; lithe_collect(true) gives them back first
 * (pages_collect), so meta_collect can purge their units.  128 (40 KiB of
 * descriptors at most) covers a run of aligned frees, each merge freeing
 * up to two (docs/lab/2026-12-07-free-run-descriptors.md). */
#define RUN_DESC_STASH 128
static span_t *run_desc_stash; /* linked by next */
static unsigned run_desc_n;

static span_t *run_desc_alloc(void) {
  lt_assert_held(&pages_lock);
  span_t *s = run_desc_stash;
  if (!s) return span_desc_alloc();
  lt_assert_v(s->kind == SPAN_DEAD && s->bytes == 0, (uintptr_t)s);
  run_desc_stash = s->next;
  run_desc_n--;
  memset(s, 0, sizeof *s);
  return s;
}

static void run_desc_free(span_t *s) {
  lt_assert_held(&pages_lock);
  if (run_desc_n >= RUN_DESC_STASH) {
    span_desc_free(s);
    return;
  }
  span_desc_mark_dead(s);
  s->next = run_desc_stash;
  run_desc_stash = s;
  run_desc_n++;
}

/* The stash back to meta's free list (lithe_collect(true)). */
static void run_desc_stash_drain(void) {
  lt_assert_held(&pages_lock);
  span_desc_free_dead(run_desc_stash, run_desc_n);
  run_desc_stash = NULL;
  run_desc_n = 0;
}

/* A free run of this arena that ends at / starts at `edge`, or NULL.
 * `page` must be a run's edge (its last page when ends_at, else its
 * first): only those entries are kept true.  A merge frees the absorbed
 * run's descriptor without rewriting its pages, so an interior page may
 * name a freed descriptor that span_desc_alloc is refilling outside
 * pages_lock (TSan saw that race when a split looked at its kept part's
 * last page; regress_split_edge).  The Debug build checks the page is an
 * edge of the live run it names. */
static span_t *free_neighbour(arena_t *a, char *page, char *edge, bool ends_at) {
  if (page < a->base || page >= a->bump) return NULL;
  span_t *t = pagemap_lookup(page);
  lt_assert_v(t && span_kind(t) != SPAN_DEAD && page == (ends_at ? t->start + t->bytes - PAGE_SIZE : t->start),
              (uintptr_t)page);
  if (!t || span_kind(t) != SPAN_FREE || t->arena != a || t->bytes == 0) return NULL;
  if (ends_at ? (t->start + t->bytes != edge) : (t->start != edge)) return NULL;
  return t;
}

/* The free time of run `into` once `other` merges into it.  One run has
 * one age, so the dirty part with more bytes gives it: a small run freed
 * again and again next to a big old one (a block churned beside free
 * space) must not keep the old pages from their purge forever, and a big
 * young run must not be purged early for a small old neighbour. */
static void merge_age(span_t *into, const span_t *other) {
  if (!other->dirty) return;
  if (!into->dirty || other->dirty_n > into->dirty_n) into->freed_ms = other->freed_ms;
}

/* Put a run back, merged with the free neighbours on the sides asked for.
 * A split asks only for the side away from the run it was cut from: the
 * page on that run's side is one of its interior pages, whose pagemap entry
 * is stale until pages_alloc sets the run's pages, and may name a
 * descriptor freed by an earlier merge that another thread is filling in
 * again outside pages_lock (span_desc_alloc; TSan saw it in
 * tsan_fork_threads).  That run is not FREE, so nothing merges there. */
enum { MERGE_BEFORE = 1, MERGE_AFTER = 2, MERGE_BOTH = 3 };
static void insert_coalesced_sides(span_t *s, int sides) {
  arena_t *a = s->arena;
  span_t *t = sides & MERGE_BEFORE ? free_neighbour(a, s->start - PAGE_SIZE, s->start, true) : NULL;
  if (t) {
    size_list_remove(t);
    merge_age(t, s);
    t->bytes += s->bytes;
    run_dirty_merge(t, s);
    run_desc_free(s);
    s = t;
  }
  t = sides & MERGE_AFTER ? free_neighbour(a, s->start + s->bytes, s->start + s->bytes, false) : NULL;
  if (t) {
    size_list_remove(t);
    merge_age(s, t);
    s->bytes += t->bytes;
    run_dirty_merge(s, t);
    run_desc_free(t);
  }
  s->kind = SPAN_FREE;
  size_list_insert(s);
}

static void insert_coalesced(span_t *s) { insert_coalesced_sides(s, MERGE_BOTH); }

/* Split the first `bytes` off run s into a new free run. */
static bool split_front(span_t *s, size_t bytes) {
  span_t *t = run_desc_alloc();
  if (!t) return false;
  t->kind = SPAN_FREE;
  t->arena = s->arena;
  t->start = s->start;
  t->bytes = bytes;
  run_dirty_part(t, s);
  t->freed_ms = s->freed_ms;
  s->start += bytes;
  s->bytes -= bytes;
  run_dirty_part(s, s);
  insert_coalesced_sides(t, MERGE_BEFORE); /* after t lies s, not FREE */
  return true;
}

/* Keep the first `bytes` of s; the rest becomes a free run. */
static bool split_tail(span_t *s, size_t bytes) {
  span_t *t = run_desc_alloc();
  if (!t) return false;
  t->kind = SPAN_FREE;
  t->arena = s->arena;
  t->start = s->start + bytes;
  t->bytes = s->bytes - bytes;
  run_dirty_part(t, s);
  t->freed_ms = s->freed_ms;
  s->bytes = bytes;
  run_dirty_part(s, s);
  insert_coalesced_sides(t, MERGE_AFTER); /* before t lies s, not FREE */
  return true;
}

/* Near the memory limit (limit.c): the smallest free run that holds
 * npages and has resident pages, or NULL.  Any run that fits would do
 * otherwise, but there a clean one is faulted in while the limit purges
 * resident ones to make room (docs/lab/2026-12-02-near-the-memory-limit.md).
 * (A list's resident runs come first, size_list_insert.) */
#define FIT_LOOK 8 /* runs looked at in each exact list */
static span_t *find_fit_resident(size_t npages) {
  if (npages < NSIZE_LISTS)
    for (uint64_t bits = list_bits & (~0ull << npages); bits; bits &= bits - 1) {
      unsigned k = 0;
      for (span_t *r = size_lists[__builtin_ctzll(bits)].first; r && k < FIT_LOOK; r = r->next, k++)
        if (r->dirty) return r;
    }
  span_t *best = NULL;
  size_t want = npages << PAGE_SHIFT;
  for (span_t *s = size_lists[0].first; s; s = s->next)
    if (s->dirty && s->bytes >= want && (!best || s->bytes < best->bytes)) best = s;
  return best;
}

static size_t usage_locked(void);
static span_t *find_fit(size_t npages) {
  if (unlikely(limit_pressure_at) && usage_locked() + (npages << PAGE_SHIFT) >= limit_pressure_at) {
    span_t *s = find_fit_resident(npages);
    if (s) return s;
  }
  if (npages < NSIZE_LISTS) {
    uint64_t bits = list_bits & (~0ull << npages); /* exact lists >= npages */
    if (bits) return size_lists[__builtin_ctzll(bits)].first;
  }
  span_t *best = NULL;
  size_t want = npages << PAGE_SHIFT;
  for (span_t *s = size_lists[0].first; s; s = s->next)
    if (s->bytes >= want && (!best || s->bytes < best->bytes)) {
      best = s;
      if (s->bytes == want) break;
    }
  return best;
}

/* find_fit, and when no free run holds npages, the runs in the threads'
 * large-run caches (large.c) back first and a second look: they come back
 * before any fresh page is carved or mapped, so they never add to the
 * peak (pages_take; resident_fit weighs the same run). */
static span_t *find_fit_reclaim(size_t npages) {
  span_t *s = find_fit(npages);
  if (!s) {
    uint64_t now = os_now_ms();
    if (page_caches->reclaim(now, now, 0, true, true)) s = find_fit(npages);
  }
  return s;
}

/* Commit up to need; the fresh pages' bytes are offered to the caches
 * above (cached xlarge memory makes room for them, xlarge.c). */
static bool commit_to(arena_t *a, char *need) {
  char *was = a->commit_top;
  if (!arena_commit_to(a, need)) return false;
  if (a->commit_top > was) page_caches->yield((size_t)(a->commit_top - was));
  return true;
}

/* Fresh pages from some arena's bump pointer.  With top_ok, a free run
 * that ends at an arena's bump (too small, or find_fit would have taken
 * it) is extended by the pages it lacks instead, as dlmalloc grows its
 * top chunk: the run's freed pages are reused and only the difference is
 * fresh.  Carving above it left those pages beside the new run, and a
 * program whose blocks grow from round to round (a realloc ladder)
 * pushed the top up by the whole of each new block (regress_carve_top;
 * docs/lab/2026-12-06-top-run-grows.md).  Without top_ok (a run to be
 * filled with moved pages, which must read as zero) only fresh pages. */
static span_t *arena_carve(size_t npages, bool top_ok) {
  size_t bytes = npages << PAGE_SHIFT;
  arena_t *a;
  for (a = top_ok ? arena_list : NULL; a; a = a->next) {
    if (a->bump == a->base) continue;
    span_t *t = free_neighbour(a, a->bump - PAGE_SIZE, a->bump, true);
    if (!t || t->bytes >= bytes) continue;
    size_t more = bytes - t->bytes;
    if ((size_t)(a->base + a->size - a->bump) < more || !commit_to(a, a->bump + more)) continue;
    size_list_remove(t);
    t->bytes = bytes; /* (its window of resident pages stays where it was) */
    a->bump += more;
    return t;
  }
  for (a = arena_list; a; a = a->next)
    if ((size_t)(a->base + a->size - a->bump) >= bytes) break;
  if (!a && !(a = arena_new(bytes))) {
    /* cached xlarge mappings hold address space: under ulimit -v they may
     * be what keeps an arena out (large.c) */
    if (!page_caches->expire(0, true)) return NULL;
    arena_starved = false; /* room again, perhaps: the whole halving */
    if (!(a = arena_new(bytes))) return NULL;
  }
  if (!commit_to(a, a->bump + bytes)) return NULL;
  span_t *s = run_desc_alloc();
  if (!s) return NULL;
  s->kind = SPAN_FREE;
  s->arena = a;
  s->start = a->bump;
  s->bytes = bytes;
  run_clean(s); /* never touched: reads as zero */
  a->bump += bytes;
  return s;
}

/* Purge free runs that have been free long enough by `by` (now, or later
 * for the purge thread, which starts ahead of the due time: what is due
 * within its lead counts as due); then, while more than `keep` bytes of
 * free pages are still resident, purge others too.  Stamps (a run that
 * stays dirty, the pass's time) take `now`, the real time, so a retry
 * waits a whole delay from the failure.  (The decay alone keeps
 * everything when the program goes quiet; `keep` is what an explicit
 * lithe_collect(false) leaves for reuse.) */
size_t purge_runs(uint64_t now, uint64_t by, bool force, size_t keep) {
  size_t purged = 0;
  long delay = lithe_opt.purge_delay_ms;
  /* the threads' large-run caches (large.c) first: what has waited the
   * delay there becomes a free run, freed when it was cached, so the loop
   * below purges it; all of it when a collection (or the memory limit)
   * asks for more than the decay */
  page_caches->reclaim(now, by, last_purge_ms, force || keep != SIZE_MAX, false);
  uint64_t due = UINT64_MAX; /* of the runs that stay dirty */
  for (unsigned b = 0; b < NSIZE_LISTS; b++)
    for (span_t *s = size_lists[b].first; s; s = s->next) {
      if (!s->dirty) continue;
      bool due_now = force || (delay >= 0 && by - s->freed_ms >= (uint64_t)delay), part = false;
      if (!due_now && dirty_bytes > keep && dirty_bytes - keep < s->dirty_n) {
        /* only what is over `keep`, from the window's end (a run is cut
         * from its front): purged whole, a run of 16 MiB went for a
         * 40 KiB block near the limit, and was faulted in again.  The
         * count is a bound, so the window's bytes beyond it go too: they
         * may be the resident ones. */
        size_t w = (size_t)(s->dirty_hi - s->dirty_lo);
        size_t x = w - s->dirty_n + align_up(dirty_bytes - keep, PAGE_SIZE);
        if (x < w && os_purge(s->dirty_hi - x, x)) {
          size_t n = s->dirty_n;
          w -= x;
          s->dirty_hi -= x;
          s->dirty_n = n < w ? n : w;
          dirty_bytes -= n - s->dirty_n;
          clean_bytes += n - s->dirty_n;
          purged += n - s->dirty_n;
          part = true;
        }
      }
      if (!part && (due_now || dirty_bytes > keep)) {
        if (os_purge(s->dirty_lo, (size_t)(s->dirty_hi - s->dirty_lo))) {
          lt_assert_cmp(dirty_bytes, >=, s->dirty_n);
          dirty_bytes -= s->dirty_n;
          clean_bytes += s->dirty_n;
          purged += s->dirty_n;
          run_clean(s);
          continue;
        }
        s->freed_ms = now; /* stays dirty (mlock'ed, say): try again a delay later */
      }
      if (delay > 0 && s->freed_ms + (uint64_t)delay < due) due = s->freed_ms + (uint64_t)delay;
    }
  last_purge_ms = now;
  atomic_store_explicit(&purge_seen_ms, now, memory_order_relaxed);
  atomic_fetch_add_explicit(&pages_epoch, 1, memory_order_relaxed);
  uint64_t ldue = page_caches->reclaim_due(now);
  if (ldue < due) due = ldue;
  /* cached xlarge mappings: the expired ones, and all of them when a
   * collection (or the memory limit) asks for more than the decay */
  page_caches->expire(by, force || keep != SIZE_MAX);
  uint64_t xdue = page_caches->expire_due();
  purge_due_ms = xdue < due ? xdue : due;
  return purged;
}

/* A purge by a caller on the allocation and free paths: due means due now. */
static size_t purge_runs_now(bool force, size_t keep) {
  uint64_t now = os_now_ms();
  return purge_runs(now, now, force, keep);
}

/* How long before its due time the thread starts on waiting memory, so
 * that it is gone by then: madvise(MADV_DONTNEED) takes time in
 * proportion to the bytes.  PURGE_BYTES_PER_MS is that rate, rounded
 * down (docs/lab/2026-11-29-purging.md); the lead is what waits at that
 * rate, at most a quarter of the delay, so memory always waits at least
 * 3/4 of it, and a program that frees a few MiB sees no difference. */
#define PURGE_BYTES_PER_MS ((size_t)4 * MiB)
uint64_t purger_lead_ms; /* the lead of the thread's current wait */

/* What waits for the purge: free pages not yet purged and cached xlarge
 * mappings (pages_lock held). */
static size_t waiting_bytes(void) {
  return dirty_bytes + atomic_load_explicit(&stat_xlarge_cached_bytes, memory_order_relaxed);
}

uint64_t purge_lead_ms(void) {
  lt_assert_held(&pages_lock);
  uint64_t cap = (uint64_t)lithe_opt.purge_delay_ms / 4;
  uint64_t lead = waiting_bytes() / PURGE_BYTES_PER_MS;
  return lead < cap ? lead : cap;
}

/* Freed memory starts waiting (pages_lock held): the thread, if there is
 * one, is to wake when it is due.  Only a signal (purge.c: no thread is started or joined here). */
void pages_waiting(uint64_t freed_ms) {
  lt_assert_held(&pages_lock);
  if (!purger_running || lithe_opt.purge_delay_ms <= 0) return;
  uint64_t due = freed_ms + (uint64_t)lithe_opt.purge_delay_ms;
  if (due < purge_due_ms) {
    purge_due_ms = due;
    pthread_cond_signal(&purge_cond);
  } else {
    uint64_t lead = purge_lead_ms();
    if (lead > purger_lead_ms + 8) { /* so much more waits: it starts sooner */
      purger_lead_ms = lead;          /* (one signal a step of 8 ms) */
      pthread_cond_signal(&purge_cond);
    }
  }
}

/* The child of fork has no purge thread: its calls purge. */
void pages_fork_child(void) {
  purger_running = false;
  purger_init();
}

/* What may be resident (limit.c): pages out, free pages not purged,
 * xlarge mappings (live and cached), metadata.  Caller holds the lock. */
static size_t usage_locked(void) {
  return in_use_bytes + dirty_bytes + atomic_load_explicit(&stat_xlarge_bytes, memory_order_relaxed) +
         atomic_load_explicit(&stat_xlarge_cached_bytes, memory_order_relaxed) +
         atomic_load_explicit(&os_stats.metadata, memory_order_relaxed);
}

/* Near the memory limit (limit.c): the free pages that may stay resident
 * when `more` are added and the count is to stay at 90 % of the limit;
 * purging only the excess keeps the rest for reuse (bench-limitcycle
 * under LITHE_MEMORY_LIMIT=80m: see docs/profiling.md). */
static size_t pressure_keep(size_t more) {
  size_t u = usage_locked() + more;
  size_t over = u > limit_pressure_at ? u - limit_pressure_at : 0;
  return dirty_bytes > over ? dirty_bytes - over : 0;
}

/* Bytes that may be resident once `more` are added; from 90 % of the
 * memory limit on, the free runs are purged first (limit.c). */
size_t pages_usage(size_t more) {
  pthread_mutex_lock(&pages_lock);
  size_t n = usage_locked();
  if (limit_pressure_at && n + more >= limit_pressure_at) {
    purge_runs_now(false, pressure_keep(more));
    n = usage_locked();
  }
  pthread_mutex_unlock(&pages_lock);
  return n;
}

/* Near the memory limit (limit.c) freed pages are purged at once. */
static bool limit_check_locked(void) {
  bool p = limit_pressure_at && usage_locked() >= limit_pressure_at;
  if (p != atomic_load_explicit(&limit_pressure, memory_order_relaxed))
    atomic_store_explicit(&limit_pressure, p, memory_order_relaxed);
  return p;
}

/* How often the calls run a purge pass: four times a delay (at most a
 * quarter of it late), every 10 ms for delays of 40 ms and less. */
static uint64_t purge_every_ms(long delay) { return delay > 40 ? (uint64_t)delay / 4 : 10; }

static void maybe_purge(void) {
  if (unlikely(limit_pressure_at) && limit_check_locked()) { purge_runs_now(false, pressure_keep(0)); return; }
  long delay = lithe_opt.purge_delay_ms;
  /* (the thread purges on time; a delay set to 0 since, by mallopt, is
   * the callers' again at once) */
  if (delay < 0 || (purger_running && delay > 0)) return;
  uint64_t now = os_now_ms();
  if (delay == 0 || now - last_purge_ms >= purge_every_ms(delay)) purge_runs(now, now, false, SIZE_MAX);
}

/* A run whose pages a failed move left unmapped or not ours: never handed
 * out again, held as an allocated run (counted in use, mapped to itself). */
static void run_retire(span_t *s) {
  lt_assert_held(&pages_lock);
  s->kind = SPAN_LARGE;
  pagemap_set(s->start, npages_of(s), s);
  in_use_bytes += s->bytes;
  stat_in_use(s->bytes, 0);
}

/* Near the memory limit, a run of fresh or purged pages `s` (out of the
 * size lists) is filled with the resident pages of free runs: each move takes
 * a run's window (where its resident pages lie) that it holds, or the
 * front of a bigger window whose pages are all resident, FILL_MIN or more,
 * the most resident first: mremap moves them (page tables, no copy) and a
 * fresh mapping fills each hole, which reads as zero then.
 * Without it the limit purged those runs to make room and the fresh pages
 * were faulted in: bench-limitcycle's phases each need blocks just bigger
 * than the holes the last one left.  Each move costs a system call more
 * than a purge, and a mapping (kernel VMA) more while the pages stay
 * apart, so runs under FILL_MIN (64 faults of 4 KiB) are purged as
 * before; that bounds the extra mappings by the limit / FILL_MIN
 * (docs/lab/2026-12-02-near-the-memory-limit.md).
 * Only its first `want` bytes (what is handed out; the rest of a bigger
 * clean run stays clean).  Returns the bytes moved; *lost: a refusal left
 * some of the run's pages unmapped (it is never handed out then). */
#define FILL_MIN ((size_t)256 * KiB)
#define FILL_MOVES 16 /* per run: its scans of the size lists stay few */
static size_t pages_fill(span_t *s, size_t want, bool *lost) {
  lt_assert_held(&pages_lock);
  size_t off = 0;
  *lost = false;
  for (unsigned k = 0; k < FILL_MOVES && want - off >= FILL_MIN; k++) {
    size_t room = want - off, got = 0;
    span_t *best = NULL;
    for (unsigned b = 0; b < NSIZE_LISTS; b++) {
      if (b && (size_t)b << PAGE_SHIFT < FILL_MIN) continue;
      for (span_t *r = size_lists[b].first; r; r = r->next) {
        if (!r->dirty) continue;
        /* a window that fits gives its count; a bigger one, if its pages
         * are all resident, gives the room (its front moves) */
        size_t w = (size_t)(r->dirty_hi - r->dirty_lo);
        size_t g = w <= room ? r->dirty_n : r->dirty_n == w ? room : 0;
        if (g >= FILL_MIN && g > got) {
          best = r;
          got = g;
        }
      }
    }
    if (!best) break;
    /* its window (the rest of the run reads as zero already), or the
     * window's front */
    char *lo = best->dirty_lo;
    size_t w = (size_t)(best->dirty_hi - lo), len = w < room ? w : room;
    int moved = os_move_over(lo, len, s->start + off);
    if (moved < 0) {
      *lost = true;
      break;
    }
    if (moved == 0) break; /* (a run spanning two mappings, say) */
    size_list_remove(best);
    if (os_map_at(lo, len)) { /* fresh pages; the run stays as it was: no merge */
      if (len == w) {
        run_clean(best);
      } else { /* (all of its pages were resident) */
        best->dirty_lo += len;
        best->dirty_n -= len;
      }
      size_list_insert(best);
    } else { /* the hole is not ours again */
      run_retire(best);
    }
    off += len;
  }
  if (off) run_dirty_all(s);
  return off;
}

/* A run of `npages` pages aligned to `align` (a power of two; <= PAGE_SIZE
 * means plain page alignment).  The caller sets kind and fields; all its
 * pages map to it.  NULL when the OS refuses memory. */
static span_t *pages_take(size_t npages, size_t align, bool fresh_ok, span_t *back);
span_t *pages_alloc(size_t npages, size_t align) { return pages_take(npages, align, true, NULL); }

/* The same, the runs of list `back` (linked through `next`: a thread's
 * large-run cache, large.c) first given back under the same lock, so they
 * can serve it. */
span_t *pages_alloc_after(size_t npages, size_t align, span_t *back) {
  return pages_take(npages, align, true, back);
}

/* A free run of `npages` pages if the page heap holds one, fresh arena
 * pages only near the memory limit: where blocks above large_max go
 * before they map memory of their own (large.c), so freed page runs serve
 * them too. */
span_t *pages_alloc_free(size_t npages) { return pages_take(npages, 0, false, NULL); }

/* Where in free run s a run of `want` bytes is cut (the bytes before it
 * stay free): where it holds the most of s's resident pages, so a run
 * merged from purged and freed pages hands out the freed ones rather than
 * fault in the purged ones beside them; the front when that is as good. */
static size_t take_offset(const span_t *s, size_t want) {
  if (!s->dirty || s->bytes == want) return 0;
  size_t lo = (size_t)(s->dirty_lo - s->start), hi = (size_t)(s->dirty_hi - s->start);
  if (hi <= want) return 0;                  /* the front holds the window */
  if (want < hi - lo) return lo;             /* a part of it: from its start */
  if (s->bytes - want <= lo) return s->bytes - want; /* the end holds it */
  return hi - want;                          /* ends where the window does */
}

/* An upper bound of the resident bytes that stay free when [off, off +
 * want) is cut from free run s: what its pieces before and after count. */
static size_t rest_dirty(const span_t *s, size_t off, size_t want) {
  if (!s->dirty) return 0;
  size_t n = 0;
  char *piece[2][2] = {{s->start, s->start + off}, {s->start + off + want, s->start + s->bytes}};
  for (unsigned i = 0; i < 2; i++) {
    char *lo = s->dirty_lo > piece[i][0] ? s->dirty_lo : piece[i][0];
    char *hi = s->dirty_hi < piece[i][1] ? s->dirty_hi : piece[i][1];
    if (lo < hi) n += (size_t)(hi - lo) < s->dirty_n ? (size_t)(hi - lo) : s->dirty_n;
  }
  return n;
}

/* ---- the memory limit's reclaim ---------------------------------------- */

static __thread bool limit_retrying __attribute__((tls_model("initial-exec")));
/* The hard limit refused npages (pages_take, lock released): one full
 * collection, then one more try; NULL + ENOMEM if it still does not fit. */
static span_t *limit_refused(size_t npages, size_t align) {
  lt_assert(limit_hard); /* only the hard limit refuses (pages_take) */
  if (limit_retrying) { errno = ENOMEM; return NULL; }
  limit_retrying = true;
  limit_reclaim();
  pages_collect(true);
  span_t *s = pages_alloc(npages, align);
  limit_retrying = false;
  if (!s) errno = ENOMEM;
  return s;
}

static span_t *pages_take(size_t npages, size_t align, bool fresh_ok, span_t *back) {
  size_t extra = align > PAGE_SIZE ? (align >> PAGE_SHIFT) - 1 : 0;
  size_t total = npages + extra, want = npages << PAGE_SHIFT;
  pthread_mutex_lock(&pages_lock);
  if (back) pages_release_list_locked(back, os_now_ms());
  span_t *s = find_fit_reclaim(total);
  /* (near the memory limit fresh pages for a block above large_max too:
   * pages_fill below fills them with free runs' resident pages, where a
   * mapping of its own is faulted in whole while the limit purges them;
   * bench-limitcycle --limit 80m: 61.4k -> 57.3k minor faults) */
  if (!s && !fresh_ok &&
      !(unlikely(limit_pressure_at) && usage_locked() + (total << PAGE_SHIFT) >= limit_pressure_at)) {
    pthread_mutex_unlock(&pages_lock);
    return NULL;
  }
  /* the run's first byte in s: its alignment, or its resident pages */
  size_t off = !s ? 0
               : extra ? (size_t)((char *)align_up((uintptr_t)s->start, align) - s->start)
                       : take_offset(s, want);
  /* near the limit, a sparse window (merged across a purged or moved-out
   * hole) whose cut would fault: the cut goes where it holds the most
   * resident pages, as mincore finds them.  bench-limitcycle --limit 80m:
   * 42.7k -> 36.4k minor faults looking at the whole window (its 72-phase
   * counting copy 183.1k -> 177.4k), but mincore over windows of up to
   * 20 MB for every 40 KiB cut cost more than the faults saved (7 % of the
   * samples in mincore_pte_range); its front first, 35.9k (184.8k), and
   * 24 alternating runs: medians 116.1 against 154.9 ms.  (run_refine in
   * the limit's purge too: 46.9k, 217.6k.) */
  if (s && !extra && s->dirty && s->dirty_n < (size_t)(s->dirty_hi - s->dirty_lo) && unlikely(limit_pressure_at) &&
      want + rest_dirty(s, off, want) > s->dirty_n && usage_locked() + want >= limit_pressure_at) {
    /* the window's front first (4 runs' worth, 1 MiB at least), all of it
     * if no run there is all resident */
    size_t k = want >> PAGE_SHIFT, len = 4 * want > MiB ? 4 * want : MiB;
    for (unsigned pass = 0; pass < 2; pass++, len = SIZE_MAX) {
      size_t np = run_refine(s, len), c = 0, best = 0, at = 0;
      for (size_t i = 0; i < np; i++) { /* the most resident pages in k */
        c += resident_vec[i];
        if (i >= k) c -= resident_vec[i - k];
        if (c > best) {
          best = c;
          at = i + 1 > k ? i + 1 - k : 0;
        }
      }
      if (!np) break;
      if (best == k || pass || np << PAGE_SHIFT == (size_t)(s->dirty_hi - s->dirty_lo)) {
        off = (size_t)(s->dirty_lo - s->start) + (at << PAGE_SHIFT);
        if (off > s->bytes - want) off = s->bytes - want;
        break;
      }
    }
  }
  /* memory limit (limit.c): fresh or purged pages that take the count to
   * 90 % of the limit first purge as many of the free runs that did not
   * fit as keeps it there; past the hard limit they are refused.  What
   * the count grows by: the run, less the resident pages of s that it
   * takes (rest_dirty: what s's pieces left free still count).  A run
   * merged from freed and purged pages adds its purged ones: the limit
   * was passed (94.7 MB for 80m) when only a clean run was weighed. */
  bool taken = false, out = false;
  size_t more = s ? want + rest_dirty(s, off, want) - s->dirty_n : total << PAGE_SHIFT;
  if (unlikely(limit_pressure_at) && more && usage_locked() + more >= limit_pressure_at) {
    /* s leaves the size lists first, so the purge keeps its resident pages */
    if (s) {
      size_list_remove(s);
      out = true;
      more = want + rest_dirty(s, off, want); /* (s no longer counted) */
    }
    /* the run is taken first, to be filled with dirty runs' pages: what
     * those give counts once, in the run, and the purge below has less
     * to give back (counted as in use meanwhile) */
    if (!extra && (s ? !s->dirty : (s = arena_carve(total, false)) != NULL)) {
      bool lost;
      s->kind = SPAN_LARGE; /* not FREE: the split must not merge into it */
      if (s->bytes > (total << PAGE_SHIFT)) (void)split_tail(s, total << PAGE_SHIFT); /* (the rest stays clean) */
      pages_fill(s, total << PAGE_SHIFT, &lost);
      in_use_bytes += s->bytes;
      if (lost) { /* never handed out; a fresh one below */
        stat_in_use(s->bytes, 0);
        pagemap_set(s->start, npages_of(s), s);
        s = NULL;
      } else {
        taken = true;
      }
    }
    purge_runs_now(false, pressure_keep(taken ? 0 : more));
    if (limit_hard && usage_locked() + (taken ? 0 : more) > limit_bytes) {
      if (taken) {
        in_use_bytes -= s->bytes;
        insert_coalesced(s);
      } else if (s) {
        size_list_insert(s); /* as it was (the purge merges nothing) */
      }
      pthread_mutex_unlock(&pages_lock);
      return limit_refused(npages, align);
    }
    if (taken) in_use_bytes -= s->bytes; /* (added below, as for any run) */
  }
  if (!taken) {
    if (s && !out) size_list_remove(s);
    else if (!s) s = arena_carve(total, true);
  }
  if (!s) { pthread_mutex_unlock(&pages_lock); return NULL; }
  s->kind = SPAN_LARGE; /* not FREE: the splits below must not merge into it */
  if (extra) off = (size_t)((char *)align_up((uintptr_t)s->start, align) - s->start); /* (s may be carved) */
  if (!taken && off && !split_front(s, off)) goto fail;
  if (s->bytes > want && !split_tail(s, want)) goto fail;
  pagemap_set(s->start, npages, s);
  in_use_bytes += s->bytes;
  stat_in_use(s->bytes, 0);
  /* what s's pieces still count was out of the purge's reach above: with
   * them back in the size lists, the count goes back to 90 % (a 128 KiB run cut
   * from a run of 15 MB resident took bench-limitcycle to 81 MB) */
  if (out && usage_locked() > limit_pressure_at) purge_runs_now(false, pressure_keep(0));
  /* the pagemap maps every page of the run to it */
  lt_assert(pagemap_lookup(s->start) == s && pagemap_lookup(s->start + s->bytes - PAGE_SIZE) == s);
  lt_assert_cmp(s->bytes, ==, want);
  bool pressure = unlikely(limit_pressure_at) && limit_check_locked();
  pthread_mutex_unlock(&pages_lock);
  if (unlikely(pressure)) limit_pressure_collect();
  return s;
fail:
  insert_coalesced(s);
  pthread_mutex_unlock(&pages_lock);
  return NULL;
}

/* A run handed out comes back (pages_lock held): a free run again, freed
 * at `freed_ms` (s may be merged away, its descriptor reused). */
void pages_release_locked(span_t *s, uint64_t freed_ms) {
  lt_assert_held(&pages_lock);
  run_dirty_all(s);
  s->freed_ms = freed_ms;
  s->owner = NULL;
  s->free = NULL;
  span_set_carved_lim(s, 0); /* no longer small: free() of a pointer here goes slow */
  atomic_store_explicit(&s->thread_free, 0, memory_order_relaxed);
  lt_assert_cmp(in_use_bytes, >=, s->bytes);
  lt_assert(pagemap_lookup(s->start) == s);
  in_use_bytes -= s->bytes;
  stat_in_use(0, s->bytes);
  insert_coalesced(s);
  pages_waiting(freed_ms);
}

/* The same for each run of a list linked through `next` (a thread's
 * large-run cache, large.c). */
void pages_release_list_locked(span_t *list, uint64_t freed_ms) {
  for (span_t *s = list, *next; s; s = next) {
    next = s->next;
    pages_release_locked(s, freed_ms);
  }
}

/* Without the thread, calls are what purges: a program that recycles
 * cached large blocks and xlarge mappings never frees into the page heap,
 * so the large paths look too, at a pass's interval (maybe_purge). */
void pages_purge_poll(void) {
  long delay = lithe_opt.purge_delay_ms;
  if (delay <= 0 || purger_running) return;
  if (os_now_ms() - atomic_load_explicit(&purge_seen_ms, memory_order_relaxed) < purge_every_ms(delay)) return;
  pthread_mutex_lock(&pages_lock);
  maybe_purge();
  pthread_mutex_unlock(&pages_lock);
}

void pages_free(span_t *s) {
  pthread_mutex_lock(&pages_lock);
  pages_release_locked(s, os_now_ms());
  maybe_purge();
  pthread_mutex_unlock(&pages_lock);
}

/* Near the memory limit a freed xlarge mapping is not cached (xlarge.c)
 * but its pages are resident, and the page heap's next runs would fault
 * in as many fresh ones (the limit first purging free runs to make room
 * for them): so the mapping's pages move (mremap, page tables only) into
 * the page heap as a dirty free run, over a clean free run that holds
 * them, else over fresh arena pages (fewer faults near the limit:
 * docs/lab/2026-12-02-near-the-memory-limit.md).  false:
 * not moved, the mapping is as it was. */
bool pages_adopt(void *p, size_t bytes) {
  if (bytes % PAGE_SIZE) return false;
  pthread_mutex_lock(&pages_lock);
  span_t *s = NULL;
  for (span_t *r = size_lists[0].first; r; r = r->next) /* (xlarge: above the exact lists) */
    if (!r->dirty && r->bytes >= bytes && (!s || r->bytes < s->bytes)) s = r;
  if (s) {
    size_list_remove(s);
    s->kind = SPAN_LARGE; /* not FREE: the split must not merge into it */
    if (s->bytes > bytes && !split_tail(s, bytes)) {
      insert_coalesced(s);
      s = NULL;
    }
  } else {
    s = arena_carve(bytes >> PAGE_SHIFT, false);
  }
  if (!s) {
    pthread_mutex_unlock(&pages_lock);
    return false;
  }
  int moved = os_move_over(p, bytes, s->start);
  if (moved < 0) {
    /* the run's pages are gone (or another thread's mapping lies there) */
    lt_assert_cmp(s->bytes, ==, bytes); /* split or carved to it */
    run_retire(s);
    pthread_mutex_unlock(&pages_lock);
    return false;
  }
  uint64_t now = os_now_ms();
  if (moved > 0) run_dirty_all(s);
  else run_clean(s);
  s->freed_ms = now;
  insert_coalesced(s);
  if (moved > 0) pages_waiting(now);
  pthread_mutex_unlock(&pages_lock);
  return moved > 0;
}

/* Whether a run of npages is better taken anew than grown at an arena's
 * top (pages_lock held).  Growing there faults in the `need` fresh bytes
 * it adds, want - old_bytes; moving (the caller copies the block) takes
 * the free run a new allocation would (find_fit_reclaim, as pages_take
 * does), which faults in at most what that run lacks of resident bytes,
 * want - dirty_n: fewer when dirty_n > old_bytes.  The copy costs ~0.1 ns a byte where a fault
 * costs 3-4 ns, and the old run's pages stay resident for the next
 * block.  Growing at the top whatever lay free pushed the top up in
 * every round of a program that frees and reallocs the same way
 * (regress_realloc_top; docs/lab/2026-12-05-realloc-at-arena-top.md). */
static bool resident_fit(size_t npages, size_t old_bytes) {
  const span_t *r = find_fit_reclaim(npages);
  return r && r->dirty_n > old_bytes;
}

/* Grow or shrink a large span in place: take pages from the free run (or,
 * with fresh_ok, the untouched arena space, unless resident_fit) right
 * after it, or give the tail back. */
bool pages_try_resize(span_t *s, size_t npages, bool fresh_ok) {
  size_t want = npages << PAGE_SHIFT;
  bool ok = false;
  pthread_mutex_lock(&pages_lock);
  arena_t *a = s->arena;
  if (want <= s->bytes) {
    size_t old_bytes = s->bytes;
    run_dirty_all(s); /* the tail held the object's bytes */
    s->freed_ms = os_now_ms();
    ok = want == s->bytes || split_tail(s, want);
    if (ok && want < old_bytes) pages_waiting(s->freed_ms);
    if (ok) lt_assert_cmp(in_use_bytes, >=, old_bytes - s->bytes);
    if (ok) in_use_bytes -= old_bytes - s->bytes;
    if (ok) stat_in_use(0, old_bytes - s->bytes);
  } else {
    size_t need = want - s->bytes;
    char *next = s->start + s->bytes;
    span_t *t = free_neighbour(a, next, next, false);
    if (t && t->bytes >= need) {
      size_list_remove(t);
      if (t->bytes > need) {
        t->start += need;
        t->bytes -= need;
        run_dirty_part(t, t);
        size_list_insert(t);
      } else {
        run_desc_free(t);
      }
      ok = true;
    } else if (fresh_ok && next == a->bump && (size_t)(a->base + a->size - a->bump) >= need &&
               !resident_fit(npages, s->bytes) && commit_to(a, a->bump + need)) {
      a->bump += need;
      ok = true;
    }
    if (ok) {
      pagemap_set(next, need >> PAGE_SHIFT, s);
      s->bytes = want;
      in_use_bytes += need;
      stat_in_use(need, 0);
    }
  }
  pthread_mutex_unlock(&pages_lock);
  return ok;
}

/* Purge: with force every free run, and the commit of each arena's free
 * top too; without, the decayed runs and whatever exceeds a reserve of
 * max(1 MiB, 1/8 of the pages in use) kept for reuse. Returns bytes purged. */
size_t pages_collect(bool force) {
  pthread_mutex_lock(&pages_lock);
  size_t keep = in_use_bytes / 8 > 1 * MiB ? in_use_bytes / 8 : 1 * MiB;
  size_t purged = purge_runs_now(force, keep);
  if (force) {
    for (arena_t *a = arena_list; a; a = a->next) {
      if (a->bump == a->base) continue;
      span_t *t = free_neighbour(a, a->bump - PAGE_SIZE, a->bump, true);
      if (!t) continue;
      /* The bump comes down to the OS page boundary at or above the run's
       * start, not below: only whole OS pages are decommitted, and what
       * lies under the bump must have been zeroed (a carve from the bump
       * is taken as never touched).  With OS pages above 8 KiB the piece
       * of the run below that boundary stays a free run, dirty. */
      char *top = (char *)align_up((uintptr_t)t->start, os_page_size());
      if (top >= a->bump) continue;
      size_list_remove(t);
      /* the map's pages too: no span lies above the bump, up to the
       * arena's end (so the page of entries the bump ends in goes too) */
      pagemap_forget(top, (size_t)(a->base + a->size - top));
      a->bump = top;
      if (top > t->start) {
        t->bytes = (size_t)(top - t->start);
        run_dirty_part(t, t);
        size_list_insert(t);
      } else {
        run_desc_free(t);
      }
      arena_decommit_above(a, top);
    }
    run_desc_stash_drain(); /* after the merges above, which fill it */
  }
  pthread_mutex_unlock(&pages_lock);
  return purged;
}

/* Every span of every arena, bottom up, for introspection (introspect.c):
 * fn runs under pages_lock, so it must neither allocate nor lock.  Runs are
 * walked by their lengths: page-heap runs and allocated spans tile each
 * arena from base to bump, and each run's first page maps to it. */
void pages_walk(void (*fn)(const span_t *s, void *arg), void *arg) {
  pthread_mutex_lock(&pages_lock);
  for (arena_t *a = arena_list; a; a = a->next) {
    for (char *p = a->base; p < a->bump;) {
      const span_t *s = pagemap_lookup(p);
      if (s && s->start == p && s->bytes >= PAGE_SIZE) {
        fn(s, arg);
        p += s->bytes;
      } else {
        p += PAGE_SIZE; /* not a run's first page: cannot happen while the tiling holds */
      }
    }
  }
  pthread_mutex_unlock(&pages_lock);
}

#if LITHE_DEBUG
/* Debug: the page heap is consistent (debug.c's lithe_verify): every free
 * run is binned by its length, mapped at both ends, inside its arena, not
 * next to another free run (coalesced), and the byte counters add up. */
void pages_verify(void) {
  pthread_mutex_lock(&pages_lock);
  size_t dirty = 0, clean = 0;
  for (unsigned b = 0; b < NSIZE_LISTS; b++) {
    lt_assert_v(!size_lists[b].first == !(list_bits & (1ull << b)), b);
    for (span_t *s = size_lists[b].first; s; s = s->next) {
      lt_assert_v(s->kind == SPAN_FREE, s->kind);
      lt_assert_cmp(size_list_of(npages_of(s)), ==, b);
      lt_assert(pagemap_lookup(s->start) == s);
      lt_assert(pagemap_lookup(s->start + s->bytes - PAGE_SIZE) == s);
      arena_t *a = s->arena;
      lt_assert_v(s->start >= a->base && s->start + s->bytes <= a->bump, (uintptr_t)s->start);
      lt_assert(!free_neighbour(a, s->start - PAGE_SIZE, s->start, true));
      lt_assert(!free_neighbour(a, s->start + s->bytes, s->start + s->bytes, false));
      dirty += s->dirty_n;
      clean += s->bytes - s->dirty_n;
    }
  }
  lt_assert_cmp(dirty, ==, dirty_bytes);
  lt_assert_cmp(clean, ==, clean_bytes);
  for (arena_t *a = arena_list; a; a = a->next) {
    lt_assert_cmp(a->base, <=, a->bump);
    lt_assert_cmp(a->bump, <=, a->commit_top);
    lt_assert_cmp(a->commit_top, <=, a->base + a->size);
    /* runs (free or handed out) tile the arena from base to bump */
    for (char *p = a->base; p < a->bump;) {
      const span_t *s = pagemap_lookup(p);
      lt_assert_v(s && s->start == p && s->bytes >= PAGE_SIZE, (uintptr_t)p);
      p += s->bytes;
    }
  }
  pthread_mutex_unlock(&pages_lock);
}
#endif
