/* SPDX-License-Identifier: MIT */
/* debug.c — what debug.h's checks need at run time (the assertion report,
 * the lock-rank bookkeeping of a Debug build), and the compile-time checks
 * of what lithe's data layout relies on.  The _Static_asserts hold in every
 * build; the rest compiles to nothing without LITHE_DEBUG but the report. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include "internal.h"
#if LITHE_VALGRIND
#include <sched.h>
#include "fastpath.h"
#endif

/* ---- layout the code relies on ------------------------------------------ */

/* The remote-free word (span_t.thread_free) packs a block address below
 * TF_COUNT_SHIFT, the count of blocks on the list above it and the notify
 * state in the low bits (blocks are 16-byte aligned). */
_Static_assert(TF_COUNT_SHIFT >= ADDR_BITS, "remote-free count bits overlap the address bits");
_Static_assert(TF_MASK < 16, "notify state bits must fit under a block's 16-byte alignment");
/* The most blocks a span holds: a 64 KiB span of the 16-byte class.  (Spans
 * of bigger classes are bigger but hold 4..7 blocks; sizeclass_init checks
 * every class at run time in a Debug build.) */
_Static_assert(SPAN_SMALL_BYTES / 16 < ((uint64_t)1 << (64 - TF_COUNT_SHIFT)),
               "a span's block count must fit the remote-free count bits");
/* Class indices live in uint8_t (span_t.cls, class_lut). */
_Static_assert(NCLASSES <= 256, "class index must fit uint8_t");
/* sizeof(block_t): a free block holds its link and the free key, so the
 * smallest class must hold both. */
_Static_assert(sizeof(block_t) == 2 * sizeof(void *), "block_t is link + key");
_Static_assert(sizeof(block_t) <= 16, "the 16-byte class must hold a block_t");
/* What free() validates with is read-mostly and in exactly one cache line:
 * a remote free reads it while the owner writes its own line. */
_Static_assert(offsetof(span_t, start) == 0, "span_t's read-mostly line starts the struct");
_Static_assert(offsetof(span_t, arena) + sizeof(void *) <= CACHE_LINE,
               "span_t's read-mostly fields must fit one cache line");
_Static_assert(offsetof(span_t, free) == CACHE_LINE, "owner-written fields start line 2");
_Static_assert(offsetof(span_t, thread_free) == 2 * CACHE_LINE, "remote-written fields start line 3");
/* Lemire's divisibility test (small_block_start) is exact for offsets below
 * 2^32: the biggest small span is the power of two holding 4 blocks of the
 * biggest class, 8 * SMALL_MAX at most. */
_Static_assert(8 * SMALL_MAX < ((uint64_t)1 << 32), "span offsets must stay below 2^32");
/* The pagemap covers the whole address space it claims. */
_Static_assert((uint64_t)L1_COUNT * L2_COUNT * PAGE_SIZE == (uint64_t)1 << ADDR_BITS,
               "pagemap levels must cover ADDR_BITS");
_Static_assert(ALLOC_MAX < ((uint64_t)1 << ADDR_BITS), "ALLOC_MAX must be below the address space");
/* A span's pages are whole lithe pages; the class lookup table's second
 * part steps by 16 bytes. */
_Static_assert(SPAN_SMALL_BYTES % PAGE_SIZE == 0 && SPAN_FIRST_BYTES % PAGE_SIZE == 0,
               "spans are whole pages");
_Static_assert(LUT_MAX % 16 == 0 && LUT_MAX <= SMALL_MAX, "class_lut steps by 16 up to LUT_MAX");
_Static_assert(FINE_MAX <= SMALL_MAX && LUT_COARSE == FINE_MAX + 1,
               "class_lut's part by the size ends where the 16-byte part starts");
_Static_assert((ARENA_MIN & (ARENA_MIN - 1)) == 0 && ARENA_MIN >= 4 * SMALL_MAX,
               "arenas are powers of two that hold the biggest small span");

/* ---- assertion report ---------------------------------------------------- */

static size_t put(char *buf, size_t len, size_t cap, const char *s) {
  while (s && *s && len + 1 < cap) buf[len++] = *s++;
  return len;
}

static size_t put_value(char *buf, size_t len, size_t cap, const char *name, uint64_t v, int sgn) {
  char num[32];
  len = put(buf, len, cap, name);
  len = put(buf, len, cap, " = ");
  if (sgn && (int64_t)v < 0) {
    num[0] = '-';
    fmt_dec(num + 1, (uint64_t)0 - v);
  } else if (v > 0xffff) {
    fmt_hex(num, (uintptr_t)v); /* addresses and masks read better in hex */
  } else {
    fmt_dec(num, v);
  }
  return put(buf, len, cap, num);
}

void lithe_assert_fail(const char *expr, const char *file, int line, const char *func,
                       const char *na, uint64_t va, int sa, const char *nb, uint64_t vb, int sb) {
  char buf[512], num[24];
  size_t len = 0, cap = sizeof buf;
  len = put(buf, len, cap, "lithe: assertion failed: ");
  len = put(buf, len, cap, expr);
  if (na) {
    len = put(buf, len, cap, " [");
    len = put_value(buf, len, cap, na, va, sa);
    if (nb) {
      len = put(buf, len, cap, ", ");
      len = put_value(buf, len, cap, nb, vb, sb);
    }
    len = put(buf, len, cap, "]");
  }
  len = put(buf, len, cap, " at ");
  len = put(buf, len, cap, file);
  len = put(buf, len, cap, ":");
  fmt_dec(num, (uint64_t)(line > 0 ? line : 0));
  len = put(buf, len, cap, num);
  len = put(buf, len, cap, " in ");
  len = put(buf, len, cap, func);
  len = put(buf, len, cap, "\n");
  for (size_t off = 0; off < len;) {
    ssize_t w = write(STDERR_FILENO, buf + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  abort();
}

/* ---- lock ranks (Debug build) -------------------------------------------- */
#if LITHE_DEBUG
#undef pthread_mutex_lock
#undef pthread_mutex_unlock
#undef pthread_mutex_init

extern pthread_mutex_t heaps_lock, abandoned_lock, pagemap_lock, meta_lock, fallback_lock;

#define MAX_HELD 16u
static __thread pthread_mutex_t *held[MAX_HELD] __attribute__((tls_model("initial-exec")));
static __thread unsigned nheld __attribute__((tls_model("initial-exec")));

/* Locks other layers add may register a rank here (before first use). */
#define MAX_EXTRA 8u
static struct { pthread_mutex_t *m; enum lock_rank r; } extra[MAX_EXTRA];
static _Atomic unsigned nextra;

void lithe_debug_lock_rank(pthread_mutex_t *m, enum lock_rank r) {
  unsigned i = atomic_fetch_add(&nextra, 1);
  lt_assert_cmp(i, <, MAX_EXTRA);
  extra[i].m = m;
  extra[i].r = r;
}

static enum lock_rank rank_of(const pthread_mutex_t *m) {
  if (m == &fallback_lock) return RANK_FALLBACK;
  if (m == &heaps_lock) return RANK_HEAPS;
  if (m == &abandoned_lock) return RANK_ABANDONED;
  if (m == &pages_lock) return RANK_PAGES;
  if (m == &pagemap_lock) return RANK_PAGEMAP;
  if (m == &meta_lock) return RANK_META;
  unsigned n = atomic_load(&nextra);
  for (unsigned i = 0; i < n && i < MAX_EXTRA; i++)
    if (extra[i].m == m) return extra[i].r;
  return RANK_NONE;
}

int lithe_debug_holds(const pthread_mutex_t *m) {
  for (unsigned i = 0; i < nheld; i++)
    if (held[i] == m) return 1;
  return 0;
}

static void forget(pthread_mutex_t *m) {
  for (unsigned i = nheld; i-- > 0;)
    if (held[i] == m) {
      held[i] = held[--nheld];
      return;
    }
}

int lithe_debug_lock(pthread_mutex_t *m, const char *file, int line) {
  enum lock_rank r = rank_of(m);
  for (unsigned i = 0; i < nheld; i++) {
    if (held[i] == m) lithe_assert_fail("lock not already held by this thread (self-deadlock)",
                                        file, line, "pthread_mutex_lock", "lock", (uintptr_t)m, 0,
                                        NULL, 0, 0);
    enum lock_rank hr = rank_of(held[i]);
    if (r != RANK_NONE && hr != RANK_NONE && hr >= r)
      lithe_assert_fail("lock rank: every held lock ranks below the one taken", file, line,
                        "pthread_mutex_lock", "rank taken", r, 0, "rank held", hr, 0);
  }
  int rc = pthread_mutex_lock(m);
  lt_assert_v(rc == 0, rc);
  lt_assert_cmp(nheld, <, MAX_HELD);
  held[nheld++] = m;
  return rc;
}

int lithe_debug_unlock(pthread_mutex_t *m, const char *file, int line) {
  if (!lithe_debug_holds(m))
    lithe_assert_fail("unlock of a lock this thread holds", file, line, "pthread_mutex_unlock",
                      "lock", (uintptr_t)m, 0, NULL, 0, 0);
  forget(m);
  return pthread_mutex_unlock(m);
}

/* heap_fork_child re-initialises the locks heap_fork_prepare took: in the
 * child they are no longer held. */
int lithe_debug_lock_init(pthread_mutex_t *m) {
  forget(m);
  return pthread_mutex_init(m, NULL);
}
#endif

/* ---- fault injection (Debug build) ---------------------------------------- */
#if LITHE_DEBUG
/* LITHE_FAULT_OS=N: the Nth mmap / mprotect / madvise / mremap fails (os.c);
 * LITHE_FAULT_META=N: the Nth metadata allocation fails (meta.c).  Each is
 * one failure, then everything works again: the sweep in
 * tests/sanitize/fault_inject.c tries every N a workload reaches.  The
 * variable is read at the first call (getenv does not allocate). */
typedef struct {
  const char *env;
  _Atomic long at; /* -2: not read yet, -1: off */
  _Atomic long calls;
} fault_t;
static fault_t faults[2] = {{"LITHE_FAULT_OS", -2, 0}, {"LITHE_FAULT_META", -2, 0}};

static bool fault(fault_t *f, const char *what) {
  long at = atomic_load_explicit(&f->at, memory_order_relaxed);
  if (at == -2) {
    const char *v = getenv(f->env);
    at = v && *v ? strtol(v, NULL, 10) : -1;
    if (at <= 0) at = -1;
    atomic_store(&f->at, at);
  }
  if (at < 0) return false;
  long n = atomic_fetch_add(&f->calls, 1) + 1;
  if (n != at) return false;
  char msg[96];
  size_t len = 0;
  len = put(msg, len, sizeof msg, "fault injection: ");
  len = put(msg, len, sizeof msg, what);
  len = put(msg, len, sizeof msg, " fails, call");
  msg[len] = '\0';
  lithe_warn(msg, (size_t)n);
  errno = ENOMEM;
  return true;
}

bool lithe_fault_os(const char *what) { return fault(&faults[0], what); }
bool lithe_fault_meta(const char *what) { return fault(&faults[1], what); }

/* Everything a Debug build can check about the whole allocator at a quiet
 * moment: the page heap, the pagemap of every free run, and the calling
 * thread's heap (its spans' counts and free lists). */
void lithe_verify(void) {
  pages_verify();
  heap_verify(lithe_tls_heap);
  meta_verify();
}
#endif

/* ---- valgrind mode (make valgrind; debug.h says what it marks) ------------ */
#if LITHE_VALGRIND
void *lithe_vg_malloced(void *p, bool zeroed) {
  if (p) {
    span_t *s = pagemap_lookup(p);
    size_t usable = (s->kind == SPAN_SMALL ? s->block_size : s->bytes) - LT_VG_PAD;
    VALGRIND_MALLOCLIKE_BLOCK(p, usable, 0, zeroed);
  }
  return p;
}

/* Quarantine: a freed block is handed back to lithe only after 20 MiB
 * more have been freed (or 65536 blocks), as valgrind's own malloc does.
 * Memcheck keeps the last 20 MiB of freed blocks (--freelist-vol) to say
 * which one a bad access hit, and it searches them oldest first: were a
 * block reused at once, as lithe's LIFO bins do, a use after free would be
 * described with the free of an earlier block at the same address.
 * Blocks over 1 MiB are given back at once (memcheck lets them out of its
 * list first too, --freelist-big-blocks): a program that frees a big
 * reserve to retry a failed allocation (a new_handler) gets the room.  A
 * spin flag, not a mutex (no lock-rank entry, no fork handler): a free
 * that finds it taken (or a child that a fork left it taken in) frees at
 * once. */
#define QUARANTINE_BYTES ((size_t)20 << 20)
#define QUARANTINE_SLOTS 65536
#define QUARANTINE_BIG ((size_t)1 << 20)
static atomic_flag quarantine_busy = ATOMIC_FLAG_INIT;
static void *quarantine[QUARANTINE_SLOTS];
static size_t quarantine_size[QUARANTINE_SLOTS];
static size_t quarantine_head, quarantine_count, quarantine_bytes;

static size_t usable_of_block(const void *p) {
  span_t *s = pagemap_lookup(p);
  if (!s) return 0;
  return s->kind == SPAN_SMALL ? s->block_size : s->bytes;
}

/* Memcheck's own verdict decides: it reports a free of anything but a live
 * block (a double free with the stacks of both frees and the malloc), and
 * its error count then grows.  Outside valgrind both counts are 0 and the
 * block is freed at once.  True: lithe frees p now; false: not (reported,
 * or kept in quarantine). */
bool lithe_vg_freeing(void *p) {
  if (!p) return true;
  unsigned before = VALGRIND_COUNT_ERRORS;
  VALGRIND_FREELIKE_BLOCK(p, 0);
  if (VALGRIND_COUNT_ERRORS != before) return false;
  if (!RUNNING_ON_VALGRIND ||
      atomic_flag_test_and_set_explicit(&quarantine_busy, memory_order_acquire))
    return true;
  size_t n = usable_of_block(p);
  if (n > QUARANTINE_BIG) {
    atomic_flag_clear_explicit(&quarantine_busy, memory_order_release);
    return true;
  }
  void *out[8];
  unsigned nout = 0;
  while (quarantine_count && nout < 8 &&
         (quarantine_count == QUARANTINE_SLOTS || quarantine_bytes + n > QUARANTINE_BYTES)) {
    size_t i = (quarantine_head + QUARANTINE_SLOTS - quarantine_count) % QUARANTINE_SLOTS;
    out[nout++] = quarantine[i];
    quarantine[i] = NULL; /* no stale address for the leak search to find */
    quarantine_bytes -= quarantine_size[i];
    quarantine_count--;
  }
  bool now = quarantine_count == QUARANTINE_SLOTS;
  if (!now) {
    quarantine[quarantine_head] = p;
    quarantine_size[quarantine_head] = n;
    quarantine_head = (quarantine_head + 1) % QUARANTINE_SLOTS;
    quarantine_count++;
    quarantine_bytes += n;
  }
  atomic_flag_clear_explicit(&quarantine_busy, memory_order_release);
  for (unsigned i = 0; i < nout; i++) free_inline(out[i]); /* no lithe lock held */
  return now;
}

/* lithe_heap_destroy frees its spans whole: first every quarantined block
 * (some may be that heap's) */
void lithe_vg_quarantine_flush(void) {
  for (unsigned spins = 0;;) {
    void *p = NULL;
    if (atomic_flag_test_and_set_explicit(&quarantine_busy, memory_order_acquire)) {
      if (++spins > 1000000) return; /* a fork left it taken */
      sched_yield();
      continue;
    }
    if (quarantine_count) {
      size_t i = (quarantine_head + QUARANTINE_SLOTS - quarantine_count) % QUARANTINE_SLOTS;
      p = quarantine[i];
      quarantine[i] = NULL;
      quarantine_bytes -= quarantine_size[i];
      quarantine_count--;
    }
    atomic_flag_clear_explicit(&quarantine_busy, memory_order_release);
    if (!p) return;
    free_inline(p);
  }
}

void lithe_vg_discard(span_t *s) {
  if (s->kind != SPAN_SMALL) {
    VALGRIND_FREELIKE_BLOCK(s->start, 0);
    return;
  }
  for (char *b = s->start; b < span_bump(s); b += s->block_size)
    if (lithe_vg_addressable(b, 1)) VALGRIND_FREELIKE_BLOCK(b, 0);
}

void lithe_vg_resized(void *p, size_t from, size_t to) {
  if (from != to) VALGRIND_RESIZEINPLACE_BLOCK(p, from, to, 0);
}

/* VALGRIND_GET_VBITS reports nothing: 3 when a byte is not addressable,
 * 1 when all are, 0 outside valgrind. */
int lithe_vg_addressable(const void *p, size_t n) {
  unsigned char vbits[16];
  if (n > sizeof vbits) n = sizeof vbits;
  return VALGRIND_GET_VBITS(p, vbits, n) == 1;
}
#endif
