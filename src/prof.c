/* SPDX-License-Identifier: MIT */
/* prof.c — sampled heap profiles (LITHE_PROF) and leak reports
 * (LITHE_LEAKS), written so that google-pprof reads them.
 *
 * Sampling.  Every allocation subtracts its size from its thread heap's
 * prof_left (the hook prof_tick in internal.h: one subtract and one
 * compare); when that goes below zero, prof_tick_slow draws the next
 * interval from an exponential distribution of mean LITHE_PROF_SAMPLE
 * bytes and the allocation is sampled.  Sampling by bytes with exponential
 * intervals samples an allocation of n bytes with probability
 * 1 - exp(-n / rate), whatever the sizes around it: the "heap_v2" scheme
 * of gperftools, whose google-pprof undoes it line by line.  With
 * profiling off prof_left is INTPTR_MAX: the compare never succeeds.
 *
 * A sampled object gets a page run of its own (SPAN_LARGE), so its free
 * takes the slow path (free_slow -> prof_free) with no check added to the
 * fast one, and its span descriptor carries its stack bucket.  Cost: at
 * most one 8 KiB page per sample, 1.6 % of the 512 KiB interval.
 *
 * Stacks are taken from the .eh_frame tables (Debian builds programs and
 * libraries without frame pointers, so a frame-pointer walk stops after
 * one or two frames in python3 or git): by the cached unwinder (unwind.c)
 * (each return address's CFA rule learnt once), libgcc's
 * _Unwind_Backtrace for what it cannot walk where libgcc_s is loaded.
 * Neither allocates nor locks: both find tables with glibc's lock-free
 * _dl_find_object (2.35+).
 * A thread-local flag stops recursion: allocations made while a sample is
 * being recorded are never sampled.
 *
 * Stack buckets (one per distinct stack: counts and bytes allocated and
 * freed) live in a pool mapped once at start-up, found through an
 * open-addressing table of pointers filled with compare-and-swap: no
 * lock, so fork or a signal can leave nothing held.
 *
 * Leak mode tracks every allocation instead: each is allocated normally
 * and its address is recorded, with its bucket and size, in a second
 * open-addressing table (an address allocated again overwrites its entry).
 * Frees are not seen (the fast path stays as it is); at exit an entry is
 * a leak if its block is still allocated, which the span proves (a free
 * small block carries the free key, confirmed on the span's free lists). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>
#include "internal.h"
#include "fastpath.h"
#include "unwind.h"

#define PROF_DEPTH 64            /* frames kept per stack                   */
#define PROF_SKIP_MAX 16         /* lithe frames above the caller, at most  */
/* Bucket pool: a bucket is 48 bytes + 8 per frame (~300 with 32 frames);
 * 16 MiB holds ~50,000 distinct stacks, and is touched only as used. */
#define PROF_POOL_BYTES ((size_t)16 * MiB)
#define PROF_TABLE_BITS 16       /* 65536 bucket slots (512 KiB)            */
/* A stack's probes start in the table's first 4096 slots (32 KiB): the
 * few stacks of most programs touch at most 8 of its pages, where hashing
 * over the whole table gave each new stack a page of its own until all
 * 128 were touched; after 8 probes there the rest of the table is
 * probed as usual. */
#define PROF_NEAR_SLOTS 4096
#define PROF_NEAR_PROBES 8
/* Leak table: 2^21 entries of 16 bytes (32 MiB reserved, touched as used):
 * room for ~1.5 million live addresses at 75 % load. */
#define LEAK_TABLE_BITS 21
#define LEAK_PROBES 64
#define LEAK_TOP 10              /* sites printed at exit                   */

typedef struct prof_bucket_s {
  _Atomic uint64_t allocs, alloc_bytes, frees, free_bytes;
  uint64_t hash;
  uint64_t leak_count, leak_bytes; /* filled at exit by the leak report    */
  uint32_t depth;
  uint32_t size;                   /* bytes of this bucket in the pool     */
  void *pc[];
} prof_bucket_t;

typedef struct {
  _Atomic uintptr_t addr;
  _Atomic uint64_t val; /* bucket offset / 8 (bits 0..23) | size << 24 */
} leak_entry_t;

static const char *prof_prefix = "lithe";
static bool prof_peak;
static bool prof_ready;            /* the unwinder warmed up              */
static bool gcc_ready;             /* libgcc_s loaded before main: backtrace() and
                                      _Unwind_Backtrace are safe in malloc */
/* libgcc's unwinder, called directly (one frame less than backtrace());
 * looked up in the libgcc_s that backtrace() loaded, so liblithe links
 * nothing but libc */
static _Unwind_Reason_Code (*unwind_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*unwind_get_ip)(struct _Unwind_Context *);
static uintptr_t text_lo, text_hi; /* lithe's own code (frames skipped)   */
static char *pool;
static _Atomic size_t pool_used;
static prof_bucket_t *_Atomic *table;
static leak_entry_t *leaks;
static _Atomic size_t leaks_dropped, dump_seq;
static _Atomic size_t live_estimate, peak_next;
/* Dumps while the program runs (PREFIX.<pid>.<n>.heap, numbered as
 * lithe_prof_dump's): every LITHE_PROF_INTERVAL bytes allocated (the
 * samples' estimate), every LITHE_PROF_TIME ms, and at LITHE_PROF_SIGNAL.
 * All are checked on the sampled path only (prof_triggers); the handler
 * only sets dump_asked.  With LITHE_PROF_SIGNAL, SIGTERM and SIGINT left
 * at their default also write the exit profile, from the handler. */
static size_t prof_interval;       /* bytes between dumps; 0: none         */
static long prof_time_ms;          /* ms between dumps; 0: none            */
static int prof_signal;            /* index in signal_words; 0: none       */
static bool prof_also;             /* LITHE_PROF=1 with LITHE_LEAKS=1      */
static _Atomic size_t alloc_estimate, interval_next;
static _Atomic uint64_t time_next;
static _Atomic int dump_asked;

/* ---- stacks and buckets ------------------------------------------------ */

typedef struct {
  void **pc;
  int n, max;
} unwind_state_t;

static _Unwind_Reason_Code unwind_one(struct _Unwind_Context *ctx, void *arg) {
  unwind_state_t *st = arg;
  if (st->n == st->max) return _URC_END_OF_STACK;
  uintptr_t ip = unwind_get_ip(ctx);
  if (!ip) return _URC_END_OF_STACK;
  st->pc[st->n++] = (void *)ip;
  return _URC_NO_REASON;
}


static int libgcc_backtrace(void **raw, int max) {
  if (!unwind_backtrace) return backtrace(raw, max);
  unwind_state_t st = {raw, 0, max};
  unwind_backtrace(unwind_one, &st);
  return st.n;
}


/* The caller's stack, lithe's frames removed, into out[PROF_DEPTH]. */
static inline __attribute__((always_inline)) unsigned capture(void **out) {
  void *raw[PROF_DEPTH + PROF_SKIP_MAX + 1];
  if (!prof_ready) return 0;
  int n = -1, i = 1; /* raw[0]: the lithe function capture is inlined in */
  const int max = (int)(sizeof raw / sizeof raw[0]);
#if PROF_FAST_UNWIND
  if (unwind_mode != UNWIND_LIBGCC && unwind_find_object) {
    bool stuck;
    n = fast_backtrace(raw, max, &stuck);
    i = 2; /* and fast_backtrace before it */
    if (stuck) {
      /* libgcc where it was loaded before main; else the stack stops
       * at that frame */
      atomic_fetch_add_explicit(gcc_ready ? &unwind_fallbacks : &unwind_stuck, 1, memory_order_relaxed);
      if (gcc_ready) n = -1;
    } else {
      atomic_fetch_add_explicit(&unwind_walked, 1, memory_order_relaxed);
    }
    if (!stuck && unwind_mode == UNWIND_CHECK && unwind_backtrace) {
      void *gcc[PROF_DEPTH + PROF_SKIP_MAX];
      int ng = libgcc_backtrace(gcc, max - 1);
      /* the same frames from the caller of the function capture is in:
       * libgcc's list starts there after 1 frame (or 2 where
       * libgcc_backtrace is not inlined, -O0); both may be cut at max */
      int k = 1;
      while (k < 3 && k < ng && gcc[k] != raw[2]) k++;
      int common = ng - k < n - 2 ? ng - k : n - 2;
      bool cut = n == max || ng == max - 1;
      if (common < 0 || (!cut && ng - k != n - 2) || memcmp(gcc + k, raw + 2, (size_t)common * sizeof(void *)) != 0)
        unwind_mismatch(raw + 2, n - 2, gcc + 1, ng - 1);
      atomic_fetch_add_explicit(&unwind_checked, 1, memory_order_relaxed);
    }
  }
#endif
  if (n < 0) {
    if (!gcc_ready) return 0; /* backtrace() would dlopen libgcc_s here */
    n = libgcc_backtrace(raw, max - 1);
    i = 1;
  }
  while (i < n && i < PROF_SKIP_MAX && (uintptr_t)raw[i] >= text_lo && (uintptr_t)raw[i] < text_hi) i++;
  unsigned d = 0;
  for (; i < n && d < PROF_DEPTH; i++) out[d++] = raw[i];
  return d;
}

static uint64_t stack_hash(void *const *pc, unsigned d) {
  uint64_t h = 0xcbf29ce484222325u ^ d;
  for (unsigned i = 0; i < d; i++) {
    h ^= (uintptr_t)pc[i];
    h *= 0x100000001b3u;
    h ^= h >> 29;
  }
  return h;
}

/* The bucket of this stack, made if new; NULL when the pool is full. */
static prof_bucket_t *bucket_of(void *const *pc, unsigned d) {
  uint64_t hash = stack_hash(pc, d);
  const size_t far = ((size_t)1 << PROF_TABLE_BITS) - PROF_NEAR_SLOTS;
  prof_bucket_t *mine = NULL;
  for (size_t probes = 0; probes < PROF_NEAR_PROBES + far; probes++) {
    /* one probe sequence: PROF_NEAR_PROBES slots in the near part, then
     * the far part; slots are never emptied, so a stack is always found
     * at or before the first empty slot of its sequence */
    size_t i = probes < PROF_NEAR_PROBES ? (hash + probes) % PROF_NEAR_SLOTS
                                         : PROF_NEAR_SLOTS + ((hash >> 12) + probes - PROF_NEAR_PROBES) % far;
    prof_bucket_t *b = atomic_load_explicit(&table[i], memory_order_acquire);
    if (!b) {
      if (!mine) {
        size_t bytes = align_up(sizeof *mine + d * sizeof(void *), 8);
        size_t off = atomic_fetch_add_explicit(&pool_used, bytes, memory_order_relaxed);
        if (off + bytes > PROF_POOL_BYTES) return NULL;
        mine = (prof_bucket_t *)(pool + off);
        mine->hash = hash;
        mine->depth = d;
        mine->size = (uint32_t)bytes;
        memcpy(mine->pc, pc, d * sizeof(void *));
      }
      if (atomic_compare_exchange_strong_explicit(&table[i], &b, mine, memory_order_acq_rel,
                                                  memory_order_acquire))
        return mine;
      /* another thread filled the slot first: it may be our stack */
    }
    if (b->hash == hash && b->depth == d && memcmp(b->pc, pc, d * sizeof(void *)) == 0) {
      if (mine) mine->depth = UINT32_MAX; /* unused in the pool: never listed */
      return b;
    }
  }
  return NULL;
}

static inline __attribute__((always_inline)) prof_bucket_t *bucket_here(void) {
  void *pc[PROF_DEPTH];
  unsigned d = capture(pc);
  return bucket_of(pc, d);
}

/* ---- sampled allocations ----------------------------------------------- */

static void leak_record(void *p, size_t n, prof_bucket_t *b);
static void maybe_peak_dump(size_t live);
static void prof_triggers(size_t weight);

/* Live bytes a sample of n bytes stands for, for the peak trigger only:
 * n / (1 - exp(-n / rate)) lies between rate + n/2 (n << rate) and n. */
static size_t sample_weight(size_t n) { return n >= prof_rate ? n : prof_rate + n / 2; }

/* s now holds a sampled object of n bytes, allocated at stack b */
static void sample_record(span_t *s, size_t n, prof_bucket_t *b) {
  if (!b || !s) return;
  atomic_fetch_add_explicit(&b->allocs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&b->alloc_bytes, n, memory_order_relaxed);
  s->prof_size = n;
  s->prof = b;
  size_t live = atomic_fetch_add_explicit(&live_estimate, sample_weight(n), memory_order_relaxed);
  if (prof_peak) maybe_peak_dump(live + sample_weight(n));
  if (prof_interval | prof_time_ms | prof_signal) prof_triggers(n);
}

static inline __attribute__((always_inline)) void *sample_alloc(size_t n, size_t align, bool zero) {
  prof_busy = 1;
  void *p;
  if (prof_mode == PROF_LEAKS) {
    /* every block, from the layers below: a size class, or a page run
     * where it is big or aligned beyond 16 bytes (page runs are
     * page-aligned; alignments above a page are asked for) */
    if (align <= 16 && n <= SMALL_MAX) {
      p = heap_malloc_class(lithe_tls_heap, size_class(n ? n : 1));
      if (p && zero) memset(p, 0, n);
    } else {
      p = large_alloc_zero(n ? n : 1, align > PAGE_SIZE ? align : 0, zero);
    }
    if (p) leak_record(p, n, bucket_here());
    prof_busy = 0;
    return p;
  }
  p = large_alloc_zero(n ? n : 1, align > PAGE_SIZE ? align : 0, zero);
  if (p) sample_record(pagemap_lookup(p), n, bucket_here());
  prof_busy = 0;
  return p;
}

void *prof_alloc(size_t n, size_t align, bool zero) { return sample_alloc(n, align, zero); }

void *prof_malloc(size_t n, heap_t *h) {
  if (prof_tick_slow(h)) return sample_alloc(n, 0, false);
  return n <= SMALL_MAX ? heap_malloc_class(h, size_class(n)) : large_alloc(n, 0);
}

/* realloc of the large or xlarge object of s (of `old` usable bytes) to n
 * bytes (bytes with the valgrind build's gap) while sampling, in place
 * where large_realloc can.  A sampled one: as a
 * free of the sample and a malloc of n, so the interval is charged n and
 * decides whether the block stays sampled (then as a new sample of this
 * stack) or becomes a plain block.  Copying every sampled block that a
 * realloc grew copied a growing buffer at almost every step (a block of
 * 1 MiB is sampled 86 % of the time at 512 KiB;
 * docs/lab/2026-12-05-realloc-at-arena-top.md).  NULL: not in place
 * (the caller copies, and the new block is sampled or not as any). */
void *prof_realloc(span_t *s, size_t bytes, size_t n, size_t old) {
  void *q = large_realloc(s, bytes);
  if (!q) return NULL;
  size_t charge = n;
  if (s->prof) {
    prof_free(s);
  } else {
    /* an unsampled block grown in place: the bytes it grew by are
     * allocated, and charged like any (never charging them, a buffer
     * that missed its first sample stayed out of the profile however
     * big it grew: prof_realloc's test saw 0 of 1 MiB in ~7 % of runs) */
    if (n <= old) return q;
    charge = n - old;
  }
  heap_t *h = lithe_tls_heap;
  if (h != &lithe_empty_heap && !prof_busy && prof_tick(h, charge)) {
    prof_busy = 1;
    sample_record(s, n, bucket_here());
    prof_busy = 0;
  }
  return q;
}

void prof_free(span_t *s) {
  prof_bucket_t *b = s->prof;
  size_t n = s->prof_size;
  s->prof = NULL;
  atomic_fetch_add_explicit(&b->frees, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&b->free_bytes, n, memory_order_relaxed);
  atomic_fetch_sub_explicit(&live_estimate, sample_weight(n), memory_order_relaxed);
}

/* ---- leak table -------------------------------------------------------- */

static void leak_record(void *p, size_t n, prof_bucket_t *b) {
  if (!b) { atomic_fetch_add_explicit(&leaks_dropped, 1, memory_order_relaxed); return; }
  /* every block: the exit profile's allocated figures (LITHE_PROF=1 too) */
  atomic_fetch_add_explicit(&b->allocs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&b->alloc_bytes, n, memory_order_relaxed);
  uintptr_t a = (uintptr_t)p;
  uint64_t val = (uint64_t)(((char *)b - pool) >> 3) | ((uint64_t)n << 24);
  size_t mask = ((size_t)1 << LEAK_TABLE_BITS) - 1;
  size_t i = (size_t)((a >> 4) * 0x9e3779b97f4a7c15u >> (64 - LEAK_TABLE_BITS));
  for (unsigned probes = 0; probes < LEAK_PROBES; probes++, i = (i + 1) & mask) {
    uintptr_t cur = atomic_load_explicit(&leaks[i].addr, memory_order_relaxed);
    if (cur == 0 && atomic_compare_exchange_strong_explicit(&leaks[i].addr, &cur, a, memory_order_relaxed,
                                                            memory_order_relaxed))
      cur = a;
    if (cur == a) {
      atomic_store_explicit(&leaks[i].val, val, memory_order_relaxed);
      return;
    }
  }
  atomic_fetch_add_explicit(&leaks_dropped, 1, memory_order_relaxed);
}

/* Is the block at a still allocated?  Only lithe's own state is read. */
static bool block_live(uintptr_t a) {
  span_t *s = pagemap_lookup((void *)a);
  if (!s) return false;
  if (s->kind == SPAN_LARGE || s->kind == SPAN_XLARGE) return s->start == (char *)a;
  if (s->kind != SPAN_SMALL) return false;
  size_t off = (size_t)((char *)a - s->start);
  if (off >= s->bytes || (char *)a >= s->bump || !small_block_start(s, off)) return false;
  block_t *b = (block_t *)a;
  /* freed: on its span's lists, or in a heap's bin (where a free puts it;
   * a purge pass that moved the epoch used to flush the bins before the
   * report, and a freed large block cached by its thread moves none) */
  return block_key(b) != span_free_key(s) || !(span_contains_free(s, b) || heaps_bin_has(s, b));
}

/* ---- output (out_t, options.c) ---------------------------------------- */

static void copy_maps(out_t *o) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    if (o->n == sizeof o->buf) out_flush(o);
    ssize_t r = read(fd, o->buf + o->n, sizeof o->buf - o->n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    o->n += (size_t)r;
  }
  close(fd);
}

/* Every bucket in the pool, in the order made. */
#define FOR_EACH_BUCKET(b)                                                              \
  for (size_t off_ = 0, end_ = atomic_load(&pool_used) < PROF_POOL_BYTES ?              \
                                   atomic_load(&pool_used) : PROF_POOL_BYTES;           \
       off_ < end_ && (b = (prof_bucket_t *)(pool + off_))->size; off_ += b->size)      \
    if (b->depth != UINT32_MAX)

/* What a profile's lines hold: the samples (sampled mode), or, from the
 * leak table's records of every block (after leak_report counted them),
 * what is live with what was allocated, or what leaked alone. */
enum { PROFILE_SAMPLED, PROFILE_LIVE, PROFILE_LEAKED };

static void bucket_figures(const prof_bucket_t *b, int what, uint64_t v[4]) {
  uint64_t a = atomic_load(&b->allocs), ab = atomic_load(&b->alloc_bytes);
  uint64_t f = atomic_load(&b->frees), fb = atomic_load(&b->free_bytes);
  if (what == PROFILE_SAMPLED) { v[0] = a > f ? a - f : 0; v[1] = ab > fb ? ab - fb : 0; v[2] = a; v[3] = ab; }
  else if (what == PROFILE_LIVE) { v[0] = b->leak_count; v[1] = b->leak_bytes; v[2] = a; v[3] = ab; }
  else { v[0] = v[2] = b->leak_count; v[1] = v[3] = b->leak_bytes; }
}

/* The gperftools heap-profile text format: "heap_v2" for samples (with
 * the rate google-pprof scales them by), "heapprofile" (not scaled) for
 * the leak table's figures, which count every block. */
static int write_profile(int fd, int what) {
  out_t o = {.fd = fd};
  uint64_t t[4] = {0, 0, 0, 0}, v[4];
  prof_bucket_t *b;
  FOR_EACH_BUCKET(b) {
    bucket_figures(b, what, v);
    for (int k = 0; k < 4; k++) t[k] += v[k];
  }
  out_str(&o, "heap profile: ");
  out_dec(&o, t[0], 6); out_str(&o, ": "); out_dec(&o, t[1], 8); out_str(&o, " [");
  out_dec(&o, t[2], 6); out_str(&o, ": "); out_dec(&o, t[3], 8);
  if (what == PROFILE_SAMPLED) {
    out_str(&o, "] @ heap_v2/");
    out_dec(&o, prof_rate, 0);
  } else {
    out_str(&o, "] @ heapprofile");
  }
  out_str(&o, "\n");
  FOR_EACH_BUCKET(b) {
    bucket_figures(b, what, v);
    if (v[2] == 0) continue;
    out_dec(&o, v[0], 6); out_str(&o, ": "); out_dec(&o, v[1], 8);
    out_str(&o, " ["); out_dec(&o, v[2], 6); out_str(&o, ": "); out_dec(&o, v[3], 8); out_str(&o, "] @");
    for (uint32_t i = 0; i < b->depth; i++) { out_str(&o, " "); out_hex(&o, (uintptr_t)b->pc[i]); }
    out_str(&o, "\n");
  }
  out_str(&o, "\nMAPPED_LIBRARIES:\n");
  copy_maps(&o);
  out_flush(&o);
  return o.failed ? -1 : 0;
}

/* PREFIX.<pid>[.tag<seq>].heap into buf (seq SIZE_MAX: the tag alone) */
static void profile_name(char *buf, size_t cap, const char *tag, size_t seq) {
  size_t len = 0;
  char num[24];
  const char *parts[6] = {prof_prefix, ".", num, NULL, NULL, NULL};
  fmt_dec(num, (uint64_t)getpid());
  char seqs[32];
  if (tag) {
    size_t k = strlen(tag);
    memcpy(seqs, tag, k);
    if (seq != SIZE_MAX) fmt_dec(seqs + k, seq);
    else seqs[k] = '\0';
    parts[3] = ".";
    parts[4] = seqs;
  }
  for (int i = 0; i < 5; i++)
    for (const char *s = parts[i]; s && *s && len + 6 < cap; s++) buf[len++] = *s;
  memcpy(buf + len, ".heap", 6);
}

static int dump_to(const char *path, int what) {
  int saved = errno;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  int r = write_profile(fd, what);
  if (close(fd) != 0) r = -1;
  if (r == 0) errno = saved;
  return r;
}

int prof_dump(const char *path) {
  if (prof_mode != PROF_SAMPLE) { errno = EINVAL; return -1; }
  char name[4096];
  if (!path) {
    profile_name(name, sizeof name, "", atomic_fetch_add(&dump_seq, 1));
    path = name;
  }
  int busy = prof_busy;
  prof_busy = 1;
  int r = dump_to(path, PROFILE_SAMPLED);
  prof_busy = busy;
  return r;
}

/* A new peak of live (estimated) bytes: one dump per doubling. */
static void maybe_peak_dump(size_t live) {
  size_t next = atomic_load_explicit(&peak_next, memory_order_relaxed);
  if (live < next) return;
  if (!atomic_compare_exchange_strong(&peak_next, &next, 2 * live)) return; /* another thread dumps */
  char name[4096];
  static _Atomic size_t peaks;
  profile_name(name, sizeof name, "peak", atomic_fetch_add(&peaks, 1));
  dump_to(name, PROFILE_SAMPLED);
}

/* The dumps a sample of n bytes may be due to make (LITHE_PROF_INTERVAL,
 * LITHE_PROF_TIME, LITHE_PROF_SIGNAL).  One dump however many are due; a race between threads is
 * settled by compare-and-swap (one of them dumps).  No lock, no
 * allocation: the profile is written with open/write(2). */
static void prof_triggers(size_t n) {
  bool due = false;
  if (prof_interval) {
    /* the bytes allocated this sample stands for: n / (1 - exp(-n / rate)),
     * as google-pprof scales it (sample_weight's approximation is 37 % low
     * for n = rate); exp(-x) as (exp(-x / 1024))^1024, no libm */
    double x = (double)n / (double)prof_rate, y = x / 1024, e = 1 - y + y * y / 2 - y * y * y / 6;
    for (int i = 0; i < 10; i++) e *= e;
    size_t weight = x > 40 || e >= 1 ? n : (size_t)((double)n / (1 - e));
    size_t total = atomic_fetch_add_explicit(&alloc_estimate, weight, memory_order_relaxed) + weight;
    size_t next = atomic_load_explicit(&interval_next, memory_order_relaxed);
    if (total >= next &&
        atomic_compare_exchange_strong(&interval_next, &next, (total / prof_interval + 1) * prof_interval))
      due = true;
  }
  if (prof_time_ms) {
    uint64_t now = os_now_ms(), next = atomic_load_explicit(&time_next, memory_order_relaxed);
    if (now >= next && atomic_compare_exchange_strong(&time_next, &next, now + (uint64_t)prof_time_ms)) due = true;
  }
  if (atomic_load_explicit(&dump_asked, memory_order_relaxed) && atomic_exchange(&dump_asked, 0)) due = true;
  if (!due) return;
  char name[4096];
  profile_name(name, sizeof name, "", atomic_fetch_add(&dump_seq, 1));
  dump_to(name, PROFILE_SAMPLED);
}

/* LITHE_PROF_SIGNAL's handler: the next sample writes the dump */
static void on_dump_signal(int sig) {
  (void)sig;
  atomic_store(&dump_asked, 1);
}

/* SIGTERM or SIGINT, where the program left it at its default (it ends
 * the process, and no destructor runs): the exit profile, written here
 * (open/read/write, no lock, no allocation), then the signal again with
 * its default action (SA_RESETHAND), so the process ends as it would
 * have. */
static void on_stop_signal(int sig) {
  int saved = errno;
  prof_busy = 1;
  char name[4096];
  profile_name(name, sizeof name, NULL, 0);
  dump_to(name, PROFILE_SAMPLED);
  raise(sig); /* blocked until this returns, then the default action */
  errno = saved;
}

static const char *const signal_words[] = {"0", "usr1", "usr2", "hup"}; /* LITHE_PROF_SIGNAL */
static const int signal_numbers[] = {0, SIGUSR1, SIGUSR2, SIGHUP};

/* handler for sig, only where the program has none (SIG_DFL) */
static void catch_signal(int sig, void (*handler)(int), int flags) {
  struct sigaction old, sa;
  if (sigaction(sig, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART | flags;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* ---- leak report ------------------------------------------------------- */

static void put_frame(out_t *o, void *pc) {
  Dl_info info;
  out_str(o, "    ");
  out_hex(o, (uintptr_t)pc);
  if (dladdr((char *)pc - 1, &info)) {
    if (info.dli_sname) {
      out_str(o, " ");
      out_str(o, info.dli_sname);
      out_str(o, "+");
      out_hex(o, (uintptr_t)pc - (uintptr_t)info.dli_saddr);
    }
    if (info.dli_fname && *info.dli_fname) {
      out_str(o, " (");
      out_str(o, info.dli_fname);
      out_str(o, ")");
    }
  }
  out_str(o, "\n");
}

static void leak_report(void) {
  prof_bucket_t *b, *top[LEAK_TOP];
  unsigned ntop = 0;
  uint64_t total = 0, count = 0, sites = 0;
  FOR_EACH_BUCKET(b) b->leak_count = b->leak_bytes = 0;
  for (size_t i = 0; i < ((size_t)1 << LEAK_TABLE_BITS); i++) {
    uintptr_t a = atomic_load_explicit(&leaks[i].addr, memory_order_relaxed);
    if (!a || !block_live(a)) continue;
    uint64_t val = atomic_load_explicit(&leaks[i].val, memory_order_relaxed);
    b = (prof_bucket_t *)(pool + ((val & ((1u << 24) - 1)) << 3));
    b->leak_count++;
    b->leak_bytes += val >> 24;
  }
  FOR_EACH_BUCKET(b) {
    if (!b->leak_count) continue;
    sites++;
    total += b->leak_bytes;
    count += b->leak_count;
    unsigned j = ntop < LEAK_TOP ? ntop++ : LEAK_TOP;
    if (j == LEAK_TOP && b->leak_bytes <= top[LEAK_TOP - 1]->leak_bytes) continue;
    if (j == LEAK_TOP) j = LEAK_TOP - 1;
    while (j > 0 && top[j - 1]->leak_bytes < b->leak_bytes) { top[j] = top[j - 1]; j--; }
    top[j] = b;
  }
  out_t o = {.fd = STDERR_FILENO};
  out_str(&o, "lithe: leaks: "); out_dec(&o, total, 0); out_str(&o, " bytes in ");
  out_dec(&o, count, 0); out_str(&o, " allocations from "); out_dec(&o, sites, 0);
  out_str(&o, " sites still live at exit (pid "); out_dec(&o, (uint64_t)getpid(), 0); out_str(&o, ")");
  size_t dropped = atomic_load(&leaks_dropped);
  if (dropped) { out_str(&o, "; "); out_dec(&o, dropped, 0); out_str(&o, " allocations not tracked (table full)"); }
  out_str(&o, "\n");
  for (unsigned i = 0; i < ntop; i++) {
    out_str(&o, "lithe: leak site "); out_dec(&o, i + 1, 0); out_str(&o, ": ");
    out_dec(&o, top[i]->leak_bytes, 0); out_str(&o, " bytes in "); out_dec(&o, top[i]->leak_count, 0);
    out_str(&o, " allocations\n");
    for (uint32_t k = 0; k < top[i]->depth && k < 16; k++) put_frame(&o, top[i]->pc[k]);
  }
  out_flush(&o);
}

/* ---- start-up and exit ------------------------------------------------- */

/* secure_getenv, as options.c: a setuid program must not be made to
 * write profiles where its caller says */
void prof_init(void) {
  prof_sampled_malloc = prof_malloc; /* (thread.c: a thread's first block) */
  bool on = false, leak = false;
  option_bool("LITHE_PROF", &on);
  option_bool("LITHE_LEAKS", &leak);
  /* both: every block is recorded for the leak report, and the exit
   * profile is written from the same records (what is live, unsampled) */
  prof_also = on && leak;
  size_t rate = prof_rate;
  if (option_size("LITHE_PROF_SAMPLE", &rate, 1, (size_t)1 << 40, NULL)) prof_rate = rate;
  const char *v = option_get("LITHE_PROF_PREFIX");
  if (v && !*v) option_refuse("LITHE_PROF_PREFIX", v, "empty", prof_prefix);
  else if (v) prof_prefix = v;
  option_bool("LITHE_PROF_PEAK", &prof_peak);
  static const char *const unwind_words[] = {"fast", "check", "libgcc"}; /* (UNWIND_*) */
  option_enum("LITHE_PROF_UNWIND", &unwind_mode, unwind_words, 3);
  option_size("LITHE_PROF_INTERVAL", &prof_interval, 0, (size_t)1 << 50, NULL);
  option_ms("LITHE_PROF_TIME", &prof_time_ms, 0, 24L * 3600 * 1000);
  option_enum("LITHE_PROF_SIGNAL", &prof_signal, signal_words, 4);
  prof_mode = leak ? PROF_LEAKS : on ? PROF_SAMPLE : PROF_OFF;
  if (prof_mode == PROF_OFF) return;
  atomic_store(&peak_next, 16 * prof_rate);
  if (prof_interval) atomic_store(&interval_next, prof_interval);
  if (prof_time_ms) atomic_store(&time_next, os_now_ms() + (uint64_t)prof_time_ms);
  os_random(&rng_seed, sizeof rng_seed);
  rng_seed ^= (uintptr_t)&rng_seed; /* differs by run (ASLR) if getrandom failed */
  size_t mapped;
  void *base;
  pool = os_map(PROF_POOL_BYTES, 0, &mapped, &base);
  table = os_map(sizeof(void *) << PROF_TABLE_BITS, 0, &mapped, &base);
  if (prof_mode == PROF_LEAKS) leaks = os_map(sizeof(leak_entry_t) << LEAK_TABLE_BITS, 0, &mapped, &base);
  if (!pool || !table || (prof_mode == PROF_LEAKS && !leaks)) {
    lithe_warn("heap profiling off: could not map its tables, bytes", PROF_POOL_BYTES);
    prof_mode = PROF_OFF;
  }
}

static int find_text(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t me = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < lo + ph->p_memsz) {
      /* linked into the program itself (liblithe.a): its code is the
       * program's, so skip nothing by address (pprof drops malloc & co.) */
      if (info->dlpi_name && *info->dlpi_name) { text_lo = lo; text_hi = lo + ph->p_memsz; }
      return 1;
    }
  }
  return 0;
}

/* Before main: the first backtrace() loads libgcc_s (dlopen allocates and
 * locks), so it must not be the first call made inside malloc. */
/* Before main.  libgcc_s: backtrace() loads it the first time (dlopen
 * allocates and locks), so that must not happen inside malloc.  The
 * cached unwinder needs only glibc; libgcc's is its fallback where
 * libgcc_s is loaded anyway (C++ programs), and loaded here for
 * LITHE_PROF_UNWIND=check|libgcc or where the cached one cannot run: its
 * dlopen costs ~28 kB of resident memory (libgcc_s's data and what
 * dlopen allocates), a fifth of a small program's. */
void prof_warm_up(void) {
  if (prof_mode == PROF_OFF) return;
  prof_busy = 1;
  bool load_gcc = true;
#if PROF_FAST_UNWIND
  load_gcc = !unwind_init() || unwind_mode != UNWIND_FAST;
#endif
  if (load_gcc) {
    void *raw[4];
    backtrace(raw, 4);
  }
  void *gcc = dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (gcc) {
    unwind_get_ip = (_Unwind_Ptr(*)(struct _Unwind_Context *))dlsym(gcc, "_Unwind_GetIP");
    if (unwind_get_ip)
      unwind_backtrace = (_Unwind_Reason_Code(*)(_Unwind_Trace_Fn, void *))dlsym(gcc, "_Unwind_Backtrace");
  }
  gcc_ready = load_gcc || gcc;
  dl_iterate_phdr(find_text, (void *)(uintptr_t)&prof_warm_up);
  prof_ready = true;
  if (prof_signal && prof_mode == PROF_SAMPLE) { /* the program's own handlers, if any, win */
    catch_signal(signal_numbers[prof_signal], on_dump_signal, 0);
    catch_signal(SIGTERM, on_stop_signal, SA_RESETHAND);
    catch_signal(SIGINT, on_stop_signal, SA_RESETHAND);
  }
  prof_busy = 0;
}

__attribute__((destructor)) static void prof_at_exit(void) {
  if (prof_mode == PROF_OFF) return;
  prof_busy = 1;
#if PROF_FAST_UNWIND
  const char *uw = secure_getenv("LITHE_PROF_UNWIND");
  if (uw && unwind_mode != UNWIND_LIBGCC) { /* asked for: what the unwinders did */
    out_t o = {.fd = STDERR_FILENO};
    out_str(&o, "lithe: LITHE_PROF_UNWIND=");
    out_str(&o, uw);
    out_str(&o, ": ");
    out_dec(&o, atomic_load(&unwind_walked), 0);
    out_str(&o, " stacks by the cached unwinder (");
    out_dec(&o, atomic_load(&unwind_checked), 0);
    out_str(&o, " checked the same as libgcc's), ");
    out_dec(&o, atomic_load(&unwind_fallbacks), 0);
    out_str(&o, " by libgcc (a frame without a cached rule), ");
    out_dec(&o, atomic_load(&unwind_stuck), 0);
    out_str(&o, " cut at such a frame (libgcc_s not loaded)\n");
    out_flush(&o);
  }
#endif
  char name[4096];
  if (prof_mode == PROF_LEAKS) {
    leak_report();
    /* the same as a file google-pprof reads (inuse = leaked), which names
     * a program's own functions from its symbol table (dladdr needs
     * -rdynamic); with LITHE_PROF=1, the exit profile from the same
     * records: what is live, and every block allocated */
    profile_name(name, sizeof name, "leaks", SIZE_MAX);
    if (dump_to(name, PROFILE_LEAKED) != 0) {
      lithe_warn("could not write the leak profile at exit; errno", (size_t)errno);
    } else {
      out_t o = {.fd = STDERR_FILENO};
      out_str(&o, "lithe: leaks as a heap profile: "); out_str(&o, name);
      out_str(&o, " (google-pprof --text PROGRAM FILE names the program's own frames)\n");
      out_flush(&o);
    }
    if (prof_also) {
      profile_name(name, sizeof name, NULL, 0);
      if (dump_to(name, PROFILE_LIVE) != 0) lithe_warn("could not write the heap profile at exit; errno", (size_t)errno);
    }
  } else {
    profile_name(name, sizeof name, NULL, 0);
    if (dump_to(name, PROFILE_SAMPLED) != 0) lithe_warn("could not write the heap profile at exit; errno", (size_t)errno);
  }
}
