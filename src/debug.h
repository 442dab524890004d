/* SPDX-License-Identifier: MIT */
/* debug.h — lithe's checked invariants.
 *
 * A Debug build (cmake -DCMAKE_BUILD_TYPE=Debug, which defines
 * LITHE_DEBUG=1; `make debug` builds one in build-debug/) turns on:
 *   lt_assert(e)             e must hold;
 *   lt_assert_cmp(a, OP, b)  a OP b must hold; a failure prints both values;
 *   lt_assert_v(e, v)        e must hold; a failure prints v;
 *   lt_assert_held(&lock)    this thread holds the lock;
 * and a lock-rank check on every pthread_mutex_lock in src/: a thread may
 * take a lock only while holding locks of lower rank (the order below), so
 * an inversion is reported the first time it happens, not when it
 * deadlocks.  A failure writes (write(2) only, no allocation, like Go's
 * throw) "lithe: assertion failed: EXPR [a = V, b = W] at FILE:LINE in
 * FUNC" and aborts.  In a Release build every macro compiles to nothing:
 * the expression is not evaluated (only sizeof'ed, so it still has to
 * compile) and the locks are plain pthread calls. */
#ifndef LITHE_DEBUG_H
#define LITHE_DEBUG_H

#include <pthread.h>
#include <stdint.h>

#ifndef LITHE_DEBUG
#define LITHE_DEBUG 0
#endif

__attribute__((noreturn, cold)) void lithe_assert_fail(const char *expr, const char *file, int line,
                                                        const char *func, const char *na, uint64_t va,
                                                        int sa, const char *nb, uint64_t vb, int sb)
    __attribute__((visibility("hidden")));

/* is the type of x signed?  (prints -1 as -1, not 18446744073709551615) */
#define LT__SIGNED(x) ((__typeof__(x))-1 < (__typeof__(x))1)

#if LITHE_DEBUG
#define lt_assert(e)                                                                   \
  (__builtin_expect(!!(e), 1) ? (void)0                                                \
                              : lithe_assert_fail(#e, __FILE__, __LINE__, __func__, \
                                                  NULL, 0, 0, NULL, 0, 0))
#define lt_assert_v(e, v)                                                                   \
  do {                                                                                      \
    if (__builtin_expect(!(e), 0)) {                                                        \
      __typeof__(v) lt_v_ = (v);                                                            \
      lithe_assert_fail(#e, __FILE__, __LINE__, __func__, #v, (uint64_t)lt_v_,             \
                        LT__SIGNED(lt_v_), NULL, 0, 0);                                     \
    }                                                                                       \
  } while (0)
#define lt_assert_cmp(a, op, b)                                                             \
  do {                                                                                      \
    __typeof__(a) lt_a_ = (a);                                                              \
    __typeof__(b) lt_b_ = (b);                                                              \
    if (__builtin_expect(!(lt_a_ op lt_b_), 0))                                             \
      lithe_assert_fail(#a " " #op " " #b, __FILE__, __LINE__, __func__, #a,               \
                        (uint64_t)lt_a_, LT__SIGNED(lt_a_), #b, (uint64_t)lt_b_,            \
                        LT__SIGNED(lt_b_));                                                 \
  } while (0)

/* lock ranks: a lock may be taken only while every lock held ranks lower.
 * The order is the one the code nests them in (and heap_fork_prepare takes
 * them in).  Locks not listed in debug.c's table are tracked as held but
 * not ordered. */
enum lock_rank {
  RANK_NONE = 0,
  RANK_FALLBACK = 1, /* thread.c fallback_lock: around a whole malloc    */
  RANK_HEAPS,        /* heap.c heaps_lock: heap pool                   */
  RANK_ABANDONED,    /* heap.c abandoned_lock: -> pages_free           */
  RANK_PAGES,        /* pages.c pages_lock: -> arena_new, descriptors  */
  RANK_PAGEMAP,      /* pagemap.c pagemap_lock: -> meta_alloc          */
  RANK_META,         /* meta.c meta_lock: -> os_map only               */
};
int lithe_debug_lock(pthread_mutex_t *m, const char *file, int line) __attribute__((visibility("hidden")));
int lithe_debug_unlock(pthread_mutex_t *m, const char *file, int line) __attribute__((visibility("hidden")));
int lithe_debug_lock_init(pthread_mutex_t *m) __attribute__((visibility("hidden")));
int lithe_debug_holds(const pthread_mutex_t *m) __attribute__((visibility("hidden")));
void lithe_debug_lock_rank(pthread_mutex_t *m, enum lock_rank r) __attribute__((visibility("hidden")));
#define lt_assert_held(m) lt_assert(lithe_debug_holds(m))
/* fault injection and whole-heap verification (debug.c) */
_Bool lithe_fault_os(const char *what) __attribute__((visibility("hidden")));
_Bool lithe_fault_meta(const char *what) __attribute__((visibility("hidden")));
/* b is a block of small span s that has been handed out or carved: inside
 * [start, bump) at a multiple of the block size (checked with %, not with
 * the division magic the fast path uses, so this cross-checks it).  bump
 * is read relaxed: a bin may hold another heap's block, whose owner may be
 * carving that span meanwhile (internal.h, span_bump). */
#define lt_assert_block(s, b)                                                             \
  do {                                                                                    \
    const span_t *lt_s_ = (s); /* NULL (no span) fails too */                             \
    if (__builtin_expect(!(lt_s_ && (char *)(b) >= lt_s_->start &&                        \
                           (char *)(b) < span_bump(lt_s_) &&                              \
                           (size_t)((char *)(b) - lt_s_->start) % lt_s_->block_size == 0), 0)) \
      lithe_assert_fail("block inside its span, at a block start", __FILE__, __LINE__,  \
                        __func__, "block", (uintptr_t)(b), 0, "span",                    \
                        lt_s_ ? (uintptr_t)lt_s_->start : 0, 0);                          \
  } while (0)
/* every lock/unlock in src/ goes through the rank check (pthread.h has
 * been included above, so its own declarations are not renamed) */
#define pthread_mutex_lock(m)   lithe_debug_lock((m), __FILE__, __LINE__)
#define pthread_mutex_unlock(m) lithe_debug_unlock((m), __FILE__, __LINE__)
#define pthread_mutex_init(m, a) ((void)(a), lithe_debug_lock_init(m))
#else
#define lt_assert(e)            ((void)sizeof(!(e)))
#define lt_assert_v(e, v)       ((void)sizeof(!(e)), (void)sizeof(v))
#define lt_assert_cmp(a, op, b) ((void)sizeof((a)op(b)))
#define lt_assert_held(m)       ((void)sizeof(m))
#define lt_assert_block(s, b)   ((void)sizeof(s), (void)sizeof(b))
#endif

/* ---- valgrind mode -----------------------------------------------------
 * -DLITHE_VALGRIND=1 (make valgrind: build/liblithe-valgrind.so) tells
 * memcheck what lithe does with its memory, so that a program run under
 * `valgrind --leak-check=full` gets its leaks and invalid accesses reported
 * as under glibc's malloc.  Memcheck sees an anonymous mapping as defined
 * memory; this build marks every block lithe hands out with
 * VALGRIND_MALLOCLIKE_BLOCK (its usable size: a program may use all of
 * it), every freed one with VALGRIND_FREELIKE_BLOCK (no access until it
 * is handed out again), a small span's memory no-access when it is set up,
 * and opens (MAKE_MEM_DEFINED) the link or key word of a free block just
 * for lithe's own read or write of it, closing it again (MAKE_MEM_NOACCESS)
 * before the block can reach another thread.  The calls are memcheck's
 * client requests: a few instructions each (a no-op sequence) outside
 * valgrind, present only in this build. */
#ifndef LITHE_VALGRIND
#define LITHE_VALGRIND 0
#endif
/* Valgrind build: the last 32 bytes of every block are never the
 * program's (each request is 32 bytes bigger; memcheck is told the block
 * ends 32 bytes before lithe's block does).  Memcheck describes a bad
 * address by the oldest freed block near it (within its redzone); were
 * blocks adjacent, as lithe's are, a use after free in a block's first
 * bytes would be blamed on its older freed neighbour.  16 bytes were not
 * enough: a double free was described as "16 bytes after a block of size
 * 48 free'd" (the neighbour); with 32, memcheck_target's five errors are
 * described by their own blocks.  The gap also makes an overflow past a
 * block's end an invalid write, as under glibc.  Sizes past 2^62 fail
 * anyway and are left alone. */
#define LT_VG_PAD ((size_t)(LITHE_VALGRIND ? 32 : 0))
#define lt_vg_pad(n) (LITHE_VALGRIND && (n) <= ((size_t)1 << 62) ? (n) + LT_VG_PAD : (n))
#if LITHE_VALGRIND
#include <stddef.h>
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define lt_vg_open(p, n)      ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#define lt_vg_close(p, n)     ((void)VALGRIND_MAKE_MEM_NOACCESS((p), (n)))
#define lt_vg_writable(p, n)  ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
/* lithe's metadata: descriptors hold the start of the block they describe
 * (a large object's, a span's first block), which is no reference of the
 * program's; without this memcheck's leak search finds every such block
 * "still reachable".  Memcheck's ignored ranges are left out of the leak
 * search (and out of address-error reports, which memory lithe has mapped
 * read/write never gets anyway). */
#define lt_vg_hide(p, n)      ((void)VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE((p), (n)))
/* debug.c: p (NULL or a block just handed out) marked as allocated */
void *lithe_vg_malloced(void *p, _Bool zeroed) __attribute__((visibility("hidden")));
/* before lithe frees p: memcheck marks it freed, or reports an invalid
 * free (then false: p is left alone, as glibc's free under memcheck does) */
_Bool lithe_vg_freeing(void *p) __attribute__((visibility("hidden")));
/* a block resized in place from `from` to `to` usable bytes */
void lithe_vg_resized(void *p, size_t from, size_t to) __attribute__((visibility("hidden")));
/* 1: memcheck says [p, p+n) is addressable (a live block); 0: not, or not
 * running under valgrind */
int lithe_vg_addressable(const void *p, size_t n) __attribute__((visibility("hidden")));
/* lithe_heap_destroy frees a span (or a large object) whole: the blocks
 * still allocated in it are marked freed */
struct span_s;
void lithe_vg_discard(struct span_s *s) __attribute__((visibility("hidden")));
void lithe_vg_quarantine_flush(void) __attribute__((visibility("hidden")));
#define lt_vg_discard(s)          lithe_vg_discard(s)
#define lt_vg_quarantine_flush()  lithe_vg_quarantine_flush()
#define lt_vg_malloced(p, zeroed) lithe_vg_malloced((p), (zeroed))
#define lt_vg_freeing(p)          lithe_vg_freeing(p)
#define lt_vg_resized(p, from, to) lithe_vg_resized((p), (from), (to))
#else
#define lt_vg_open(p, n)           ((void)sizeof(p), (void)sizeof(n))
#define lt_vg_close(p, n)          ((void)sizeof(p), (void)sizeof(n))
#define lt_vg_writable(p, n)       ((void)sizeof(p), (void)sizeof(n))
#define lt_vg_hide(p, n)           ((void)sizeof(p), (void)sizeof(n))
#define lt_vg_discard(s)           ((void)sizeof(s))
#define lt_vg_quarantine_flush()   ((void)0)
#define lt_vg_malloced(p, zeroed)  ((void)sizeof(zeroed), (p))
#define lt_vg_freeing(p)           ((void)sizeof(p), 1)
#define lt_vg_resized(p, from, to) ((void)sizeof(p), (void)sizeof(from), (void)sizeof(to))
#endif

#endif
