/* SPDX-License-Identifier: MIT */
/* types.h — what every layer of lithe shares: the tunable constants,
 * each with the reason for its value, and the types (blocks, spans,
 * heaps, arenas, options).  The prototypes and inline helpers are in
 * internal.h, which includes this; the design overview is atop alloc.c. */
#ifndef LITHE_TYPES_H
#define LITHE_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lithe.h"
#include "names.h"   /* internal symbols link as _lithe_<name> */
#include "debug.h"   /* lt_assert*: checked invariants of a Debug build */

#define LITHE_API   __attribute__((visibility("default")))
#define INTERNAL    __attribute__((visibility("hidden")))
/* Built with ASan or TSan (tests/sanitize, tests/fuzz): their runtimes
 * define pthread_create themselves (pthread.c, override.c). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define LITHE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define LITHE_SANITIZED 1
#endif
#endif
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define NOINLINE    __attribute__((noinline))
/* A big array in .bss that a program touches little or not at all
 * starts a page of its own: the shared library's link sorts its data by
 * alignment (src/CMakeLists.txt: -fdata-sections, --sort-section), so
 * these come first, whole pages each, and the small variables every
 * program writes pack together after them, in as few pages as they fill.
 * Only the pages written are charged (docs/lab/2026-12-06-lithe-own-pages.md). */
#define BIG_BSS     __attribute__((aligned(4096)))
#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* The locks threads meet on (pages_lock, heaps_lock, abandoned_lock,
 * fallback_lock) are glibc's adaptive kind: a waiter spins briefly before
 * it sleeps in the kernel, as tcmalloc's spin locks do, where the default
 * kind always slept and paid a futex wait and a wake-up for a critical
 * section of a few hundred instructions (figures where each is defined).
 * Defined only where _GNU_SOURCE is, which such a lock's file defines
 * first: a file without it fails to compile rather than get the plain
 * kind unnoticed.  lock_reinit (heap.c) makes a forked child's one anew. */
#ifdef _GNU_SOURCE
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#define LOCK_INIT PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#else
#define LOCK_INIT PTHREAD_MUTEX_INITIALIZER /* (a libc without the kind) */
#endif
#endif

/* ---- tunables ---------------------------------------------------------- */

/* lithe page: the unit of the page heap and of the pagemap.  8 KiB as in Go:
 * a 64 MiB arena is 8192 pages and its pagemap slice (8 bytes a page) is
 * exactly one 64 KiB commit piece. */
#define PAGE_SHIFT 13
#define PAGE_SIZE  ((size_t)1 << PAGE_SHIFT)
/* The smallest OS page lithe runs on (os_page_size() is the real one): a
 * span must not end this far or more after its last block (sizeclass.c,
 * span_fitted). */
#define OS_PAGE_MIN ((size_t)4096)

/* Address bits the pagemap covers (x86-64 and arm64 user space: 47-48). */
#define ADDR_BITS 48
/* L1 index = address bits 47..36 (4096 entries, 32 KiB in .bss);
 * L2 index = bits 35..13 (one 8 KiB page each; 2^23 entries, 64 MiB of
 * PROT_READ reservation per L2, committed in 64 KiB pieces).
 * 2^48 = 8 KiB page * 2^12 L1 * 2^23 L2: the two levels cover the whole
 * user address space, so no arena placement can fall outside the map. */
#define L1_SHIFT 36
#define L1_COUNT ((size_t)1 << (ADDR_BITS - L1_SHIFT))
#define L2_COUNT ((size_t)1 << (L1_SHIFT - PAGE_SHIFT))
#define L2_PIECE ((size_t)64 * KiB) /* commit granule of an L2 array */

/* Arena: reserved PROT_NONE, aligned to its size, committed on demand.
 * 64 MiB like Go on 64-bit Linux; LITHE_ARENA_SIZE takes 4 MiB .. 1 GiB. */
#ifndef ARENA_DEFAULT           /* build with -DARENA_DEFAULT=N to try others */
#define ARENA_DEFAULT ((size_t)64 * MiB)
#endif
#define ARENA_MIN     ((size_t)4 * MiB)
#define ARENA_MAX     ((size_t)1 * GiB)
/* Smallest arena tried when a full one does not fit in the address space
 * (ulimit -v); arenas halve down to it.  1 MiB: under ulimit -v 16384 a
 * small C program has about 8 MiB of address space left for its heap. */
#define ARENA_FALLBACK_MIN ((size_t)1 * MiB)
/* ... and when not even that fits, that one arena halves on down to
 * 64 KiB (the commit step's grain): the last few hundred KiB of address
 * space serve the heap, as glibc's brk heap grows into them (a program
 * that mallocs 100 B blocks until NULL under ulimit -v 16384 got 0.948 of
 * glibc's bytes with 1 MiB the least, 0.966 so;
 * tests/regress/arena/regress_ulimit_v.c). */
#define ARENA_LAST_MIN ((size_t)64 * KiB)
_Static_assert(ARENA_LAST_MIN % PAGE_SIZE == 0 && ARENA_FALLBACK_MIN % ARENA_LAST_MIN == 0,
               "arenas halve to whole pages");

/* Size classes: 16-byte steps up to 128 B, then 4 classes per power of
 * two, with a fifth an eighth above it from 1 to 8 KiB (rounding up to 20 %
 * of a block: sizeclass.c's measured table), up to SMALL_MAX.  Above
 * SMALL_MAX objects are "large" (a run of pages from the page heap) up to
 * large_max (LARGE_MAX_CAP, or a quarter of an arena if smaller), then
 * "xlarge" (their own mapping).  SMALL_MAX 32 KiB: no time difference
 * between 16 and 128 KiB, and larger raised big blocks' peak
 * (docs/lab/2026-11-29-thresholds-and-small-max.md). */
#ifndef SMALL_SHIFT
#define SMALL_SHIFT 15          /* build with -DSMALL_SHIFT=N to try others */
#endif
#define SMALL_MAX   ((size_t)1 << SMALL_SHIFT)
/* Above 128 B, 4 classes per power of two (a quarter of it apart: a
 * request loses at most 20 % of its block, 25 % over its size), and from
 * 2^CLASS_EIGHTH_LO to 2^CLASS_EIGHTH_HI (1 to 8 KiB) a fifth, an eighth
 * above the power: 1152, 2304, 4608 and 9216 B.  Programs ask for a power
 * of two plus a header (sqlite's page cache: 1032 and 4368 B), which the
 * quarters round to 1280 and 5120 B: replay_sqlite's peak was 1.24x
 * glibc's.  Measured in
 * docs/lab/2026-12-05-class-eighth-above-power-of-two.md: 8 classes a power of two would save more, but each class is
 * 12 bytes more of the initial-exec TLS that a library dlopen'ed after
 * lithe needs (regress_tls_dlopen), and a partly used span more in each
 * heap. */
#ifndef CLASS_EIGHTH_LO
#define CLASS_EIGHTH_LO 10      /* build with -DCLASS_EIGHTH_HI=0 for none */
#endif
#ifndef CLASS_EIGHTH_HI
#define CLASS_EIGHTH_HI 13
#endif
/* the classes an eighth above the powers of two below 2^k */
#define CLASS_EIGHTHS_BELOW(k)                                        \
  (CLASS_EIGHTH_HI < CLASS_EIGHTH_LO || (k) <= CLASS_EIGHTH_LO ? 0u  \
   : (k) > CLASS_EIGHTH_HI ? CLASS_EIGHTH_HI + 1u - CLASS_EIGHTH_LO \
                           : (k) - CLASS_EIGHTH_LO)
/* 0 unused; 1..8: 16..128; then 4 a power of two and the eighths */
#define NCLASSES (9 + 4 * (SMALL_SHIFT - 7) + CLASS_EIGHTHS_BELOW(SMALL_SHIFT))
/* Every small size finds its class in one table (class_lut), in two
 * parts: sizes up to FINE_MAX by the size itself (entry n, FINE_MAX + 1
 * entries), then every size up to SMALL_MAX by ceil(n / 16) (2,049
 * entries).  Malloc indexes the first part with n as it came (no add, no
 * shift: malloc 18 -> 16 instructions), the second above FINE_MAX (a
 * compare and a branch more: 20).  One table, so one address serves both.
 * FINE_MAX 4 KiB, measured (docs/lab/2026-11-29-hot-paths-and-bins.md,
 * "the class lookup in two parts"): 1 KiB left the replays' 1-4 KiB requests and the 4 KiB churn
 * paying 2 more; the whole range by size (32 KiB) cost data-cache misses
 * (medium, +6.7 % D1 read misses), 4 KiB +0.5 % of medium's misses. */
#ifndef FINE_SHIFT
#define FINE_SHIFT  12          /* build with -DFINE_SHIFT=N (10..12) to try others */
#endif
#define FINE_MAX    ((size_t)1 << FINE_SHIFT)
#define LUT_MAX     SMALL_MAX
#define LUT_COARSE  (FINE_MAX + 1)                 /* where the second part starts */
#define LUT_ENTRIES (LUT_COARSE + SMALL_MAX / 16 + 1)
/* LARGE_MAX_CAP 1 MiB: freed xlarge mappings combine into bigger blocks
 * (large.c), page runs only with free neighbours; measured in
 * docs/lab/2026-11-29-thresholds-and-small-max.md. */
#ifndef LARGE_MAX_CAP           /* build with -DLARGE_MAX_CAP=N to try others */
#define LARGE_MAX_CAP ((size_t)1 * MiB)
#endif

/* Bytes of a span for small objects: 64 KiB (mimalloc's small page size)
 * holds >= 8 objects up to 8 KiB; larger classes get the power of two that
 * holds 4 of them; a class that would leave an OS page or more unused at
 * the end gets a span its blocks fill exactly instead (5, 6, 10, 12, 14,
 * 20, 24 and 28 KiB: sizeclass.c, span_fitted).  Tail waste (its measured
 * table): <= 2.4 % of a span. */
#define SPAN_SMALL_BYTES ((size_t)64 * KiB)
/* A heap's first span of a class is smaller: 16 KiB (or 4 blocks): a
 * thread or program that uses a class a little commits 16 KiB, not 64
 * (bench-commit; docs/lab/2026-11-29-address-space-and-commit.md). */
#define SPAN_FIRST_BYTES ((size_t)16 * KiB)

/* Lazy free-list building: a span hands out memory a slice at a time so a
 * program touches only what it uses (one OS page worth of blocks; a class
 * above 1 KiB gets 1-3 blocks a slice).  Larger slices for those classes
 * saved time in lithe's functions but cost peak memory and faults
 * (docs/lab/2026-12-01-medium-parallel.md), so they were taken out. */
#define EXTEND_BYTES ((size_t)4 * KiB)
/* A span's first slice is smaller: a new thread's first malloc carves it,
 * and its exit flushes the unused blocks back one by one; 512 bytes make
 * 32 blocks of 16 B, one extra refill per span after them
 * (docs/lab/2026-11-29-threads.md). */
#define EXTEND_FIRST_BYTES ((size_t)512)

/* Empty spans a thread keeps for reuse before returning them to the page
 * heap: absorbs alloc/free waves without taking the page-heap lock. */
#ifndef HEAP_SPAN_CACHE         /* build with -DHEAP_SPAN_CACHE=N to try others */
#define HEAP_SPAN_CACHE 4
#endif

/* A heap's bin of a class holds free blocks (of spans it owns) between the
 * owner's free and its next malloc, so a wave of frees and mallocs of one
 * size never moves spans (bin.c).  Its capacity starts at
 * BIN_FIRST_BYTES worth of blocks (>= BIN_MIN_BLOCKS), grows when
 * malloc finds the bin empty after a free found it full (by the blocks
 * that spilled past it, at least x2: bin.c, bin_grow), up to
 * BIN_MAX_BYTES (<= BIN_MAX_BLOCKS); a free into a full bin goes
 * straight to the block's span.  Bins are emptied before the heap takes
 * fresh pages (when they hold BIN_FLUSH_BYTES), when one grows past
 * BIN_HEAP_BYTES of them all (the others), on lithe_collect, at thread
 * exit and after purge passes.  BIN_MAX_BYTES: 100 frees then 100
 * mallocs of 32 KiB fit (3.2 MiB), the batch that bench-cgloop b counts.
 * BIN_MAX_BLOCKS only bounds the double-free scan of a bin (no free walks
 * one): 131072 holds a round of fragment's 32-byte frees whole, where
 * fewer sent many frees past the bin (regress_bin_wave32;
 * docs/lab/2026-11-29-hot-paths-and-bins.md). */
#define BIN_FIRST_BYTES ((size_t)16 * KiB)
#define BIN_MIN_BLOCKS  4
#define BIN_MAX_BYTES   ((size_t)4 * MiB)
#define BIN_MAX_BLOCKS  131072
/* A heap about to take fresh pages for a span first empties its bins into
 * their spans when they hold at least this much (thread.c, heap_span_new).
 * 256 KiB since a flushed bin starts again at its first capacity (a flush
 * then moves few blocks): lower peaks, instructions within ~2 %
 * (docs/lab/2026-11-29-hot-paths-and-bins.md). */
#define BIN_FLUSH_BYTES ((size_t)256 * KiB)

/* The most a heap's bins may hold at their capacities together: a bin
 * about to grow past it first sends every other class's bin back to its
 * spans and their capacities back to the first (bin.c, bin_grow).  Bins
 * are the owner's alone, out of the purge thread's reach, so what they
 * hold stays resident until the owner's next slow path; without a budget
 * a program that churned many sizes and then paused kept every class's
 * bin at its largest (docs/lab/2026-11-29-purging.md).  Twice
 * BIN_MAX_BYTES, so one class can still grow to its largest while another
 * holds what it held. */
#ifndef BIN_HEAP_BYTES          /* build with -DBIN_HEAP_BYTES=N to try others */
#define BIN_HEAP_BYTES ((size_t)8 * MiB)
#endif
_Static_assert(BIN_HEAP_BYTES >= 2 * BIN_MAX_BYTES, "one class grows to BIN_MAX_BYTES beside another's");
/* A heap whose frees pushed this much past its full bins with no refill
 * in between is tearing its data down: its bins go back to their spans
 * and their first capacities (bin.c, heap_bin_spill), so that what they
 * hold when the thread stops calling is small (the bins are out of the
 * purge thread's reach); a bin grown for waves of frees grows back at its
 * next refill (bin_spilled stays).  The bins' whole budget: a wave of
 * frees that the bins may grow to (BIN_HEAP_BYTES) never pushes that much
 * past them between two refills (docs/lab/2026-11-29-purging.md). */
#define BIN_TEARDOWN_BYTES BIN_HEAP_BYTES

/* Most bytes one request may ask for: beyond this no mapping can succeed on
 * a 47-bit user address space, so we fail fast with ENOMEM. */
#define ALLOC_MAX ((size_t)1 << 46)

/* ---- blocks and spans -------------------------------------------------- */

/* A free small block: word 0 links the free list, word 1 holds its span's
 * free key (span_free_key), so a second free of the same block is noticed
 * with one compare (and confirmed by a scan). */
typedef struct block_s {
  struct block_s *next;
  uintptr_t key;
} block_t;

enum span_kind {
  SPAN_FREE = 0,   /* run of free pages in the page heap           */
  SPAN_SMALL = 1,  /* objects of one size class                    */
  SPAN_LARGE = 2,  /* one object, a run of pages                   */
  SPAN_XLARGE = 3, /* one object in its own mapping                */
  SPAN_DEAD = 4,   /* descriptor on the recycling list             */
  SPAN_CACHED = 5, /* a freed large run in a thread's cache (large.c) */
};

/* thread_free low bits: the remote-free notification protocol (heap.c). */
#define TF_NORMAL    0u
#define TF_NOTIFY    1u  /* span is in its owner's full list: tell it   */
#define TF_NOTIFYING 2u  /* a remote free is telling the owner now      */
#define TF_MASK      3u
/* ... and bits 48..63 count the blocks on the list (a span holds at most
 * 4096), so the owner takes the list without walking it. */
#define TF_COUNT_SHIFT 48
#define TF_PTR(tf)   ((block_t *)((tf) & (((uintptr_t)1 << TF_COUNT_SHIFT) - 1) & ~(uintptr_t)TF_MASK))
#define TF_COUNT(tf) ((uint32_t)((tf) >> TF_COUNT_SHIFT))

struct heap_s;
struct arena_s;

/* Fields are grouped by who writes them, one cache line each, so a thread
 * freeing into another thread's span reads a line the owner does not write
 * on every malloc (the validation fields), and writes a line of its own
 * (thread_free). */
#define CACHE_LINE 64
typedef struct span_s {
  /* read-mostly: set when the span is made; what free() validates with */
  char *start;               /* first byte of the span                   */
  size_t bytes;              /* span length (pages * PAGE_SIZE, or map)  */
  uint64_t div_magic;        /* block-start test (fastpath.h): floor(2^64
                                / block size) + 1                        */
  uint64_t carved_lim;       /* small: carved blocks * (block size *
                                div_magic mod 2^64); 0 for every other
                                kind, so free()'s one "off * div_magic <
                                carved_lim" test refuses pointers outside
                                the span, never handed out, not at a
                                block start, or in a non-small span     */
  struct heap_s *_Atomic owner;      /* NULL: abandoned / none           */
  uint32_t block_size;
  uint32_t capacity;
  uint8_t cls;
  uint8_t kind;
  uint8_t dirty;             /* FREE runs: pages may be resident         */
  uint8_t bin_cls;           /* small: the bin free() pushes its blocks on
                                in the freeing thread's heap: cls, or
                                0 for a first-class heap's span (bin 0 is
                                never used and never has room, so such a
                                free leaves the fast path: heap_bin_spill) */
  struct arena_s *arena;             /* NULL for xlarge                  */
  /* owner-written when blocks move between the span and the owner's bin */
  _Alignas(CACHE_LINE) block_t *free; /* owner-local free list           */
  char *bump;                /* small: first never-used block; written
                                only when the owner carves a new slice  */
  uint32_t nfree;            /* blocks on `free`                         */
  uint32_t used;             /* blocks not on `free`: handed out, in the
                                owner's bin, or freed remotely and not
                                yet collected                            */
  int32_t free_trigger;      /* owner's free goes slow when used <= this:
                                -1 current span, 0 other available span
                                (release when empty), full span: 1/16 of
                                it freed (heap.c, mark_full_list)        */
  char *bump_end;            /* small: start + capacity * block_size     */
  uint8_t full;              /* linked in the owner's full list          */
  /* written by other threads */
  _Alignas(CACHE_LINE) _Atomic uintptr_t thread_free; /* remote frees | TF_* */
  struct span_s *_Atomic remote_next;/* owner's notified-spans stack     */
  /* FREE runs (pages.c): its pages that may be resident lie in
   * [dirty_lo, dirty_hi) and are dirty_n bytes at most (0: none, and
   * dirty is 0); a run merged from a purged and a freed one is not
   * counted resident whole */
  char *dirty_lo, *dirty_hi;
  size_t dirty_n;
  /* lists and page-heap bookkeeping */
  _Alignas(CACHE_LINE) struct span_s *next, *prev; /* the list it is in  */
  uint64_t freed_ms;                 /* FREE runs: when it became free   */
  size_t map_bytes;                  /* xlarge: whole mapping length     */
  char *map_base;                    /* xlarge: mapping start            */
  struct span_s *map_next;           /* xlarge made of several cached
                                        mappings: its next piece (xlarge.c) */
  /* heap profiling (prof.c): a sampled object has a page run of its own
   * (its free goes through large_free), and its stack bucket is here */
  struct prof_bucket_s *prof;        /* NULL: not sampled                */
  size_t prof_size;                  /* bytes the program asked for      */
} span_t;

typedef struct span_list_s {
  span_t *first, *last;
} span_list_t;

/* ---- thread heap ------------------------------------------------------- */

_Static_assert(NCLASSES <= 256, "span_t.bin_cls is a uint8_t");
/* A thread heap's bins live in the thread's initial-exec TLS block
 * (lithe_tls_bins, heap.c), so that malloc and free address them as
 * %fs:(offset, class, 8) from the TLS offset alone, without loading the
 * heap pointer first (one load fewer in each; docs/lab/2026-12-01-where-the-instructions-go.md).  A heap reaches its bins through heap_t.bins: its
 * thread's TLS block while it is a live thread heap, its own bins_own
 * otherwise (lithe_heap_t's, the shared empty and fallback heaps, a heap
 * in the pool).  malloc pops bin[cls], the owner's free pushes on
 * bin[span->bin_cls], the same list.  bin_room: pushes left before it is
 * full, bin_cap less its length. */
typedef struct heap_bins_s {
  block_t *bin[NCLASSES];             /* free blocks of the class, LIFO  */
  int32_t bin_room[NCLASSES];         /* pushes left before it is full   */
  /* Bytes left before the next heap-profile sample: malloc subtracts its
   * size and goes to prof.c when this drops below 0 (prof.c sets it to
   * INTPTR_MAX when profiling is off, so that never happens). */
  intptr_t prof_left;
} heap_bins_t;

typedef struct heap_s {
  heap_bins_t *bins;                  /* &lithe_tls_bins of its thread, or
                                         &bins_own (see heap_bins_t)     */
  uint32_t bin_cap[NCLASSES];         /* capacity (0: not set yet)       */
  size_t bins_cap_bytes;              /* the sum of bin_cap x block size */
  uint32_t bin_spilled[NCLASSES];     /* frees that found it full since
                                         the last refill (bin.c, bin_grow) */
  intptr_t spill_left;                /* bytes more such frees, all classes,
                                         before the bins restart (bin.c,
                                         heap_bin_spill; 0 in a new heap:
                                         its first spill sets it) */
  span_t *current[NCLASSES];          /* the bin refills from current[cls] */
  span_list_t avail[NCLASSES];        /* spans with free room, current first */
  span_list_t full;                   /* spans with no room left         */
  span_t *_Atomic remote_spans;       /* full spans that got remote frees */
  /* empty spans kept for reuse; atomic slots, so that a thread under
   * memory-limit pressure can take them from an idle heap (limit.c) */
  span_t *_Atomic cache[HEAP_SPAN_CACHE];
  uint8_t spans_made[NCLASSES];       /* 0: next span is a first span    */
  uint8_t flush_misses, flush_skip;   /* thread.c, heap_span_new's back-off */
  uint32_t epoch;                     /* pages_epoch when bins last emptied */
  struct heap_s *next_pool;           /* pool of heaps of exited threads */
  struct heap_s *next_all;            /* every heap made (fork child walks it) */
  struct heap_s **tls_slot;           /* its thread's lithe_tls_heap     */
  heap_bins_t bins_own;               /* bins when not a live thread's   */
  bool live;
  bool scoped;                        /* a lithe_heap_t's (userheap.c): adopts
                                         no abandoned spans, since destroy frees
                                         its spans whole */
} heap_t;

/* ---- arena ------------------------------------------------------------- */

typedef struct arena_s {
  char *base;
  size_t size;
  char *bump;        /* pages below have been handed to the page heap    */
  char *commit_top;  /* pages below are read/write                       */
  struct arena_s *next;
} arena_t;

/* options.c: LITHE_* settings */
typedef struct options_s {
  size_t arena_size;
  long purge_delay_ms;
  uint8_t purge_thread;     /* LITHE_PURGE_THREAD: PURGE_THREAD_OFF, _ON or _AUTO (purge.c) */
  bool hugepages;            /* LITHE_HUGEPAGES: big blocks on huge pages (large.c) */
  bool on_error_ignore;
  uint8_t show_stats;     /* LITHE_SHOW_STATS: 0, STATS_TEXT or STATS_JSON */
  bool verbose;
} options_t;
enum { STATS_TEXT = 1, STATS_JSON = 2 };
enum { PURGE_THREAD_OFF = 0, PURGE_THREAD_ON = 1, PURGE_THREAD_AUTO = 2 };

#endif
