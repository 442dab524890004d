/* SPDX-License-Identifier: MIT */
/* liblithe-trace.so -- records every malloc-family call of a program.
 *
 *   LITHE_TRACE=/tmp/prog.ltrace LD_PRELOAD=build/liblithe-trace.so prog args
 *
 * Design (docs/trace-format.md has the file format and the rules):
 *  - Every call is forwarded to the next allocator (dlsym(RTLD_NEXT)); while
 *    dlsym itself allocates, requests are served from a static bootstrap buffer.
 *  - Each thread numbers its own records (a plain counter) and appends fixed
 *    32-byte raw records to its own mmap'd buffer. No record takes a shared
 *    lock or a shared atomic read-modify-write: the address map is a
 *    direct-mapped shadow (one word per 8-byte granule) that the allocating
 *    thread writes and the freeing thread reads and clears; a cross-thread
 *    free finds the owner (thread, seq) there, its happens-after dependency.
 *    A full buffer takes its place in a spool file (`<path>.spool.<pid>`)
 *    with one fetch_add and is written there with one pwrite() of 128 KiB.
 *  - pthread_create records thread_start on the creating thread and gives
 *    the child its id; a thread's pthread_key destructor records thread_exit.
 *  - At exit (library destructor) recording stops, every thread buffer is
 *    flushed, the per-thread streams are merged by timestamp without ever
 *    putting a record before one it depends on, references are turned into
 *    record distances and the compact version-2 trace is written to <path>.
 *  - fork() without exec: the child stops recording and writes nothing.
 *    A process exec'd by a recorded process (LITHE_TRACE is inherited) writes
 *    `<path>.<pid>` so it does not overwrite its parent's trace;
 *    LITHE_TRACE_CHILDREN=0 disables recording in descendants.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <time.h>
#include <unistd.h>

#include "trace-format.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* ---------------------------------------------------------------- real functions */
static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void *(*r_reallocarray)(void *, size_t, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_memalign)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);
static int (*r_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* Bootstrap buffer for allocations made by dlsym() while we resolve the above. */
static _Alignas(64) char boot_buf[1 << 16];
static atomic_size_t boot_used;

static void *boot_alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  size_t need = (n + 15) & ~(size_t)15;
  for (;;) {
    size_t cur = atomic_load(&boot_used);
    size_t start = (cur + 16 + align - 1) & ~(align - 1); /* 16 bytes for the size */
    if (start + need > sizeof boot_buf) return NULL;
    if (atomic_compare_exchange_weak(&boot_used, &cur, start + need)) {
      *(size_t *)(boot_buf + start - 16) = n;
      return boot_buf + start;
    }
  }
}
static inline bool is_boot(const void *p) {
  return (const char *)p >= boot_buf && (const char *)p < boot_buf + sizeof boot_buf;
}
static inline size_t boot_size(const void *p) { return *(const size_t *)((const char *)p - 16); }

static atomic_int init_state; /* 0 none, 1 resolving, 2 ready */
static TLS int tl_resolving;

static void resolve_real(void) {
  int expect = 0;
  if (atomic_compare_exchange_strong(&init_state, &expect, 1)) {
    tl_resolving = 1;
    r_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    r_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    r_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    r_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    r_reallocarray = (void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
    r_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    r_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    r_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    r_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    r_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    r_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
        dlsym(RTLD_NEXT, "pthread_create");
    tl_resolving = 0;
    if (!r_malloc || !r_free || !r_calloc || !r_realloc || !r_posix_memalign) {
      static const char m[] = "liblithe-trace: cannot find the real malloc (dlsym RTLD_NEXT)\n";
      (void)!write(2, m, sizeof m - 1);
      abort();
    }
    atomic_store(&init_state, 2);
  } else {
    while (atomic_load(&init_state) != 2) sched_yield();
  }
}
/* true: caller must use the bootstrap buffer */
static inline bool need_boot(void) {
  if (LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return false;
  if (tl_resolving) return true;
  resolve_real();
  return false;
}

/* ---------------------------------------------------------------- recording state */
struct rawrec { /* 32 bytes, one per recorded call, in a thread buffer / the spool */
  uint64_t ts;                 /* timestamp: only the merge's ordering hint */
  uint64_t seq : 48, tid : 16; /* the thread's own sequence number (>= 1), thread id */
  uint64_t ref;                /* free / realloc: REF(owner thread, its seq) of the object,
                                  0 = none; thread_start: the child's thread id */
  uint64_t size : 48, op : 8, alog : 8; /* requested size (sizes above 2^48 never succeed) */
};
_Static_assert(sizeof(struct rawrec) == 32, "raw record layout");
#define REF(tid, seq) ((uint64_t)(tid) << 48 | (uint64_t)(seq))
#define REF_TID(r) ((unsigned)((r) >> 48))
#define REF_SEQ(r) ((r) & ((1ull << 48) - 1))

#define BUF_RECS 4096 /* 128 KiB per thread buffer */

struct tstate {
  struct rawrec *buf;
  uint32_t n;
  uint16_t tid;
  uint64_t seq;      /* last sequence number this thread gave out */
  uint64_t last_ts;  /* keeps the thread's timestamps non-decreasing */
  uint64_t unknown;  /* frees of blocks the tracer never saw allocated */
  atomic_int in_rec;
  struct tstate *next;
};

static atomic_bool g_recording; /* set once the constructor has set up the spool */
/* Stopping: trace_finish() sets g_stop, then makes every thread's in_rec
   store visible to itself (membarrier, or a fence on both sides where the
   kernel lacks it), then waits for in_rec = 0 (see record()). */
static atomic_bool g_stop;
static bool g_fence_each; /* no membarrier: every record pays a full fence */
static atomic_uint g_ntid;
static pid_t g_pid;
static int g_spool_fd = -1;
/* bytes of the spool handed out: a full buffer takes its place with one
   fetch_add (once per 4096 records) and is written there with pwrite, so no
   lock is held while the kernel copies it */
static atomic_uint_fast64_t g_spool_off;
static pthread_mutex_t g_reg_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct tstate *g_threads;
static pthread_key_t g_key;
static char g_out_path[4096];
static char g_spool_path[4200];
/* g_startdep[child] = REF(creating thread, seq of its thread_start record), 0 = unknown */
static _Atomic uint64_t *g_startdep;

static TLS struct tstate *tl_ts;
static TLS int tl_busy;
static TLS unsigned tl_given_tid; /* 1 + id given by the creating thread, 0 = none */
static TLS int tl_unrecorded;     /* a thread beyond LTR_MAX_THREADS */

static void *os_alloc(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0) { if (errno == EINTR) continue; return; }
    s += w; n -= (size_t)w;
  }
}

static void flush_ts(struct tstate *t) {
  if (!t->n) return;
  size_t n = (size_t)t->n * sizeof(struct rawrec);
  uint64_t off = atomic_fetch_add_explicit(&g_spool_off, n, memory_order_relaxed);
  const char *b = (const char *)t->buf;
  while (n) {
    ssize_t w = pwrite(g_spool_fd, b, n, (off_t)off);
    if (w < 0) { if (errno == EINTR) continue; break; }
    b += w; n -= (size_t)w; off += (uint64_t)w;
  }
  t->n = 0;
}

/* The in_rec handshake with trace_finish(), recorder side: raise in_rec,
   then read g_stop. The finisher stores g_stop, then runs membarrier
   (a full barrier on every thread of the process), then reads in_rec. So
   either the recorder sees g_stop and backs out, or the finisher sees
   in_rec = 1 and waits: a record is complete before the flush or not made.
   The recorder's side is a compiler barrier only: no fence, no RMW. */
static inline bool rec_enter(struct tstate *t) {
  atomic_store_explicit(&t->in_rec, 1, memory_order_relaxed);
  if (UNLIKELY(g_fence_each)) atomic_thread_fence(memory_order_seq_cst);
  else atomic_signal_fence(memory_order_seq_cst);
  if (LIKELY(!atomic_load_explicit(&g_stop, memory_order_relaxed))) return true;
  atomic_store_explicit(&t->in_rec, 0, memory_order_release);
  return false;
}
static inline void rec_leave(struct tstate *t) {
  atomic_store_explicit(&t->in_rec, 0, memory_order_release);
}

static inline uint64_t now_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* returns the record's sequence number, 0 if recording has stopped */
static uint64_t record(struct tstate *t, unsigned op, unsigned alog, uint64_t size, uint64_t ref) {
  if (!rec_enter(t)) return 0;
  uint64_t seq = ++t->seq, ts = now_ticks();
  if (ts < t->last_ts) ts = t->last_ts; /* a migration to a core whose counter lags */
  t->last_ts = ts;
  struct rawrec *r = &t->buf[t->n++];
  r->ts = ts; r->seq = seq; r->tid = t->tid;
  r->ref = ref; r->op = op; r->alog = alog; r->size = size;
  if (UNLIKELY(t->n == BUF_RECS)) flush_ts(t);
  rec_leave(t);
  return seq;
}

static void thread_exit_cb(void *arg) {
  struct tstate *t = arg;
  record(t, LTR_THREAD_EXIT, 0, 0, 0);
  if (rec_enter(t)) { /* same protocol as a record: do not race with the exit-time flush */
    flush_ts(t);
    madvise(t->buf, BUF_RECS * sizeof(struct rawrec), MADV_DONTNEED);
    rec_leave(t);
  }
  /* tl_ts stays valid: calls made by later TLS destructors are still recorded
     into the (now empty) buffer and flushed at process exit; the merge moves
     the exit record after them. */
}

static struct tstate *get_ts_slow(void) {
  tl_busy = 1;
  struct tstate *t = os_alloc(sizeof *t);
  if (t) t->buf = os_alloc(BUF_RECS * sizeof(struct rawrec));
  if (!t || !t->buf) { tl_busy = 0; return NULL; }
  /* a thread made by our pthread_create got its id from its creator; others
     (the main thread, threads from clone) take the next one */
  unsigned id = tl_given_tid ? tl_given_tid - 1 : atomic_fetch_add(&g_ntid, 1);
  if (id >= LTR_MAX_THREADS) { /* the format's limit: this thread is not recorded */
    munmap(t->buf, BUF_RECS * sizeof(struct rawrec));
    munmap(t, sizeof *t);
    tl_busy = 0;
    tl_unrecorded = 1;
    return NULL;
  }
  t->tid = (uint16_t)id;
  pthread_mutex_lock(&g_reg_mtx);
  t->next = g_threads;
  g_threads = t;
  pthread_mutex_unlock(&g_reg_mtx);
  pthread_setspecific(g_key, t);
  tl_ts = t;
  tl_busy = 0;
  return t;
}

/* Runs a call of the real allocator with recording off for this thread, so a
   real function that calls another malloc-family function through the PLT
   (glibc's reallocarray calls realloc) is recorded once, not twice. */
#define REAL(expr) ({ int b_ = tl_busy; tl_busy = 1; __typeof__(expr) r_ = (expr); tl_busy = b_; r_; })

/* NULL: do not record this call */
static inline struct tstate *get_ts(void) {
  if (!atomic_load_explicit(&g_recording, memory_order_relaxed) || tl_busy) return NULL;
  if (LIKELY(tl_ts != NULL)) return tl_ts;
  return tl_unrecorded ? NULL : get_ts_slow();
}

/* ---------------------------------------------------------------- address map */
/* A direct-mapped shadow of the address space: one 8-byte entry per 8-byte
   granule (the smallest alignment allocators hand out), holding
   REF(thread, seq) of the live allocation that starts there, 0 = none. Each
   block start has an entry of its own, so no two live blocks share a word:
   the allocating thread stores it after the real call returned, the freeing
   thread loads and clears it before the real free, and the program's own
   hand-over of the pointer (and the allocator's reuse of the address) orders
   those accesses. No lock, no read-modify-write; a cross-thread free reads
   the owner's (thread, seq) from the entry: that is its happens-after
   dependency. Two levels: a root of 2^26 leaf pointers (512 MiB of
   address-space reservation, MAP_NORESERVE, only touched pages cost memory)
   for the 47-bit user address space, leaves of 2^18 entries (2 MiB, one per
   2 MiB of heap address space, installed once with a CAS). Cost in memory:
   one touched 4 KiB shadow page per 4 KiB of heap address space that holds
   a block start. */
#define SH_GRAIN 3
#define SH_LEAF_BITS 18
#define SH_SPAN_BITS (SH_GRAIN + SH_LEAF_BITS)
#define SH_ADDR_BITS 47
#define SH_ROOT_LEN (1ull << (SH_ADDR_BITS - SH_SPAN_BITS))
#define SH_LEAF_BYTES ((size_t)8 << SH_LEAF_BITS)
static _Atomic(_Atomic uint64_t *) *g_root;

static void *os_reserve(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static _Atomic uint64_t *sh_new_leaf(_Atomic(_Atomic uint64_t *) *rp) {
  _Atomic uint64_t *leaf = os_reserve(SH_LEAF_BYTES), *seen = NULL;
  if (!leaf) return NULL;
  if (atomic_compare_exchange_strong(rp, &seen, leaf)) return leaf;
  munmap((void *)leaf, SH_LEAF_BYTES);
  return seen;
}

/* the entry of block p; NULL if p is outside the map (or create and no memory) */
static inline _Atomic uint64_t *sh_entry(const void *p, bool create) {
  uint64_t a = (uint64_t)(uintptr_t)p;
  if (UNLIKELY(a >> SH_ADDR_BITS)) return NULL;
  _Atomic(_Atomic uint64_t *) *rp = &g_root[a >> SH_SPAN_BITS];
  _Atomic uint64_t *leaf = atomic_load_explicit(rp, memory_order_acquire);
  if (UNLIKELY(!leaf)) {
    if (!create || !(leaf = sh_new_leaf(rp))) return NULL;
  }
  return &leaf[(a >> SH_GRAIN) & ((1u << SH_LEAF_BITS) - 1)];
}
static inline void sh_set(const void *p, uint64_t ref) {
  _Atomic uint64_t *e = sh_entry(p, true);
  if (e) atomic_store_explicit(e, ref, memory_order_relaxed);
}
/* returns the entry of p and clears it; 0 if the block is unknown */
static inline uint64_t sh_take(const void *p) {
  _Atomic uint64_t *e = sh_entry(p, false);
  if (!e) return 0;
  uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
  if (v) atomic_store_explicit(e, 0, memory_order_relaxed);
  return v;
}

/* ---------------------------------------------------------------- the recording path */
static inline unsigned log2_ceil(size_t a) {
  if (a <= 1) return 0;
  return 64u - (unsigned)__builtin_clzll((unsigned long long)(a - 1));
}

static inline void record_alloc(unsigned op, unsigned alog, size_t size, void *p) {
  if (!p) return;
  struct tstate *t = get_ts();
  if (!t) return;
  uint64_t seq = record(t, op, alog, size, 0);
  if (seq) sh_set(p, REF(t->tid, seq));
}

EXPORT void *malloc(size_t n) {
  if (UNLIKELY(need_boot())) return boot_alloc(n, 16);
  void *p = REAL(r_malloc(n));
  record_alloc(LTR_MALLOC, 0, n, p);
  return p;
}

EXPORT void *calloc(size_t a, size_t b) {
  if (UNLIKELY(need_boot())) {
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) return NULL;
    return boot_alloc(n, 16); /* static buffer: already zero */
  }
  void *p = REAL(r_calloc(a, b));
  if (p) record_alloc(LTR_CALLOC, 0, a * b, p);
  return p;
}

EXPORT void free(void *p) {
  if (!p || is_boot(p)) return;
  if (UNLIKELY(need_boot())) return; /* cannot happen for a real pointer; be safe */
  struct tstate *t = get_ts();
  if (t) {
    /* forget the address before the real free, so a concurrent malloc that
       returns the same address cannot be confused with this object */
    uint64_t ref = sh_take(p);
    if (ref) record(t, LTR_FREE, 0, 0, ref);
    else t->unknown++;
  } else if ((tl_busy || tl_unrecorded) && atomic_load_explicit(&g_recording, memory_order_relaxed)) {
    sh_take(p); /* an unrecorded free must not leave the entry for the next block here */
  }
  int b = tl_busy;
  tl_busy = 1;
  r_free(p);
  tl_busy = b;
}

static void *do_realloc(void *p, size_t n, unsigned op, size_t a, size_t b) {
  if (UNLIKELY(need_boot())) {
    void *q = boot_alloc(n, 16);
    if (q && p) memcpy(q, p, is_boot(p) && boot_size(p) < n ? boot_size(p) : n);
    return q;
  }
  if (UNLIKELY(is_boot(p))) { /* move a bootstrap block to the real heap */
    void *q = malloc(n);
    if (q) memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
    return q;
  }
  struct tstate *t = get_ts();
  uint64_t ref = (t && p) ? sh_take(p) : 0;
  void *q;
  if (op == LTR_REALLOCARRAY) {
    if (r_reallocarray) q = REAL(r_reallocarray(p, a, b));
    else if (__builtin_mul_overflow(a, b, &n)) { errno = ENOMEM; q = NULL; }
    else q = REAL(r_realloc(p, n));
  } else {
    q = REAL(r_realloc(p, n));
  }
  if (!t) return q;
  if (!q) {
    if (p && n == 0) { if (ref) record(t, LTR_FREE, 0, 0, ref); }
    else if (p && ref) sh_set(p, ref); /* failed: the old block is still live */
    return q;
  }
  uint64_t seq = record(t, op, 0, n, ref);
  if (seq) sh_set(q, REF(t->tid, seq));
  return q;
}

EXPORT void *realloc(void *p, size_t n) { return do_realloc(p, n, LTR_REALLOC, 0, 0); }

EXPORT void *reallocarray(void *p, size_t a, size_t b) {
  size_t n;
  if (__builtin_mul_overflow(a, b, &n)) { errno = ENOMEM; return NULL; }
  return do_realloc(p, n, LTR_REALLOCARRAY, a, b);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  if (UNLIKELY(need_boot())) {
    void *p = boot_alloc(n, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = REAL(r_posix_memalign(out, align, n));
  if (rc == 0) record_alloc(LTR_POSIX_MEMALIGN, log2_ceil(align), n, *out);
  return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
  if (UNLIKELY(need_boot())) return boot_alloc(n, align);
  void *p = r_aligned_alloc ? REAL(r_aligned_alloc(align, n)) : REAL(r_memalign(align, n));
  record_alloc(LTR_ALIGNED_ALLOC, log2_ceil(align), n, p);
  return p;
}

EXPORT void *memalign(size_t align, size_t n) {
  if (UNLIKELY(need_boot())) return boot_alloc(n, align);
  void *p = REAL(r_memalign(align, n));
  record_alloc(LTR_MEMALIGN, log2_ceil(align), n, p);
  return p;
}

EXPORT void *valloc(size_t n) {
  if (UNLIKELY(need_boot())) return boot_alloc(n, 4096);
  void *p = REAL(r_valloc(n));
  record_alloc(LTR_VALLOC, log2_ceil((size_t)sysconf(_SC_PAGESIZE)), n, p);
  return p;
}

EXPORT void *pvalloc(size_t n) {
  if (UNLIKELY(need_boot())) return boot_alloc(n, 4096);
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  void *p = REAL(r_pvalloc(n));
  size_t rounded = n ? (n + pg - 1) & ~(pg - 1) : pg;
  record_alloc(LTR_PVALLOC, log2_ceil(pg), rounded, p);
  return p;
}

/* ---------------------------------------------------------------- thread lifetimes */
/* pthread_create gives the child its thread id and records a thread_start
   record on the creating thread; the child's first record must follow it in
   the merged trace (g_startdep). The child records thread_exit in its
   pthread_key destructor. */
struct tramp { void *(*fn)(void *); void *arg; unsigned tid; };

static void *tramp_run(void *a) {
  struct tramp tr = *(struct tramp *)a;
  REAL((r_free(a), 0));
  tl_given_tid = tr.tid + 1;
  (void)get_ts(); /* registers the thread, so its exit is recorded even if it never allocates */
  return tr.fn(tr.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  if (!r_pthread_create) { need_boot(); if (!r_pthread_create) return EAGAIN; }
  struct tstate *t = get_ts();
  struct tramp *tr = t ? REAL(r_malloc(sizeof *tr)) : NULL;
  if (!tr) return r_pthread_create(th, attr, fn, arg);
  unsigned id = atomic_fetch_add(&g_ntid, 1); /* once per thread, not per call */
  if (id >= LTR_MAX_THREADS) { REAL((r_free(tr), 0)); return r_pthread_create(th, attr, fn, arg); }
  tr->fn = fn; tr->arg = arg; tr->tid = id;
  uint64_t seq = record(t, LTR_THREAD_START, 0, 0, id);
  if (seq) atomic_store_explicit(&g_startdep[id], REF(t->tid, seq), memory_order_relaxed);
  int rc = r_pthread_create(th, attr, tramp_run, tr);
  if (rc != 0) { /* the merge drops a start whose child never existed */
    atomic_store_explicit(&g_startdep[id], 0, memory_order_relaxed);
    REAL((r_free(tr), 0));
  }
  return rc;
}

/* ---------------------------------------------------------------- start and finish */
__attribute__((noreturn)) static void syscall_exit_group(int status) {
  for (;;) syscall(SYS_exit_group, status);
}

static size_t str_cat(char *dst, size_t cap, size_t at, const char *s) {
  while (*s && at + 1 < cap) dst[at++] = *s++;
  dst[at] = 0;
  return at;
}
static size_t num_cat(char *dst, size_t cap, size_t at, unsigned long v) {
  char tmp[24]; int k = 0;
  do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (k && at + 1 < cap) dst[at++] = tmp[--k];
  dst[at] = 0;
  return at;
}
static void say(const char *a, const char *b) {
  write_all(2, "liblithe-trace: ", 16);
  write_all(2, a, strlen(a));
  if (b) write_all(2, b, strlen(b));
  write_all(2, "\n", 1);
}

static void atfork_child(void) {
  /* Documented: a forked child (no exec) stops recording and writes nothing. */
  atomic_store(&g_recording, false);
}

__attribute__((constructor)) static void trace_init(void) {
  if (need_boot()) return;
  const char *path = getenv("LITHE_TRACE");
  if (!path || !*path) return;
  g_pid = getpid();
  const char *parent = getenv("LITHE_TRACE_PARENT");
  /* a descendant that exec'd writes <path>.<pid>; the root process, also after
     it exec'd itself (env PROG: same pid), writes <path> */
  bool child = parent && *parent && strtoul(parent, NULL, 10) != (unsigned long)g_pid;
  if (child) {
    const char *c = getenv("LITHE_TRACE_CHILDREN");
    if (c && c[0] == '0') return;
  }
  /* make the paths absolute now: the program may chdir() before it exits */
  size_t at = 0;
  if (path[0] != '/' && getcwd(g_out_path, sizeof g_out_path - 2)) {
    at = strlen(g_out_path);
    at = str_cat(g_out_path, sizeof g_out_path, at, "/");
  }
  at = str_cat(g_out_path, sizeof g_out_path, at, path);
  char base[sizeof g_out_path];
  memcpy(base, g_out_path, at + 1);
  if (child) {
    at = str_cat(g_out_path, sizeof g_out_path, at, ".");
    num_cat(g_out_path, sizeof g_out_path, at, (unsigned long)g_pid);
  } else {
    /* descendants that exec see this and write <path>.<pid> */
    char pidbuf[24];
    num_cat(pidbuf, sizeof pidbuf, 0, (unsigned long)g_pid);
    setenv("LITHE_TRACE_PARENT", pidbuf, 1);
  }
  at = str_cat(g_spool_path, sizeof g_spool_path, 0, base);
  at = str_cat(g_spool_path, sizeof g_spool_path, at, ".spool.");
  num_cat(g_spool_path, sizeof g_spool_path, at, (unsigned long)g_pid);
  g_spool_fd = open(g_spool_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (g_spool_fd < 0) { say("cannot create spool file ", g_spool_path); return; }
  if (pthread_key_create(&g_key, thread_exit_cb) != 0) { close(g_spool_fd); return; }
  g_root = os_reserve(SH_ROOT_LEN * sizeof *g_root);
  g_startdep = os_reserve(LTR_MAX_THREADS * sizeof *g_startdep);
  if (!g_root || !g_startdep) { say("cannot reserve the address map", NULL); close(g_spool_fd); return; }
  /* the stop handshake (rec_enter) needs membarrier, or a fence per record */
  g_fence_each = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0;
  pthread_atfork(NULL, NULL, atfork_child);
  atomic_store(&g_recording, true);
  (void)get_ts(); /* the main thread is thread 0 */
}

/* Output buffer for the final trace (mmap'd, written in 1 MiB pieces). */
struct obuf { int fd; unsigned char *b; size_t n; uint64_t fnv, total; };
#define OBUF_CAP (1u << 20)
static void ob_flush(struct obuf *o) {
  o->fnv = ltr_fnv64(o->fnv, o->b, o->n);
  write_all(o->fd, o->b, o->n);
  o->total += o->n;
  o->n = 0;
}
static inline void ob_reserve(struct obuf *o) { if (o->n + 32 > OBUF_CAP) ob_flush(o); }

static void trace_finish(void);
__attribute__((destructor)) static void trace_fini(void) { trace_finish(); }

/* Programs that end with _exit() (dash does) skip destructors: finish there too.
   A forked or vforked child fails the pid check in trace_finish(). */
EXPORT __attribute__((noreturn)) void _exit(int status) {
  trace_finish();
  syscall_exit_group(status);
}
EXPORT __attribute__((noreturn)) void _Exit(int status) {
  trace_finish();
  syscall_exit_group(status);
}

/* The merge: each thread's records are in its own sequence order in the
   spool. They are interleaved by timestamp, except that a record never goes
   before what it depends on: a free or realloc after the allocation of its
   object (owner thread, seq), a thread's first record after the
   thread_start that created it. Every dependency is a real happens-before
   edge of the recorded run, so a blocked thread's dependency chain always
   ends at a record that can go now (the chain is followed; a cycle, which
   only corrupt input could make, is cut after as many steps as threads). */
struct merge {
  struct rawrec *raw;
  uint32_t *order;     /* order[base[t] + seq - 1] = index in raw */
  uint64_t *base, *cnt, *cursor;
  uint32_t *kid;       /* by position in order: 1 + output record number, 0 = not out */
  uint32_t *heap, *hpos;
  unsigned nthr, hn;
};

static inline struct rawrec *m_head(struct merge *m, unsigned t) {
  return &m->raw[m->order[m->base[t] + m->cursor[t]]];
}
static inline bool m_less(struct merge *m, unsigned a, unsigned b) {
  uint64_t x = m_head(m, a)->ts, y = m_head(m, b)->ts;
  return x < y || (x == y && a < b);
}
static void m_swap(struct merge *m, unsigned i, unsigned j) {
  uint32_t a = m->heap[i], b = m->heap[j];
  m->heap[i] = b; m->heap[j] = a; m->hpos[b] = i; m->hpos[a] = j;
}
static void m_sift(struct merge *m, unsigned i) {
  while (i && m_less(m, m->heap[i], m->heap[(i - 1) / 2])) { m_swap(m, i, (i - 1) / 2); i = (i - 1) / 2; }
  for (;;) {
    unsigned l = 2 * i + 1, r = l + 1, b = i;
    if (l < m->hn && m_less(m, m->heap[l], m->heap[b])) b = l;
    if (r < m->hn && m_less(m, m->heap[r], m->heap[b])) b = r;
    if (b == i) return;
    m_swap(m, i, b);
    i = b;
  }
}
/* position in order of REF(t, seq), or UINT64_MAX if no such record */
static inline uint64_t m_pos(struct merge *m, uint64_t ref) {
  unsigned t = REF_TID(ref);
  uint64_t s = REF_SEQ(ref);
  if (t >= m->nthr || s == 0 || s > m->cnt[t]) return UINT64_MAX;
  return m->base[t] + s - 1;
}
/* the thread whose records must go before t's next one, or -1 */
static int m_blocker(struct merge *m, unsigned t) {
  struct rawrec *r = m_head(m, t);
  if (m->cursor[t] == 0) {
    uint64_t d = atomic_load_explicit(&g_startdep[t], memory_order_relaxed);
    if (d && m_pos(m, d) != UINT64_MAX && m->cursor[REF_TID(d)] < REF_SEQ(d)) return (int)REF_TID(d);
  }
  if ((r->op == LTR_FREE || ltr_op_is_realloc(r->op)) && r->ref && m_pos(m, r->ref) != UINT64_MAX &&
      m->cursor[REF_TID(r->ref)] < REF_SEQ(r->ref))
    return (int)REF_TID(r->ref);
  return -1;
}

static void trace_finish(void) {
  if (!atomic_load(&g_recording) || getpid() != g_pid) return;
  static atomic_flag once = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&once)) return;
  tl_busy = 1; /* this thread records nothing from now on */
  struct timespec ts0, ts1;
  clock_gettime(CLOCK_MONOTONIC, &ts0);
  atomic_store(&g_stop, true);
  if (g_fence_each) atomic_thread_fence(memory_order_seq_cst);
  else syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  uint64_t unknown = 0;
  pthread_mutex_lock(&g_reg_mtx);
  for (struct tstate *t = g_threads; t; t = t->next) {
    /* wait for a record in progress (bounded: a thread may be stuck forever) */
    for (int i = 0; i < 100000 && atomic_load_explicit(&t->in_rec, memory_order_acquire); i++)
      sched_yield();
    flush_ts(t);
    unknown += t->unknown;
  }
  pthread_mutex_unlock(&g_reg_mtx);
  atomic_store(&g_recording, false);

  off_t bytes = lseek(g_spool_fd, 0, SEEK_END);
  if (bytes < 0 || (uint64_t)bytes != atomic_load(&g_spool_off)) {
    say("spool file lost or short (the program closed its descriptor?): ", g_spool_path);
    return;
  }
  size_t nraw = (size_t)bytes / sizeof(struct rawrec);
  if (nraw >= UINT32_MAX) { say("too many records (over 4 billion) for ", g_out_path); return; }
  struct merge M, *m = &M;
  memset(m, 0, sizeof M);
  if (nraw) {
    m->raw = mmap(NULL, nraw * sizeof *m->raw, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                  g_spool_fd, 0);
    if (m->raw == MAP_FAILED) { say("cannot map spool ", g_spool_path); return; }
  }
  unsigned nthr = atomic_load(&g_ntid);
  if (nthr > LTR_MAX_THREADS) nthr = LTR_MAX_THREADS;
  m->nthr = nthr;
  size_t tbytes = ((size_t)nthr + 1) * (3 * sizeof(uint64_t) + 2 * sizeof(uint32_t) + 1);
  unsigned char *tmem = os_alloc(tbytes);
  m->order = os_alloc(nraw * sizeof *m->order + 8);
  m->kid = os_alloc(nraw * sizeof *m->kid + 8);
  if (!tmem || !m->order || !m->kid) { say("out of memory merging ", g_spool_path); return; }
  m->base = (uint64_t *)tmem;
  m->cnt = m->base + nthr + 1;
  m->cursor = m->cnt + nthr + 1;
  m->heap = (uint32_t *)(m->cursor + nthr + 1);
  m->hpos = m->heap + nthr + 1;
  unsigned char *pend_exit = (unsigned char *)(m->hpos + nthr + 1);
  for (size_t i = 0; i < nraw; i++)
    if (m->raw[i].tid < nthr) m->cnt[m->raw[i].tid]++;
  for (unsigned t = 0; t < nthr; t++) m->base[t + 1] = m->base[t] + m->cnt[t];
  for (size_t i = 0; i < nraw; i++) { /* stable: each thread's records stay in spool order */
    unsigned t = m->raw[i].tid;
    if (t >= nthr) continue;
    uint64_t at = m->base[t] + m->cursor[t]++;
    if (m->raw[i].seq != m->cursor[t]) { say("spool out of order, no trace written: ", g_spool_path); return; }
    m->order[at] = (uint32_t)i;
  }
  for (unsigned t = 0; t < nthr; t++) {
    m->cursor[t] = 0;
    if (m->cnt[t]) { m->heap[m->hn] = t; m->hpos[t] = m->hn; m->hn++; m_sift(m, m->hn - 1); }
  }

  struct obuf o = { .fd = -1, .fnv = LTR_FNV64_INIT };
  o.b = os_alloc(OBUF_CAP);
  o.fd = open(g_out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (o.fd < 0 || !o.b) { say("cannot create trace file ", g_out_path); return; }
  struct ltr_header h;
  memset(&h, 0, sizeof h);
  write_all(o.fd, &h, sizeof h); /* placeholder */
  unsigned cur_tid = 0, max_tid = 0;
  uint64_t live = 0, peak = 0, k = 0, dropped = 0;
  while (m->hn) {
    unsigned t = m->heap[0];
    bool cut = false;
    for (unsigned hops = 0;; hops++) {
      int b = m_blocker(m, t);
      if (b < 0) break;
      if (hops > nthr) { cut = true; break; }
      t = (unsigned)b;
    }
    uint64_t at = m->base[t] + m->cursor[t];
    struct rawrec *r = m_head(m, t);
    bool last = ++m->cursor[t] == m->cnt[t];
    if (last) { unsigned i = m->hpos[t]; m->hn--; if (i != m->hn) { m_swap(m, i, m->hn); m_sift(m, i); } }
    else m_sift(m, m->hpos[t]);
    unsigned op = r->op;
    uint64_t refpos = UINT64_MAX, oldsize = 0;
    if (op == LTR_FREE || ltr_op_is_realloc(op)) {
      if (r->ref && !cut) refpos = m_pos(m, r->ref);
      /* the object must be out and live: cannot fail for a consistent spool; be safe */
      if (refpos != UINT64_MAX && !m->kid[refpos]) refpos = UINT64_MAX;
      if (refpos == UINT64_MAX && op == LTR_FREE) { dropped++; goto next; }
      if (refpos != UINT64_MAX) oldsize = m->raw[m->order[refpos]].size;
    } else if (op == LTR_THREAD_START) {
      uint64_t d = r->ref < nthr ? atomic_load_explicit(&g_startdep[r->ref], memory_order_relaxed) : 0;
      if (d != REF(t, r->seq)) goto next; /* the creation failed */
    } else if (op == LTR_THREAD_EXIT && !last) {
      pend_exit[t] = 1; /* later TLS destructors still recorded: exit goes after them */
      goto next;
    }
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1) { /* the exit record moved to the end of its thread */
        if (!(last && pend_exit[t] && op != LTR_THREAD_EXIT)) break;
        op = LTR_THREAD_EXIT; refpos = UINT64_MAX;
      }
      ob_reserve(&o);
      unsigned tag = op;
      if (t != cur_tid) tag |= LTR_TAG_THREAD;
      o.b[o.n++] = (unsigned char)tag;
      if (t != cur_tid) { o.n += ltr_put_varint(o.b + o.n, t); cur_tid = t; }
      if (t > max_tid) max_tid = t;
      k++;
      if (pass == 0) m->kid[at] = (uint32_t)k;
      uint64_t back = refpos != UINT64_MAX ? k - m->kid[refpos] : 0;
      if (refpos != UINT64_MAX) m->kid[refpos] = 0; /* consumed */
      if (op == LTR_FREE) {
        o.n += ltr_put_varint(o.b + o.n, back);
        live -= oldsize;
      } else if (ltr_op_is_realloc(op)) {
        o.n += ltr_put_varint(o.b + o.n, back);
        o.n += ltr_put_varint(o.b + o.n, r->size);
        live += r->size - oldsize;
      } else if (op == LTR_THREAD_START) {
        o.n += ltr_put_varint(o.b + o.n, r->ref);
        if (r->ref > max_tid) max_tid = (unsigned)r->ref;
      } else if (op != LTR_THREAD_EXIT) {
        if (ltr_op_is_aligned(op)) o.b[o.n++] = (unsigned char)r->alog;
        o.n += ltr_put_varint(o.b + o.n, r->size);
        live += r->size;
      }
      if (live > peak) peak = live;
    }
  next:;
  }
  ob_flush(&o);
  memcpy(h.magic, LTR_MAGIC, 8);
  h.version = LTR_VERSION;
  h.header_size = LTR_HEADER_SIZE;
  h.record_count = k;
  h.payload_bytes = o.total;
  h.thread_count = k ? max_tid + 1 : 0;
  h.payload_fnv = o.fnv;
  h.peak_live_bytes = peak;
  h.pid = (uint32_t)g_pid;
  h.header_fnv = ltr_fnv32(&h, 60);
  if (pwrite(o.fd, &h, sizeof h, 0) != (ssize_t)sizeof h) say("cannot write header of ", g_out_path);
  close(o.fd);
  if (m->raw) munmap(m->raw, nraw * sizeof *m->raw);
  munmap(m->order, nraw * sizeof *m->order + 8);
  munmap(m->kid, nraw * sizeof *m->kid + 8);
  munmap(tmem, tbytes);
  munmap(o.b, OBUF_CAP);
  close(g_spool_fd);
  unlink(g_spool_path);
  if (getenv("LITHE_TRACE_VERBOSE")) {
    char msg[256]; size_t at = 0;
    at = str_cat(msg, sizeof msg, at, "wrote ");
    at = num_cat(msg, sizeof msg, at, (unsigned long)k);
    at = str_cat(msg, sizeof msg, at, " records, ");
    at = num_cat(msg, sizeof msg, at, (unsigned long)h.thread_count);
    at = str_cat(msg, sizeof msg, at, " threads, unknown frees ");
    at = num_cat(msg, sizeof msg, at, (unsigned long)(unknown + dropped));
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    at = str_cat(msg, sizeof msg, at, ", merge ");
    at = num_cat(msg, sizeof msg, at,
                 (unsigned long)((ts1.tv_sec - ts0.tv_sec) * 1000 + (ts1.tv_nsec - ts0.tv_nsec) / 1000000));
    at = str_cat(msg, sizeof msg, at, " ms -> ");
    say(msg, g_out_path);
  }
}
