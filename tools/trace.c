/* liblithe-trace.so -- records every malloc-family call of a program.
 *
 *   LITHE_TRACE=/tmp/prog.ltrace LD_PRELOAD=build/liblithe-trace.so prog args
 *
 * Design (docs/trace-format.md has the file format and the rules):
 *  - Every call is forwarded to the next allocator (dlsym(RTLD_NEXT)); while
 *    dlsym itself allocates, requests are served from a static bootstrap buffer.
 *  - Each thread appends fixed 32-byte raw records to its own mmap'd buffer;
 *    the only shared write on the recording path is one atomic fetch_add on the
 *    global sequence counter (plus one stripe lock of the address map).
 *    A full buffer is appended to a spool file (`<path>.spool.<pid>`) under a
 *    short mutex: one write() of 128 KiB.
 *  - The address -> allocation map is a lock-striped open-addressing hash
 *    (1024 stripes, linear probing, backward-shift deletion).
 *  - At exit (library destructor) recording stops, every thread buffer is
 *    flushed, the spool is ordered by sequence number, references are turned
 *    into record indices and the compact version-1 trace is written to <path>.
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
  uint64_t seq : 48, tid : 16; /* global sequence number (>= 1), thread id */
  uint64_t ref : 48, op : 8, alog : 8; /* seq of the object freed / reallocated, 0 = none */
  uint64_t size;    /* requested size (0 for free) */
  uint64_t oldsize; /* size of the object freed / reallocated */
};

#define BUF_RECS 4096 /* 128 KiB per thread buffer */

struct tstate {
  struct rawrec *buf;
  uint32_t n;
  uint16_t tid;
  atomic_int in_rec;
  struct tstate *next;
};

static atomic_bool g_recording; /* set once the constructor has set up the spool */
/* Global sequence counter. Stopping adds STOP_BIT to it: a record whose
   fetch_add returns a value with STOP_BIT set was started after the stop and
   is dropped (see record() and trace_finish()). */
#define STOP_BIT (1ull << 62)
static atomic_uint_fast64_t g_seq = 1;
static atomic_uint g_ntid;
static atomic_uint_fast64_t g_unknown_frees;
static pid_t g_pid;
static int g_spool_fd = -1;
static pthread_mutex_t g_spool_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_reg_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct tstate *g_threads;
static pthread_key_t g_key;
static char g_out_path[4096];
static char g_spool_path[4200];

static TLS struct tstate *tl_ts;
static TLS int tl_busy;

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
  pthread_mutex_lock(&g_spool_mtx);
  write_all(g_spool_fd, t->buf, (size_t)t->n * sizeof(struct rawrec));
  pthread_mutex_unlock(&g_spool_mtx);
  t->n = 0;
}

static void thread_exit_cb(void *arg) {
  struct tstate *t = arg;
  /* same protocol as a record: do not race with the exit-time flush */
  atomic_store_explicit(&t->in_rec, 1, memory_order_relaxed);
  if (!(atomic_fetch_add_explicit(&g_seq, 0, memory_order_acq_rel) & STOP_BIT)) {
    flush_ts(t);
    madvise(t->buf, BUF_RECS * sizeof(struct rawrec), MADV_DONTNEED);
  }
  atomic_store_explicit(&t->in_rec, 0, memory_order_release);
  /* tl_ts stays valid: calls made by later TLS destructors are still recorded
     into the (now empty) buffer and flushed at process exit. */
}

static struct tstate *get_ts_slow(void) {
  tl_busy = 1;
  struct tstate *t = os_alloc(sizeof *t);
  if (t) t->buf = os_alloc(BUF_RECS * sizeof(struct rawrec));
  if (!t || !t->buf) { tl_busy = 0; return NULL; }
  unsigned id = atomic_fetch_add(&g_ntid, 1);
  t->tid = (uint16_t)(id < LTR_MAX_THREADS ? id : LTR_MAX_THREADS - 1);
  pthread_mutex_lock(&g_reg_mtx);
  t->next = g_threads;
  g_threads = t;
  pthread_mutex_unlock(&g_reg_mtx);
  pthread_setspecific(g_key, t);
  tl_ts = t;
  tl_busy = 0;
  return t;
}

/* NULL: do not record this call */
/* Runs a call of the real allocator with recording off for this thread, so a
   real function that calls another malloc-family function through the PLT
   (glibc's reallocarray calls realloc) is recorded once, not twice. */
#define REAL(expr) ({ int b_ = tl_busy; tl_busy = 1; __typeof__(expr) r_ = (expr); tl_busy = b_; r_; })

static inline struct tstate *get_ts(void) {
  if (!atomic_load_explicit(&g_recording, memory_order_relaxed) || tl_busy) return NULL;
  if (LIKELY(tl_ts != NULL)) return tl_ts;
  return get_ts_slow();
}

/* ---------------------------------------------------------------- address map */
/* Lock-striped open addressing with linear probing and backward-shift
   deletion. Entries are (address, seq) pairs in one array, so a lookup touches
   one cache line. The hash keeps locality: the stripe and the base position
   come from the address's 64 KiB region, the offset inside the region is
   added unhashed, so objects allocated next to each other sit in neighbouring
   entries (the map costs far fewer cache misses than a fully mixed hash). */
#define NSTRIPE 1024
struct ent { uint64_t key, val, size; }; /* key: address, 0 = empty; val: allocation seq */
struct stripe {
  atomic_flag lock;
  struct ent *e;
  size_t cap, cnt;
} __attribute__((aligned(64)));
static struct stripe g_map[NSTRIPE];

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33; return x;
}
static inline uint64_t region_hash(uint64_t k) { return mix64(k >> 16); }
static inline size_t home_of(uint64_t k, uint64_t rh, size_t m) {
  return (size_t)((rh >> 10) + ((k >> 4) & 0xfff)) & m;
}
static inline void s_lock(struct stripe *s) {
  while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
    sched_yield();
}
static inline void s_unlock(struct stripe *s) {
  atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

static bool s_grow(struct stripe *s) {
  size_t ncap = s->cap ? s->cap * 2 : 512;
  struct ent *ne = os_alloc(ncap * sizeof *ne);
  if (!ne) return false;
  for (size_t i = 0; i < s->cap; i++) {
    uint64_t k = s->e[i].key;
    if (!k) continue;
    size_t j = home_of(k, region_hash(k), ncap - 1);
    while (ne[j].key) j = (j + 1) & (ncap - 1);
    ne[j] = s->e[i];
  }
  if (s->e) munmap(s->e, s->cap * sizeof *s->e);
  s->e = ne; s->cap = ncap;
  return true;
}

static void map_insert(const void *p, uint64_t seq, uint64_t size) {
  uint64_t k = (uint64_t)(uintptr_t)p, rh = region_hash(k);
  struct stripe *s = &g_map[rh & (NSTRIPE - 1)];
  s_lock(s);
  if ((s->cnt + 1) * 2 > s->cap && !s_grow(s)) { s_unlock(s); return; }
  size_t m = s->cap - 1, i = home_of(k, rh, m);
  while (s->e[i].key && s->e[i].key != k) i = (i + 1) & m;
  if (!s->e[i].key) s->cnt++;
  s->e[i].key = k; s->e[i].val = seq; s->e[i].size = size;
  s_unlock(s);
}

/* returns the seq of the allocation at p and forgets it; 0 if unknown */
static uint64_t map_remove(const void *p, uint64_t *size) {
  uint64_t k = (uint64_t)(uintptr_t)p, rh = region_hash(k);
  struct stripe *s = &g_map[rh & (NSTRIPE - 1)];
  s_lock(s);
  if (!s->cap) { s_unlock(s); return 0; }
  size_t m = s->cap - 1, i = home_of(k, rh, m);
  while (s->e[i].key && s->e[i].key != k) i = (i + 1) & m;
  if (!s->e[i].key) { s_unlock(s); return 0; }
  uint64_t v = s->e[i].val;
  *size = s->e[i].size;
  /* backward-shift deletion */
  size_t j = i;
  for (;;) {
    j = (j + 1) & m;
    uint64_t kj = s->e[j].key;
    if (!kj) break;
    size_t home = home_of(kj, region_hash(kj), m);
    /* the entry at j may move to the hole at i unless its home lies in (i, j] */
    bool stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    s->e[i] = s->e[j];
    i = j;
  }
  s->e[i].key = 0;
  s->cnt--;
  s_unlock(s);
  return v;
}

/* ---------------------------------------------------------------- the recording path */
static inline unsigned log2_ceil(size_t a) {
  if (a <= 1) return 0;
  return 64u - (unsigned)__builtin_clzll((unsigned long long)(a - 1));
}

static void record(struct tstate *t, unsigned op, unsigned alog, uint64_t size, uint64_t ref,
                   uint64_t oldsize, const void *newp) {
  /* The in_rec store is ordered before the fetch_add (a release RMW). If our
     fetch_add precedes trace_finish()'s in g_seq's modification order, that
     acq_rel RMW synchronises with ours, so finish sees in_rec = 1 and waits;
     otherwise our fetch_add returns a value with STOP_BIT and we drop the
     record. So a record is either complete before the flush or not made. */
  atomic_store_explicit(&t->in_rec, 1, memory_order_relaxed);
  uint64_t seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_acq_rel);
  if (UNLIKELY(seq & STOP_BIT)) {
    atomic_store_explicit(&t->in_rec, 0, memory_order_release);
    return;
  }
  struct rawrec *r = &t->buf[t->n++];
  r->seq = seq; r->tid = t->tid;
  r->ref = ref; r->op = op; r->alog = alog;
  r->size = size; r->oldsize = oldsize;
  if (newp) map_insert(newp, seq, size);
  if (UNLIKELY(t->n == BUF_RECS)) flush_ts(t);
  atomic_store_explicit(&t->in_rec, 0, memory_order_release);
}

static inline void record_alloc(unsigned op, unsigned alog, size_t size, void *p) {
  if (!p) return;
  struct tstate *t = get_ts();
  if (t) record(t, op, alog, size, 0, 0, p);
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
    uint64_t osz = 0, ref = map_remove(p, &osz);
    if (ref) record(t, LTR_FREE, 0, 0, ref, osz, NULL);
    else atomic_fetch_add_explicit(&g_unknown_frees, 1, memory_order_relaxed);
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
  uint64_t osz = 0, ref = (t && p) ? map_remove(p, &osz) : 0;
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
    if (p && n == 0) { if (ref) record(t, LTR_FREE, 0, 0, ref, osz, NULL); }
    else if (p && ref) map_insert(p, ref, osz); /* failed: the old block is still live */
    return q;
  }
  record(t, op, 0, n, ref, osz, q);
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
  pthread_atfork(NULL, NULL, atfork_child);
  atomic_store(&g_recording, true);
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

static void trace_finish(void) {
  if (!atomic_load(&g_recording) || getpid() != g_pid) return;
  static atomic_flag once = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&once)) return;
  tl_busy = 1; /* this thread records nothing from now on */
  struct timespec ts0, ts1;
  clock_gettime(CLOCK_MONOTONIC, &ts0);
  uint64_t maxseq = atomic_fetch_add_explicit(&g_seq, STOP_BIT, memory_order_acq_rel);
  pthread_mutex_lock(&g_reg_mtx);
  for (struct tstate *t = g_threads; t; t = t->next) {
    /* wait for a record in progress (bounded: a thread may be stuck forever) */
    for (int i = 0; i < 100000 && atomic_load_explicit(&t->in_rec, memory_order_acquire); i++)
      sched_yield();
    flush_ts(t);
  }
  pthread_mutex_unlock(&g_reg_mtx);
  atomic_store(&g_recording, false);

  off_t bytes = lseek(g_spool_fd, 0, SEEK_END);
  if (bytes < 0) { say("spool file lost (the program closed its descriptor?): ", g_spool_path); return; }
  size_t nraw = (size_t)bytes / sizeof(struct rawrec);
  struct rawrec *raw = NULL;
  uint32_t *pos = NULL; /* pos[seq] = 1 + index in raw, 0 = missing */
  if (nraw) {
    raw = mmap(NULL, nraw * sizeof *raw, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
               g_spool_fd, 0);
    if (raw == MAP_FAILED) { say("cannot map spool ", g_spool_path); return; }
  }
  if (maxseq >= UINT32_MAX) { say("too many records (over 4 billion) for ", g_out_path); return; }
  pos = os_alloc((maxseq + 1) * sizeof *pos);
  if (!pos) { say("out of memory merging ", g_spool_path); return; }
  for (size_t i = 0; i < nraw; i++)
    if (raw[i].seq && raw[i].seq <= maxseq) pos[raw[i].seq] = (uint32_t)(i + 1);

  /* pass 1: number the records we keep: kid[seq] = record index + 1 */
  uint32_t *kid = os_alloc((maxseq + 1) * sizeof *kid);
  if (!kid) { say("out of memory merging ", g_spool_path); return; }
  uint64_t k = 0, dropped = 0;
  for (uint64_t s = 1; s <= maxseq; s++) {
    if (!pos[s]) continue;
    struct rawrec *r = &raw[pos[s] - 1];
    if (r->ref && (r->ref >= s || !kid[r->ref])) { /* cannot happen; be safe */
      if (r->op == LTR_FREE) { r->op = 0; dropped++; continue; }
      r->ref = 0; r->oldsize = 0;
    }
    kid[s] = (uint32_t)++k;
  }
  /* pass 2: encode */
  struct obuf o = { .fd = -1, .fnv = LTR_FNV64_INIT };
  o.b = os_alloc(OBUF_CAP);
  o.fd = open(g_out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (o.fd < 0 || !o.b) { say("cannot create trace file ", g_out_path); return; }
  struct ltr_header h;
  memset(&h, 0, sizeof h);
  write_all(o.fd, &h, sizeof h); /* placeholder */
  unsigned cur_tid = 0, max_tid = 0;
  uint64_t live = 0, peak = 0;
  for (uint64_t s = 1; s <= maxseq; s++) {
    if (!pos[s]) continue;
    struct rawrec *r = &raw[pos[s] - 1];
    if (r->op == 0) continue;
    ob_reserve(&o);
    unsigned tid = r->tid, op = r->op;
    unsigned tag = op;
    if (tid != cur_tid) tag |= LTR_TAG_THREAD;
    o.b[o.n++] = (unsigned char)tag;
    if (tid != cur_tid) { o.n += ltr_put_varint(o.b + o.n, tid); cur_tid = tid; }
    if (tid > max_tid) max_tid = tid;
    uint64_t back = r->ref ? kid[s] - kid[r->ref] : 0;
    if (op == LTR_FREE) {
      o.n += ltr_put_varint(o.b + o.n, back);
      live -= r->oldsize;
    } else if (ltr_op_is_realloc(op)) {
      o.n += ltr_put_varint(o.b + o.n, back);
      o.n += ltr_put_varint(o.b + o.n, r->size);
      live += r->size - r->oldsize;
    } else {
      if (ltr_op_is_aligned(op)) o.b[o.n++] = (unsigned char)r->alog;
      o.n += ltr_put_varint(o.b + o.n, r->size);
      live += r->size;
    }
    if (live > peak) peak = live;
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
  if (raw) munmap(raw, nraw * sizeof *raw);
  munmap(pos, (maxseq + 1) * sizeof *pos);
  munmap(kid, (maxseq + 1) * sizeof *kid);
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
    at = num_cat(msg, sizeof msg, at,
                 (unsigned long)(atomic_load(&g_unknown_frees) + dropped));
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    at = str_cat(msg, sizeof msg, at, ", merge ");
    at = num_cat(msg, sizeof msg, at,
                 (unsigned long)((ts1.tv_sec - ts0.tv_sec) * 1000 + (ts1.tv_nsec - ts0.tv_nsec) / 1000000));
    at = str_cat(msg, sizeof msg, at, " ms -> ");
    say(msg, g_out_path);
  }
}
