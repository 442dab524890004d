/* SPDX-License-Identifier: MIT */
/* os.c — the only code that talks to the kernel about memory.
 *
 * Four states of address space (as in Go's runtime):
 *   reserved   mmap(PROT_NONE): owned, faults, not charged to the process;
 *   committed  mprotect(READ|WRITE): charged (VmData / Committed_AS),
 *              backed on first touch;
 *   purged     madvise(MADV_DONTNEED): still committed, pages given back,
 *              read as zero on next touch;
 *   released   munmap.
 * Commit is a separate step so that a reserved-but-unused arena costs
 * nothing under strict overcommit (a PROT_NONE or read-only private mapping
 * is not charged; mprotect to read/write charges it, and fails cleanly when
 * the commit limit is reached).  No MAP_NORESERVE anywhere: it would skip
 * that charge and turn an ENOMEM into the OOM killer.  Every call is
 * counted for statistics.
 *
 * Core dumps: a reserved range is marked MADV_DONTDUMP and a committed one
 * MADV_DODUMP again (dump_mark), so a crash dumps what lithe committed,
 * not its reservations: the pagemap's 128 GiB of read-only zero pages
 * went to a piped core handler (systemd-coredump, apport) whole.  One
 * madvise more per reservation, commit and decommit: an arena reserves
 * once per 64 MiB and commits in steps of 64 KiB to 4 MiB, the pagemap
 * commits 64 KiB per 64 MiB of heap; tests/regress/pagemap/regress_dontdump. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

os_stats_t os_stats;

/* Fault injection (Debug build only): every mmap / mprotect / madvise /
 * mremap below first asks lithe_fault_os (debug.c), which fails the Nth of
 * them with ENOMEM when LITHE_FAULT_OS=N; tests/sanitize/fault_inject.c
 * sweeps N over every call a workload makes.  (The macros do not recurse:
 * the inner name is the real call.) */
#if LITHE_DEBUG
#define mmap(...)     (lithe_fault_os("mmap") ? MAP_FAILED : mmap(__VA_ARGS__))
#define mprotect(...) (lithe_fault_os("mprotect") ? -1 : mprotect(__VA_ARGS__))
#define madvise(...)  (lithe_fault_os("madvise") ? -1 : madvise(__VA_ARGS__))
#define mremap(...)   (lithe_fault_os("mremap") ? MAP_FAILED : mremap(__VA_ARGS__))
#endif

static size_t page_size_cache;

size_t os_page_size(void) {
  if (!page_size_cache) {
    long p = sysconf(_SC_PAGESIZE);
    page_size_cache = p > 0 ? (size_t)p : 4096;
  }
  return page_size_cache;
}

static inline void count_call(void) {
  atomic_fetch_add_explicit(&os_stats.os_calls, 1, memory_order_relaxed);
}

/* Every range lithe gives the kernel to commit, decommit, release or unmap
 * is whole OS pages of a mapping it made: a range cut elsewhere would act
 * on a neighbour's page (munmap and mprotect round the end up). */
#define lt_assert_os_range(p, size)                                        \
  do {                                                                     \
    lt_assert_v(((uintptr_t)(p) & (os_page_size() - 1)) == 0, (uintptr_t)(p)); \
    lt_assert_v((size) > 0 && ((size) & (os_page_size() - 1)) == 0, (size));   \
  } while (0)

/* mmap `size` bytes aligned to `align` (a power of two >= OS page) with the
 * given protection.  A plain mapping is often aligned already; if not, a
 * second try asks for the aligned address just below it (the kernel maps
 * top-down, so the space below is usually free); only then over-map by
 * `align` and trim the ends.  The over-map needs size + align of address
 * space for a moment: under `ulimit -v` the hint is what makes an aligned
 * arena fit.  The over-map is made with `over_prot`, and the part kept is
 * then given `prot` (PROT_NONE then read/write: an over-map made writable
 * would be charged size + align).  With a `fallback` alignment (0:
 * none), `align` is only wished for: when the over-map does not fit,
 * the mapping is made aligned to `fallback` instead, the same way.
 * When the first plain try did not fit, nothing will, and no further
 * call is made. */
static void *map_aligned(size_t size, size_t align, int prot, int over_prot, size_t fallback) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  size_t ps = os_page_size();
  if (align < ps) align = ps;
  lt_assert_v((align & (align - 1)) == 0, align);
  size = align_up(size, ps);
  count_call();
  void *p = mmap(NULL, size, prot, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (((uintptr_t)p & (align - 1)) == 0) return p;
  count_call();
  munmap(p, size);
  char *hint = (char *)((uintptr_t)p & ~(uintptr_t)(align - 1));
  if (hint) {
    count_call();
    p = mmap(hint, size, prot, flags, -1, 0);
    if (p == hint) return p;
    if (p != MAP_FAILED) { count_call(); munmap(p, size); }
  }
  /* Misaligned: over-map with room to trim. */
  size_t over = size + align - ps;
  if (over < size) return NULL;
  count_call();
  char *q = mmap(NULL, over, over_prot, flags, -1, 0);
  if (q == MAP_FAILED) return fallback && fallback < align ? map_aligned(size, fallback, prot, over_prot, 0) : NULL;
  char *a = (char *)align_up((uintptr_t)q, align);
  if (a > q) { count_call(); munmap(q, (size_t)(a - q)); }
  char *end = q + over, *aend = a + size;
  if (end > aend) { count_call(); munmap(aend, (size_t)(end - aend)); }
  if (over_prot != prot) {
    count_call();
    if (mprotect(a, size, prot) != 0) {
      count_call();
      munmap(a, size);
      return NULL;
    }
  }
  lt_assert_v(((uintptr_t)a & (align - 1)) == 0 && a >= q && aend <= end, (uintptr_t)a);
  return a;
}

/* Leave [p, p+size) out of core dumps (reserved), or put it back in
 * (committed).  A failure costs only the dump's size or content, so it is
 * ignored, and the call is made past the Debug build's fault injection
 * (the parenthesised name): it has no failure to survive. */
static void dump_mark(void *p, size_t size, bool dump) {
  count_call();
  int saved = errno;
  (madvise)(p, size, dump ? MADV_DODUMP : MADV_DONTDUMP);
  errno = saved;
}

void *os_reserve(size_t size, size_t align, size_t fallback) {
  void *p = map_aligned(size, align, PROT_NONE, PROT_NONE, fallback);
  if (!p) return NULL;
  dump_mark(p, align_up(size, os_page_size()), false);
  stat_add(&os_stats.reserved, &os_stats.peak_reserved, size);
  return p;
}

/* Read-only zero pages: reading an unused part returns 0 (safe for the
 * pagemap's lookups of foreign pointers); not writable, so not charged. */
void *os_reserve_readonly(size_t size) {
  void *p = map_aligned(size, 0, PROT_READ, PROT_READ, 0);
  if (!p) return NULL;
  dump_mark(p, align_up(size, os_page_size()), false);
  stat_add(&os_stats.reserved, &os_stats.peak_reserved, size);
  return p;
}

bool os_commit(void *p, size_t size) {
  lt_assert_os_range(p, size);
  count_call();
  if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
    if (lithe_opt.verbose) lithe_warn("mprotect(commit) failed, errno", (size_t)errno);
    return false;
  }
  dump_mark(p, size, true);
  stat_add(&os_stats.committed, &os_stats.peak_committed, size);
  return true;
}

/* Give the pages back and stop the charge: a fresh PROT_NONE mapping over
 * the range drops both the pages and the commit in one call. */
void os_decommit(void *p, size_t size) {
  lt_assert_os_range(p, size);
  count_call();
  int saved = errno;
  void *q = mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  errno = saved;
  if (q == MAP_FAILED) { os_purge(p, size); return; }
  dump_mark(p, size, false); /* (a new mapping: also merges with its reservation) */
  atomic_fetch_sub_explicit(&os_stats.committed, size, memory_order_relaxed);
}

/* True only if every byte of [p, p+size) now reads as zero.  madvise can
 * fail (mlock'ed pages: EINVAL; a seccomp policy), and on a kernel whose
 * pages are larger than lithe's 8 KiB only the whole OS pages inside the
 * range may be dropped; the caller then keeps the range marked dirty, so
 * calloc still zeroes it.  free() must not change errno: it is restored. */
bool os_purge(void *p, size_t size) {
  size_t ps = os_page_size();
  char *start = (char *)align_up((uintptr_t)p, ps);
  char *end = (char *)((uintptr_t)((char *)p + size) & ~(uintptr_t)(ps - 1));
  if (start >= end) return false;
  count_call();
  atomic_fetch_add_explicit(&os_stats.purges, 1, memory_order_relaxed);
  int saved = errno;
  int rc = madvise(start, (size_t)(end - start), MADV_DONTNEED);
  errno = saved;
  return rc == 0 && start == (char *)p && end == (char *)p + size;
}

/* Which OS pages of [p, p+size) are resident (bit 0 of one byte each in
 * vec): mincore.  A page swapped out reads as not resident (its data is
 * still there: not a zero page). */
bool os_resident(void *p, size_t size, unsigned char *vec) {
  count_call();
  int saved = errno;
  int rc = mincore(p, size, vec);
  errno = saved;
  return rc == 0;
}

/* A new read/write mapping is reserved and committed at once. */
static void count_mapped_rw(size_t size) {
  stat_add(&os_stats.reserved, &os_stats.peak_reserved, size);
  stat_add(&os_stats.committed, &os_stats.peak_committed, size);
}

/* A read/write mapping of its own (xlarge objects).  No MAP_NORESERVE:
 * the kernel's overcommit check refuses absurd sizes, which become ENOMEM. */
void *os_map(size_t size, size_t align, size_t *mapped, void **base) {
  size_t ps = os_page_size();
  size = align_up(size, ps);
  void *p;
  if (align <= ps) {
    p = map_aligned(size, align, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE, 0);
    if (!p) return NULL;
  } else {
    /* Aligned: the plain and the hinted try map `size` read/write at once
     * (the charge the block takes anyway, so a size the kernel will not
     * commit fails at the first call); an over-map is PROT_NONE (not
     * charged) with only the kept part made read/write, since a read/write
     * over-map would be charged size + align under strict overcommit (and
     * count against RLIMIT_DATA).  Reserving every aligned block first and
     * committing it after cost a system call more for each, and four more
     * for each size the kernel refuses: MallocBench's stress_aligned asks
     * for every size up to 2^45 at every alignment up to 2^44. */
    p = map_aligned(size, align, PROT_READ | PROT_WRITE, PROT_NONE, 0);
    if (!p) return NULL;
  }
  lt_assert_v(((uintptr_t)p & ((align > ps ? align : ps) - 1)) == 0, (uintptr_t)p);
  *mapped = size;
  *base = p;
  count_mapped_rw(size);
  return p;
}

/* A read/write mapping of `size` bytes at exactly `at` (only where nothing
 * is mapped: MAP_FIXED_NOREPLACE; a kernel before 4.17 takes it as a hint,
 * and a mapping elsewhere is given back), or anywhere when `at` is NULL. */
void *os_map_at(void *at, size_t size) {
  count_call();
  int fixed = at ? MAP_FIXED_NOREPLACE : 0;
  void *p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (at && p != at) {
    count_call();
    munmap(p, size);
    return NULL;
  }
  count_mapped_rw(size);
  return p;
}

/* Give back a reservation that was never committed. */
void os_release(void *p, size_t size) {
  lt_assert_os_range(p, size);
  count_call();
  int saved = errno;
  munmap(p, size);
  errno = saved;
  atomic_fetch_sub_explicit(&os_stats.reserved, size, memory_order_relaxed);
}

/* Give back a committed mapping: the same unmap, counted off both. */
void os_unmap(void *p, size_t size) {
  os_release(p, size);
  atomic_fetch_sub_explicit(&os_stats.committed, size, memory_order_relaxed);
}

void os_hugepage(void *p, size_t size) {
  count_call();
  int saved = errno;
  madvise(p, size, MADV_HUGEPAGE);
  errno = saved;
}

static void *remap(void *p, size_t old_size, size_t new_size, int flags) {
  count_call();
  void *q = mremap(p, old_size, new_size, flags);
  if (q == MAP_FAILED) return NULL;
  stat_add(&os_stats.reserved, &os_stats.peak_reserved, new_size - old_size); /* (mod 2^64) */
  stat_add(&os_stats.committed, &os_stats.peak_committed, new_size - old_size);
  return q;
}

/* Resize an os_map mapping where it is (page tables, no copy); NULL when
 * the pages after it are taken or the kernel refuses. */
void *os_resize(void *p, size_t old_size, size_t new_size) {
  return remap(p, old_size, new_size, 0);
}

/* Resize an os_map mapping, moving it where the kernel likes if it must
 * (page tables move, no copy); NULL if refused, the old one intact. */
void *os_remap(void *p, size_t old_size, size_t new_size) {
  return remap(p, old_size, new_size, MREMAP_MAYMOVE);
}

/* Move an os_map mapping onto `dest`, a reservation of new_size bytes the
 * caller made (so it could prepare the pagemap there first: once the
 * block has moved nothing may fail).  NULL if the kernel refuses: the old
 * mapping is intact and the reservation is gone.  mremap may have unmapped
 * dest before failing (it does that first, then checks the limits), or
 * not: a PROT_NONE mapping put back with MAP_FIXED_NOREPLACE tells which,
 * and is released; if it cannot be put back the reservation is still
 * there (or another thread has mapped into the hole): it is left alone. */
void *os_move(void *p, size_t old_size, size_t new_size, void *dest) {
  count_call();
  void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
  if (q != MAP_FAILED) {
    atomic_fetch_sub_explicit(&os_stats.reserved, old_size, memory_order_relaxed);
    stat_add(&os_stats.committed, &os_stats.peak_committed, new_size - old_size);
    return q;
  }
  int saved = errno;
  count_call();
  void *r = mmap(dest, new_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (r == dest) {
    os_release(dest, new_size);
  } else {
    if (r != MAP_FAILED) { count_call(); munmap(r, new_size); } /* kernel < 4.17: a hint */
    atomic_fetch_sub_explicit(&os_stats.reserved, new_size, memory_order_relaxed);
  }
  errno = saved;
  return NULL;
}

/* Move the pages of [p, p+size) (inside one mapping) over [dest,
 * dest+size), part of another read/write mapping of lithe's whose pages
 * there were never touched: page tables move, no copy and no fault, and
 * the fresh pages at dest go.  1: moved.  0: refused, both as they were
 * (if the kernel had unmapped dest first, fresh pages are put back there).
 * -1: refused, and dest could not be mapped again: the kernel left it
 * mapped (then it is lithe's still) or another thread mapped into the
 * hole meanwhile; the two cannot be told apart, so the caller leaves the
 * range alone rather than unmap what may be someone else's. */
int os_move_over(void *p, size_t size, void *dest) {
  count_call();
  void *q = mremap(p, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
  if (q != MAP_FAILED) {
    /* dest's own pages were unmapped: they are no longer counted */
    atomic_fetch_sub_explicit(&os_stats.reserved, size, memory_order_relaxed);
    atomic_fetch_sub_explicit(&os_stats.committed, size, memory_order_relaxed);
    return 1;
  }
  int saved = errno;
  count_call();
  void *r = mmap(dest, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  errno = saved;
  if (r == dest) return 0;
  if (r != MAP_FAILED) { count_call(); munmap(r, size); } /* kernel < 4.17: a hint */
  return -1;
}

void os_random(void *buf, size_t n) {
  if (getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n) return;
  /* Fallback: clock and address entropy. */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)buf ^ (uint64_t)getpid() << 16;
  unsigned char *b = buf;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    b[i] = (unsigned char)x;
  }
}

/* Copy n bytes from this process's address `from` without faulting:
 * 1 done, 0 not mapped (EFAULT), -1 not known (the call refused). */
int os_peek(const void *from, void *to, size_t n) {
  struct iovec local = {to, n}, remote = {(void *)from, n};
  int saved = errno;
  ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  int r = got == (ssize_t)n ? 1 : got < 0 && errno == EFAULT ? 0 : -1;
  errno = saved;
  return r;
}

/* The address-space limit (RLIMIT_AS, ulimit -v) in bytes; SIZE_MAX if none. */
size_t os_address_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > SIZE_MAX)
    return SIZE_MAX;
  return (size_t)rl.rlim_cur;
}

uint64_t os_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
