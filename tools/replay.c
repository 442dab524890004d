/* SPDX-License-Identifier: MIT */
/* lithe-replay -- replays a lithe trace (docs/trace-format.md) against the
 * allocator of this process (choose it with LD_PRELOAD).
 *
 *   lithe-replay TRACE[.xz] [--threads|--serial] [--runs N] [--no-warmup]
 *                [--format=gobench] [--quick] [--verify] [--verify-min-size N] [--info]
 *                [--pause-ms MS] [--keep-leftovers]
 *
 * Memory at end (tools/memend.h): `unassisted-end-kB` after a pause longer
 * than lithe's purge delay with nothing called, then `end-kB` after the
 * allocator's own forcing release. --keep-leftovers: the last run does not
 * free what the trace left live, so the end figures carry the program's
 * leftovers (reported in bytes beside them) and show fragmentation around
 * them.
 *
 * Replay rules (docs/trace-format.md, "Replay"):
 *  - default (--threads): one replay thread per recorded thread (recorded
 *    thread 0 runs on the main thread); each executes its own records in
 *    recorded order. A record that frees / reallocates an object waits until
 *    the object's allocation has been performed (per-object happens-before:
 *    the slot's generation number is published with a release store and
 *    awaited with acquire loads). Waits always point to an earlier record, so the replay
 *    cannot deadlock. --serial replays every record on one thread in order.
 *  - Thread lifetimes (version 2): a thread with a thread_start record is
 *    created by its creator's replay thread at that record and exits after
 *    its thread_exit record; threads without one run for the whole replay.
 *  - Memory touching: like MallocBench's interpreter, every byte an
 *    allocation hands out is written once (memset) right after the call;
 *    realloc writes only the bytes it added beyond the old size.
 *  - All of the replayer's own bookkeeping (the decompressed trace, the
 *    per-thread op arrays, the slot table) lives in memfd-backed shared
 *    mappings: it never goes through malloc and counts as RssShmem, which the
 *    memory figures subtract, so only the allocator's heap is measured.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memend.h"
#include "trace-format.h"

static const char *g_prog = "lithe-replay";
static const char *g_file;

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: %s: ", g_prog, g_file ? g_file : "");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

/* ------------------------------------------------------------ bookkeeping memory */
/* memfd-backed MAP_SHARED: shmem pages, outside malloc and outside RssAnon. */
static void *bk_alloc(size_t n) {
  if (!n) n = 1;
  n = (n + 4095) & ~(size_t)4095;
  int fd = memfd_create("lithe-replay", MFD_CLOEXEC);
  void *p = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, (off_t)n) == 0)
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (fd >= 0) close(fd);
  if (p == MAP_FAILED)
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) die("out of memory for %zu bytes of bookkeeping", n);
  return p;
}

/* Temporaries of the decoder: unmapped before the replay when the peak can be
   reset (clear_refs), so the replayer keeps only what the replay uses. */
static struct { void *p; size_t n; } g_temps[16];
static int g_ntemps;
static void *bk_temp(size_t n) {
  void *p = bk_alloc(n);
  if (g_ntemps < 16) { g_temps[g_ntemps].p = p; g_temps[g_ntemps].n = n ? n : 1; g_ntemps++; }
  return p;
}
static uint64_t bk_release_temps(void) {
  uint64_t total = 0;
  for (int i = 0; i < g_ntemps; i++) {
    size_t n = (g_temps[i].n + 4095) & ~(size_t)4095;
    munmap(g_temps[i].p, n);
    total += n;
  }
  g_ntemps = 0;
  return total;
}

/* ------------------------------------------------------------ loading */
struct blob { const unsigned char *p; size_t n; };

static struct blob load_file(const char *path) {
  struct blob b = { 0, 0 };
  size_t len = strlen(path);
  bool xz = len > 3 && strcmp(path + len - 3, ".xz") == 0;
  int fd;
  if (xz) {
    if (access(path, R_OK) != 0) die("cannot open: %s", strerror(errno));
    fd = memfd_create("lithe-replay-trace", MFD_CLOEXEC);
    if (fd < 0) die("memfd_create: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
      dup2(fd, 1);
      execlp("xz", "xz", "-dc", "--", path, (char *)NULL);
      fprintf(stderr, "%s: cannot run xz (apt-get install xz-utils): %s\n", g_prog, strerror(errno));
      _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      die("xz -dc failed (corrupt or truncated .xz file, or xz missing)");
  } else {
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open: %s", strerror(errno));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) die("fstat: %s", strerror(errno));
  b.n = (size_t)sb.st_size;
  if (b.n) {
    void *m = mmap(NULL, b.n, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) die("mmap: %s", strerror(errno));
    b.p = m;
  }
  close(fd);
  return b;
}

/* ------------------------------------------------------------ decoded form */
/* One operation of one replay thread, 16 bytes:
   w = size (44 bits) | op << 44 | alog << 48 | HASREF. */
struct rop {
  uint64_t w;
  uint32_t slot;
  uint32_t wait;        /* generation the slot must reach first (cross-thread), 0: none */
};
#define ROP_SIZE(w) ((w) & ((1ull << 44) - 1))
#define ROP_OP(w) ((unsigned)((w) >> 44) & 15u)
#define ROP_ALOG(w) ((unsigned)((w) >> 48) & 63u)
#define ROP_HASREF (1ull << 54)
/* A slot holds one object at a time. gen counts the objects published in it
   during this run; only one thread at a time writes a slot (the producer of
   its current object, then that object's consumer), so gen++ is race-free. */
struct slot {
  void *ptr;
  uint64_t size;
  _Atomic uint32_t gen;
  uint32_t pad;
};

struct trace {
  struct ltr_header h;
  uint64_t nrec;          /* records replayed (<= h.record_count with --quick) */
  unsigned nthreads;      /* replay threads */
  struct rop **ops;       /* per replay thread */
  uint64_t *nops;
  uint64_t nslots;
  struct slot *slots;
  uint64_t peak_live, end_live;          /* in record order */
  uint64_t peak_live_min, end_live_min;  /* same, objects >= verify_min_size only */
  uint64_t ops_min;                      /* records touching objects >= min size */
  uint64_t cross;                        /* frees/reallocs of another thread's object */
  uint64_t opcount[LTR_NOPS];
  uint64_t bk_bytes;
  /* version 2: thread lifetimes, per recorded thread */
  unsigned char *started; /* a thread_start record creates it (else it runs for the whole replay) */
  unsigned char *exits;   /* it ends with a thread_exit record */
  unsigned nstarted;
};

static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static void parse_header(struct blob b, struct ltr_header *h) {
  if (b.n < LTR_HEADER_SIZE) die("not a lithe trace: file too short (%zu bytes)", b.n);
  if (memcmp(b.p, LTR_MAGIC, 8) != 0) die("not a lithe trace: bad magic");
  memcpy(h->magic, b.p, 8);
  h->version = rd32(b.p + 8);
  h->header_size = rd32(b.p + 12);
  h->record_count = rd64(b.p + 16);
  h->payload_bytes = rd64(b.p + 24);
  h->thread_count = rd32(b.p + 32);
  h->flags = rd32(b.p + 36);
  h->payload_fnv = rd64(b.p + 40);
  h->peak_live_bytes = rd64(b.p + 48);
  h->pid = rd32(b.p + 56);
  h->header_fnv = rd32(b.p + 60);
  if (h->version < LTR_VERSION_MIN || h->version > LTR_VERSION)
    die("unsupported trace version %u (this replayer reads versions %u to %u)", h->version,
        LTR_VERSION_MIN, LTR_VERSION);
  if (h->header_fnv != ltr_fnv32(b.p, 60)) die("corrupt trace: header checksum mismatch");
  if (h->header_size != LTR_HEADER_SIZE) die("corrupt trace: header size %u", h->header_size);
  if (h->flags != 0) die("corrupt trace: unknown flags 0x%x", h->flags);
  if (b.n - LTR_HEADER_SIZE < h->payload_bytes)
    die("truncated trace: header says %" PRIu64 " payload bytes, file has %zu", h->payload_bytes,
        b.n - LTR_HEADER_SIZE);
  if (b.n - LTR_HEADER_SIZE > h->payload_bytes)
    die("corrupt trace: %zu bytes of trailing data", (size_t)(b.n - LTR_HEADER_SIZE - h->payload_bytes));
  if (h->record_count > h->payload_bytes / 2)
    die("corrupt trace: %" PRIu64 " records cannot fit in %" PRIu64 " bytes", h->record_count,
        h->payload_bytes);
  if (h->thread_count > LTR_MAX_THREADS || (h->record_count && !h->thread_count))
    die("corrupt trace: thread count %u", h->thread_count);
  if (ltr_fnv64(LTR_FNV64_INIT, b.p + LTR_HEADER_SIZE, h->payload_bytes) != h->payload_fnv)
    die("corrupt trace: payload checksum mismatch");
}

struct rec { unsigned op, alog, tid; uint64_t size, back; unsigned child; };

/* decode one record at *at; dies on any inconsistency */
static void next_rec(const unsigned char *p, size_t n, size_t *at, unsigned *cur_tid, uint64_t idx,
                     unsigned nthreads, unsigned maxop, struct rec *r) {
  size_t k;
  uint64_t v;
  if (*at >= n) die("corrupt trace: payload ends at record %" PRIu64, idx);
  unsigned tag = p[(*at)++];
  if (tag & LTR_TAG_RESERVED) die("corrupt trace: record %" PRIu64 ": bad tag 0x%02x", idx, tag);
  r->op = tag & LTR_TAG_OP_MASK;
  if (r->op < LTR_MALLOC || r->op > maxop)
    die("corrupt trace: record %" PRIu64 ": unknown operation %u", idx, r->op);
  if (tag & LTR_TAG_THREAD) {
    if (!(k = ltr_get_varint(p + *at, n - *at, &v)))
      die("corrupt trace: record %" PRIu64 ": bad thread id", idx);
    *at += k;
    if (v >= nthreads)
      die("corrupt trace: record %" PRIu64 ": thread %" PRIu64 " >= thread count %u", idx, v, nthreads);
    *cur_tid = (unsigned)v;
  }
  r->tid = *cur_tid;
  r->alog = 0; r->size = 0; r->back = 0; r->child = 0;
  if (r->op == LTR_THREAD_EXIT) return;
  if (r->op == LTR_THREAD_START) {
    if (!(k = ltr_get_varint(p + *at, n - *at, &v)))
      die("corrupt trace: record %" PRIu64 ": bad thread id", idx);
    *at += k;
    if (v >= nthreads || v <= r->tid)
      die("corrupt trace: record %" PRIu64 ": thread %u starts thread %" PRIu64
          " (must be above its creator and below the thread count %u)", idx, r->tid, v, nthreads);
    r->child = (unsigned)v;
    return;
  }
  if (r->op == LTR_FREE || ltr_op_is_realloc(r->op)) {
    if (!(k = ltr_get_varint(p + *at, n - *at, &r->back)))
      die("corrupt trace: record %" PRIu64 ": bad reference", idx);
    *at += k;
    if (r->back > idx || (r->op == LTR_FREE && r->back == 0))
      die("corrupt trace: record %" PRIu64 ": reference %" PRIu64 " back is out of range", idx, r->back);
  }
  if (ltr_op_is_aligned(r->op)) {
    if (*at >= n) die("corrupt trace: record %" PRIu64 ": truncated", idx);
    r->alog = p[(*at)++];
    if (r->alog > 40) die("corrupt trace: record %" PRIu64 ": alignment 2^%u", idx, r->alog);
  }
  if (r->op != LTR_FREE) {
    if (!(k = ltr_get_varint(p + *at, n - *at, &r->size)))
      die("corrupt trace: record %" PRIu64 ": bad size", idx);
    *at += k;
    if (r->size > LTR_MAX_SIZE)
      die("corrupt trace: record %" PRIu64 ": size %" PRIu64 " is implausible", idx, r->size);
  }
}

static void decode(struct blob b, struct trace *t, bool serial, uint64_t limit, uint64_t min_size) {
  parse_header(b, &t->h);
  const unsigned char *p = b.p + LTR_HEADER_SIZE;
  size_t n = t->h.payload_bytes;
  uint64_t nrec = t->h.record_count;
  unsigned nthr_rec = t->h.thread_count ? t->h.thread_count : 1;
  t->nthreads = serial ? 1 : nthr_rec;
  t->nrec = nrec < limit ? nrec : limit;

  /* temporaries: obj_slot[record] and alive bitmap (record -> object still live) */
  uint32_t *obj_slot = bk_temp(t->nrec * sizeof(uint32_t) + 8);
  uint16_t *obj_thr = bk_temp(t->nrec * sizeof(uint16_t) + 8);
  uint64_t *alive = bk_temp((t->nrec / 64 + 1) * 8);
  uint64_t *cnt = bk_temp(nthr_rec * sizeof(uint64_t));
  uint32_t *obj_gen = bk_temp(t->nrec * sizeof(uint32_t) + 8);
  unsigned char *state = bk_temp(nthr_rec); /* 0: no record yet, 1: running, 2: exited */
  unsigned maxop = ltr_max_op(t->h.version);
  t->started = bk_alloc(nthr_rec);
  t->exits = bk_alloc(nthr_rec);
  if (t->nrec >= UINT32_MAX) die("too many records (%" PRIu64 ") for this replayer", t->nrec);

  /* pass 1: validate the whole payload, count records per replay thread */
  size_t at = 0;
  unsigned cur = 0;
  uint64_t nalloc = 0;
  struct rec r;
  for (uint64_t i = 0; i < nrec; i++) {
    next_rec(p, n, &at, &cur, i, nthr_rec, maxop, &r);
    if (state[r.tid] == 2)
      die("corrupt trace: record %" PRIu64 ": thread %u has exited", i, r.tid);
    state[r.tid] = r.op == LTR_THREAD_EXIT ? 2 : 1;
    if (r.op == LTR_THREAD_START) {
      if (state[r.child] || t->started[r.child])
        die("corrupt trace: record %" PRIu64 ": thread %u started after it ran", i, r.child);
      t->started[r.child] = 1;
      t->nstarted++;
    }
    if (r.op == LTR_THREAD_EXIT) t->exits[r.tid] = 1;
    if (r.back) {
      uint64_t ref = i - r.back;
      if (i < t->nrec && !(alive[ref / 64] >> (ref % 64) & 1))
        die("corrupt trace: record %" PRIu64 " (%s) refers to record %" PRIu64
            ", which is not a live allocation", i, ltr_op_names[r.op], ref);
      if (i < t->nrec) alive[ref / 64] &= ~(1ull << (ref % 64));
    }
    if (i < t->nrec) {
      if (ltr_op_allocates(r.op)) { alive[i / 64] |= 1ull << (i % 64); nalloc++; }
      cnt[serial ? 0 : r.tid]++;
      t->opcount[r.op]++;
    }
  }
  if (at != n) die("corrupt trace: %zu bytes left after %" PRIu64 " records", n - at, nrec);

  /* pass 2: build per-thread op arrays and assign slots. A slot freed by
     thread U goes to U's free list: only U reuses it, after its own free in
     its own program order, so reuse needs no extra synchronisation. */
  t->ops = bk_alloc(t->nthreads * sizeof *t->ops);
  t->nops = bk_alloc(t->nthreads * sizeof *t->nops);
  struct rop *all = bk_alloc(t->nrec * sizeof(struct rop));
  t->bk_bytes += t->nrec * sizeof(struct rop);
  uint64_t off = 0;
  for (unsigned i = 0; i < t->nthreads; i++) { t->ops[i] = all + off; off += cnt[i]; }
  uint32_t *slot_next = bk_temp((nalloc + 1) * sizeof(uint32_t));
  uint64_t *slot_size = bk_temp((nalloc + 1) * sizeof(uint64_t));
  uint32_t *free_head = bk_temp(t->nthreads * sizeof(uint32_t)); /* slot+1, 0 = empty */
  uint32_t *slot_gen = bk_temp((nalloc + 1) * sizeof(uint32_t));
  uint64_t nslots = 0, live = 0, live_min = 0;
  at = 0; cur = 0;
  for (uint64_t i = 0; i < t->nrec; i++) {
    next_rec(p, n, &at, &cur, i, nthr_rec, maxop, &r);
    unsigned th = serial ? 0 : r.tid;
    struct rop *o = &t->ops[th][t->nops[th]++];
    o->w = r.size | (uint64_t)r.op << 44 | (uint64_t)r.alog << 48;
    o->wait = 0;
    o->slot = r.child; /* thread_start: the thread to create */
    uint64_t old = 0;
    bool counted = false;
    if (r.back) {
      uint64_t ref = i - r.back;
      uint32_t s = obj_slot[ref];
      o->slot = s;
      o->w |= ROP_HASREF;
      if (obj_thr[ref] != r.tid) {
        t->cross++;
        if (!serial) o->wait = obj_gen[ref]; /* same thread: program order suffices */
      }
      old = slot_size[s];
      live -= old;
      if (old >= min_size) { live_min -= old; counted = true; }
      if (r.op == LTR_FREE) { slot_next[s] = free_head[th]; free_head[th] = s + 1; }
      else obj_slot[i] = s; /* realloc: the new block lives in the same slot */
    } else if (ltr_op_allocates(r.op)) {
      uint32_t s;
      if (free_head[th]) { s = free_head[th] - 1; free_head[th] = slot_next[s] ; }
      else s = (uint32_t)nslots++;
      o->slot = s; obj_slot[i] = s;
    }
    if (ltr_op_allocates(r.op)) {
      obj_thr[i] = (uint16_t)r.tid;
      obj_gen[i] = ++slot_gen[o->slot];
      slot_size[o->slot] = r.size;
      live += r.size;
      if (r.size >= min_size) { live_min += r.size; counted = true; }
    }
    if (counted) t->ops_min++;
    if (live > t->peak_live) t->peak_live = live;
    if (live_min > t->peak_live_min) t->peak_live_min = live_min;
  }
  t->end_live = live; t->end_live_min = live_min;
  t->nslots = nslots;
  t->slots = bk_alloc((nslots + 1) * sizeof(struct slot));
  t->bk_bytes += (nslots + 1) * sizeof(struct slot);
}

/* ------------------------------------------------------------ execution */
static volatile unsigned char g_fill = 0xa5;

static inline void touch(void *p, size_t n) {
  if (p && n) memset(p, g_fill, n);
}
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
static inline void await(struct slot *s, uint32_t want, uint64_t *waits) {
  if (atomic_load_explicit(&s->gen, memory_order_acquire) >= want) return;
  (*waits)++;
  for (unsigned spins = 0; atomic_load_explicit(&s->gen, memory_order_acquire) < want; spins++) {
    if (spins < 200) cpu_relax();
    else sched_yield();
  }
}
static inline void publish(struct slot *s, void *p, uint64_t size) {
  s->ptr = p;
  s->size = size;
  uint32_t g = atomic_load_explicit(&s->gen, memory_order_relaxed);
  atomic_store_explicit(&s->gen, g + 1, memory_order_release);
}

struct tctx {
  struct trace *t;
  unsigned id;
  uint64_t waits, done;
  pthread_t th;
  _Atomic int spawned, finished; /* run number + 1 of the last run that did it */
};

/* Thread lifetimes (version 2, --threads): a recorded thread with a
   thread_start record is created by its creator's replay thread when that
   one reaches the record, and exits after its last record if that is a
   thread_exit (it really exits: the allocator's thread teardown runs there);
   without one (it was still running when the program ended) it waits for
   the end of the run. The main thread joins them all at the end of a run. */
static struct tctx *g_ctx;
static int g_run;
static pthread_mutex_t g_run_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_run_cv = PTHREAD_COND_INITIALIZER;
static int g_run_over = -1; /* the last run whose lingering threads may end */
static void play(struct trace *t, unsigned th, struct tctx *c);

static void *lifetime_thread(void *arg) {
  struct tctx *c = arg;
  int run = g_run;
  play(c->t, c->id, c);
  atomic_store_explicit(&c->finished, run + 1, memory_order_release);
  if (!c->t->exits[c->id]) {
    pthread_mutex_lock(&g_run_mtx);
    while (g_run_over < run) pthread_cond_wait(&g_run_cv, &g_run_mtx);
    pthread_mutex_unlock(&g_run_mtx);
  }
  return NULL;
}

static void spawn(unsigned child) {
  struct tctx *c = &g_ctx[child];
  if (pthread_create(&c->th, NULL, lifetime_thread, c) != 0)
    die("cannot create replay thread %u", child);
  atomic_store_explicit(&c->spawned, g_run + 1, memory_order_release);
}

static inline void await_flag(_Atomic int *f, int want) {
  while (atomic_load_explicit(f, memory_order_acquire) != want) sched_yield();
}

/* main thread, after its own records: join every thread created in this run.
   A creator has a lower id than its child, so in id order each thread has
   been created by the time it is looked at. */
static void join_lifetimes(struct trace *t) {
  if (!t->nstarted) return;
  for (unsigned i = 1; i < t->nthreads; i++) {
    if (!t->started[i]) continue;
    await_flag(&g_ctx[i].spawned, g_run + 1);
    if (t->exits[i]) pthread_join(g_ctx[i].th, NULL);
    else await_flag(&g_ctx[i].finished, g_run + 1);
  }
  pthread_mutex_lock(&g_run_mtx);
  g_run_over = g_run;
  pthread_cond_broadcast(&g_run_cv);
  pthread_mutex_unlock(&g_run_mtx);
  for (unsigned i = 1; i < t->nthreads; i++)
    if (t->started[i] && !t->exits[i]) pthread_join(g_ctx[i].th, NULL);
}

static void play(struct trace *t, unsigned th, struct tctx *c) {
  struct rop *o = t->ops[th], *end = o + t->nops[th];
  struct slot *slots = t->slots;
  uint64_t waits = 0;
  for (; o < end; o++) {
    uint64_t w = o->w, size = ROP_SIZE(w);
    struct slot *s = &slots[ROP_OP(w) == LTR_THREAD_START ? 0 : o->slot];
    void *p;
    if (o->wait) await(s, o->wait, &waits);
    switch (ROP_OP(w)) {
    case LTR_MALLOC:
      p = malloc(size);
      touch(p, size);
      publish(s, p, size);
      break;
    case LTR_CALLOC:
      p = calloc(1, size);
      touch(p, size);
      publish(s, p, size);
      break;
    case LTR_FREE:
      free(s->ptr);
      s->ptr = NULL;
      break;
    case LTR_THREAD_START:
      if (t->nthreads > 1) spawn(o->slot); /* --serial: nothing to create */
      break;
    case LTR_THREAD_EXIT: /* the last record of its thread */
      break;
    case LTR_REALLOC:
    case LTR_REALLOCARRAY: {
      void *old = NULL;
      uint64_t oldsize = 0;
      if (w & ROP_HASREF) { old = s->ptr; oldsize = s->size; }
      p = realloc(old, size);
      if (p && size > oldsize) touch((char *)p + oldsize, size - oldsize);
      /* a failed realloc leaves the old block allocated and unreachable
         (leaked), as it would be in the program */
      publish(s, p, size);
      break;
    }
    default: { /* every aligned family call is replayed as posix_memalign */
      size_t align = (size_t)1 << ROP_ALOG(w);
      if (align < sizeof(void *)) align = sizeof(void *);
      if (posix_memalign(&p, align, size) != 0) p = NULL;
      touch(p, size);
      publish(s, p, size);
      break;
    }
    }
  }
  c->waits += waits;
  c->done += t->nops[th];
}

static pthread_barrier_t g_start, g_stop;
static int g_total_runs;

static void *helper(void *arg) {
  struct tctx *c = arg;
  for (int run = 0; run < g_total_runs; run++) {
    pthread_barrier_wait(&g_start);
    play(c->t, c->id, c);
    pthread_barrier_wait(&g_stop);
  }
  return NULL;
}

/* ------------------------------------------------------------ measuring */
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct memstat { long hwm, rss_anon, rss_file, rss_shmem, rss; };
static struct memstat read_status(void) {
  struct memstat m = { -1, -1, -1, -1, -1 };
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return m;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return m;
  buf[n] = 0;
  struct { const char *k; long *v; } keys[] = {
    { "VmHWM:", &m.hwm }, { "RssAnon:", &m.rss_anon }, { "RssFile:", &m.rss_file },
    { "RssShmem:", &m.rss_shmem }, { "VmRSS:", &m.rss },
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char *q = strstr(buf, keys[i].k);
    if (q) *keys[i].v = strtol(q + strlen(keys[i].k), NULL, 10);
  }
  return m;
}

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static void free_leftovers(struct trace *t) {
  for (uint64_t i = 0; i < t->nslots; i++)
    if (t->slots[i].ptr) { free(t->slots[i].ptr); t->slots[i].ptr = NULL; }
}

static uint64_t live_in_slots(struct trace *t, uint64_t min_size, uint64_t *objs) {
  uint64_t sum = 0;
  *objs = 0;
  for (uint64_t i = 0; i < t->nslots; i++)
    if (t->slots[i].ptr && t->slots[i].size >= min_size) { sum += t->slots[i].size; (*objs)++; }
  return sum;
}

static void usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: %s TRACE[.xz] [--threads|--serial] [--runs N] [--no-warmup] [--format=gobench]\n"
          "       [--quick] [--verify] [--verify-min-size BYTES] [--info] [--pause-ms MS]\n"
          "       [--keep-leftovers]\n"
          "Replays a lithe allocation trace against this process's allocator (LD_PRELOAD).\n",
          g_prog);
  exit(rc);
}

static const char *trace_name(const char *path, char *buf, size_t cap) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(buf, cap, "%s", b);
  size_t n = strlen(buf);
  const char *sfx[] = { ".xz", ".ltrace" };
  for (int i = 0; i < 2; i++) {
    size_t k = strlen(sfx[i]);
    if (n > k && strcmp(buf + n - k, sfx[i]) == 0) { buf[n - k] = 0; n -= k; }
  }
  /* Go benchmark names: "-N" at the end means a thread count, spaces split */
  for (char *c = buf; *c; c++)
    if (*c == '-' || *c == ' ' || *c == '\t') *c = '_';
  return buf;
}

int main(int argc, char **argv) {
  int runs = 8;
  long pause_ms = -1;
  bool keep_leftovers = false;
  bool gobench = false, quick = false, verify = false, info = false, serial = false, warmup = true;
  uint64_t min_size = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strncmp(a, "--runs=", 7)) runs = atoi(a + 7);
    else if (!strcmp(a, "--format=gobench")) gobench = true;
    else if (!strcmp(a, "--quick")) quick = true;
    else if (!strcmp(a, "--verify")) verify = true;
    else if (!strcmp(a, "--verify-min-size") && i + 1 < argc) { min_size = strtoull(argv[++i], NULL, 10); verify = true; }
    else if (!strcmp(a, "--info")) info = true;
    else if (!strcmp(a, "--threads") || !strcmp(a, "--use-thread-id")) serial = false;
    else if (!strcmp(a, "--serial")) serial = true;
    else if (!strcmp(a, "--no-warmup")) warmup = false;
    else if (!strcmp(a, "--pause-ms") && i + 1 < argc) pause_ms = atol(argv[++i]);
    else if (!strcmp(a, "--keep-leftovers")) keep_leftovers = true;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage(0);
    else if (a[0] == '-') { fprintf(stderr, "%s: unknown option %s\n", g_prog, a); usage(2); }
    else if (!g_file) g_file = a;
    else usage(2);
  }
  if (!g_file) usage(2);
  if (runs < 0) runs = 0;
  uint64_t limit = UINT64_MAX;
  if (quick) { runs = 1; warmup = false; limit = 200000; }
  if (quick && pause_ms < 0 && !getenv("BENCH_PAUSE_MS"))
    pause_ms = 100; /* quick mode: not for claims */
  memend_init(); /* before the work: a failed dlsym allocates */

  struct blob b = load_file(g_file);
  if (b.n) { g_temps[g_ntemps].p = (void *)b.p; g_temps[g_ntemps].n = b.n; g_ntemps++; }
  static struct trace T;
  struct trace *t = &T;
  decode(b, t, serial, limit, min_size);
  char name[256];
  trace_name(g_file, name, sizeof name);

  if (info) {
    printf("trace %s: version %u, %" PRIu64 " records, %u threads, pid %u, payload %" PRIu64
           " bytes, peak live %" PRIu64 " bytes, live at end %" PRIu64 " bytes, slots %" PRIu64
           ", cross-thread frees/reallocs %" PRIu64 "\n",
           name, t->h.version, t->h.record_count, t->h.thread_count, t->h.pid, t->h.payload_bytes,
           t->peak_live, t->end_live, t->nslots, t->cross);
    for (int op = 1; op < LTR_NOPS; op++)
      if (t->opcount[op]) printf("  %-15s %" PRIu64 "\n", ltr_op_names[op], t->opcount[op]);
    return 0;
  }
  if (t->nrec == t->h.record_count && t->peak_live != t->h.peak_live_bytes)
    die("corrupt trace: peak live bytes %" PRIu64 " differ from the header's %" PRIu64,
        t->peak_live, t->h.peak_live_bytes);

  /* run the helper threads for the whole process; they wait at barriers */
  unsigned nth = t->nthreads;
  g_total_runs = runs + (warmup ? 1 : 0);
  struct tctx *ctx = bk_alloc(nth * sizeof *ctx);
  g_ctx = ctx;
  pthread_t *tids = bk_alloc(nth * sizeof *tids);
  /* helpers for the whole process only for recorded threads that have
     records and no recorded start (all threads of a version-1 trace) */
  unsigned active = 1;
  bool lifetimes = !serial && t->nstarted;
#define WHOLE_RUN(i) (t->nops[i] > 0 && !(lifetimes && t->started[i]))
  for (unsigned i = 1; i < nth; i++) active += WHOLE_RUN(i);
  pthread_barrier_init(&g_start, NULL, active);
  pthread_barrier_init(&g_stop, NULL, active);
  for (unsigned i = 0; i < nth; i++) { ctx[i].t = t; ctx[i].id = i; }
  for (unsigned i = 1; i < nth; i++)
    if (WHOLE_RUN(i) && pthread_create(&tids[i], NULL, helper, &ctx[i]) != 0)
      die("cannot create replay thread %u of %u", i, nth);

  /* Reset the high-water mark: loading is not part of the measurement. Only
     then may the decoder's temporaries go (otherwise the load-time peak, with
     them, would stay in VmHWM while RssShmem no longer subtracts them). */
  int cr = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  bool hwm_reset = false;
  if (cr >= 0) {
    bk_release_temps();
    hwm_reset = write(cr, "5", 1) == 1;
    close(cr);
  }

  double total_ns = 0;
  long faults = 0;
  uint64_t live_before_leftovers = 0, objs = 0, live_min = 0, objs_min = 0;
  uint64_t kept_bytes = 0, kept_objs = 0;
  for (int run = 0; run < g_total_runs; run++) {
    bool timed = !(warmup && run == 0);
    memset(t->slots, 0, (t->nslots + 1) * sizeof(struct slot));
    for (unsigned i = 0; i < nth; i++) ctx[i].done = 0;
    long f0 = minflt();
    g_run = run;
    double t0 = now_ns();
    if (active > 1) pthread_barrier_wait(&g_start);
    play(t, 0, &ctx[0]);
    if (active > 1) pthread_barrier_wait(&g_stop);
    if (lifetimes) join_lifetimes(t);
    double ta = now_ns();
    if (verify && run == g_total_runs - 1) { /* not timed */
      live_before_leftovers = live_in_slots(t, 0, &objs);
      live_min = live_in_slots(t, min_size, &objs_min);
    }
    double tb = now_ns();
    bool last = run == g_total_runs - 1;
    if (keep_leftovers && last) kept_bytes = live_in_slots(t, 0, &kept_objs);
    else free_leftovers(t);
    double t1 = now_ns();
    if (timed) { total_ns += (ta - t0) + (t1 - tb); faults += minflt() - f0; }
  }
  for (unsigned i = 1; i < nth; i++)
    if (WHOLE_RUN(i)) pthread_join(tids[i], NULL);

  /* Memory at end, the same two ways as bench-mallocbench (tools/memend.h):
     unassisted after a pause with nothing called, then after the
     allocator's own forcing release. */
  struct memstat m = read_status();
  long peak = m.hwm - (m.rss_file > 0 ? m.rss_file : 0) - (m.rss_shmem > 0 ? m.rss_shmem : 0);
  long pause = memend_pause_ms(pause_ms);
  if (pause > 0) memend_pause(pause);
  m = read_status();
  long idle_end = m.rss_anon >= 0 ? m.rss_anon : m.rss - m.rss_file - m.rss_shmem;
  const char *scav = memend_release();
  m = read_status();
  long end = m.rss_anon >= 0 ? m.rss_anon : m.rss - m.rss_file - m.rss_shmem;
  double ns = runs ? total_ns / runs : 0;
  long fpr = runs ? faults / runs : 0;

  char idlebuf[48];
  memend_print(scav, pause, idle_end, idlebuf, sizeof idlebuf);
  if (keep_leftovers)
    printf("# note: trace leftovers kept live: %" PRIu64 " bytes in %" PRIu64 " objects (%" PRIu64
           " kB)\n", kept_bytes, kept_objs, kept_bytes / 1024);
  if (verify) {
    uint64_t done = 0, waits = 0;
    for (unsigned i = 0; i < nth; i++) { done += ctx[i].done; waits += ctx[i].waits; }
    printf("# verify: records %" PRIu64 " replayed %" PRIu64 " threads %u cross-thread-ops %" PRIu64
           " cross-thread-waits %" PRIu64 "\n", t->h.record_count, done, active + (lifetimes ? t->nstarted : 0), t->cross, waits);
    printf("# verify: peak-live-bytes %" PRIu64 " end-live-bytes %" PRIu64 " replay-end-live-bytes %"
           PRIu64 " replay-end-live-objects %" PRIu64 "\n",
           t->peak_live, t->end_live, live_before_leftovers, objs);
    if (min_size)
      printf("# verify: min-size %" PRIu64 " ops %" PRIu64 " peak-live-bytes %" PRIu64
             " end-live-bytes %" PRIu64 " replay-end-live-bytes %" PRIu64 "\n",
             min_size, t->ops_min, t->peak_live_min, t->end_live_min, live_min);
    printf("# verify: ops");
    for (int op = 1; op < LTR_NOPS; op++)
      if (t->opcount[op]) printf(" %s=%" PRIu64, ltr_op_names[op], t->opcount[op]);
    printf("\n");
  }
  if (!hwm_reset) printf("# note: could not reset VmHWM (/proc/self/clear_refs): peak includes loading\n");
  printf("# note: %" PRIu64 " records, %u recorded threads, replayed %s; replayer bookkeeping %" PRIu64
         " kB (shmem, not counted)\n",
         t->nrec, t->h.thread_count, serial ? "serially" : "one thread per recorded thread",
         t->bk_bytes / 1024);
  if (gobench) {
    if (runs > 0)
      printf("Benchmarkreplay_%s%s %d %.0f ns/op %ld peak-kB %ld end-kB %ld faults%s\n",
             keep_leftovers ? "keep_" : "", name, runs, ns, peak, end, fpr, idlebuf);
    else
      printf("Benchmarkreplay_%s%s 1 %ld peak-kB %ld end-kB%s\n", keep_leftovers ? "keep_" : "",
             name, peak, end, idlebuf);
  } else {
    printf("Running replay_%s [ not parallel ] [ %s ] [ heap: 0MB ] [ runs: %d ]...\n", name,
           serial ? "don't use-thread-id" : "use-thread-id", runs);
    if (runs) printf("Time:\t%.3fms\n", ns / 1e6);
    else printf("Time:\tn/a\n");
    printf("Peak Memory:\t%ldkB\n", peak);
    printf("Memory at End:\t%ldkB\n", end);
    if (pause > 0) printf("Memory at End (unassisted):\t%ldkB\n", idle_end);
    printf("Minor Faults:\t%ld per run\n", fpr);
  }
  if (quick) printf("# note: --quick: first %" PRIu64 " records, one run (not for claims)\n", t->nrec);
  return 0;
}
