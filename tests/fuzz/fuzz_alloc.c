/* SPDX-License-Identifier: MIT */
/* fuzz_alloc.c — libFuzzer target for lithe's prefixed API.
 *
 * The input is a program: each operation is one opcode byte plus a few
 * argument bytes, over a table of NSLOTS slots.  Every live block is filled
 * with a pattern derived from (slot, size, a counter) over its whole usable
 * size (sparsely for blocks over 64 KiB: head, tail and a window every
 * stride), and checked before it is freed or reallocated; realloc must keep
 * the common prefix; calloc must give zeros; every pointer is checked for
 * alignment and usable size.  Live bytes stay under LIVE_MAX.  Everything is
 * freed at the end of each input and lithe's large / xlarge live counters
 * must be back where they started.  Any mismatch prints what and abort()s,
 * which libFuzzer reports as a crash (and saves the input).
 *
 * Built with -DFUZZ_THREADS: the operations are split over two threads,
 * each with half of the slots, and a block can be handed to the other
 * thread (a mailbox) which then checks, reallocates or frees it: remote
 * frees, and heaps of exited threads (one worker thread per input).
 *
 * The binary is linked with lithe's objects minus the standard malloc /
 * free / new / delete symbols (see CMakeLists.txt), so libFuzzer (and ASan)
 * keep their own allocator and only these calls reach lithe. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef FUZZ_THREADS
#include <pthread.h>
#endif
#include "lithe.h"

#define NSLOTS    64
#define KiB       ((size_t)1 << 10)
#define MiB       ((size_t)1 << 20)
#define LIVE_MAX  ((size_t)200 * MiB)   /* requested bytes live at once */
#define DENSE_MAX ((size_t)64 * KiB)    /* blocks up to this are filled whole */
#define COMMIT_MAX ((size_t)32 * MiB)   /* held after collect(true), nothing live */

typedef struct slot_s {
  unsigned char *p;
  size_t size;     /* requested */
  size_t usable;   /* lithe_malloc_usable_size at allocation */
  uint64_t seed;   /* pattern */
} slot_t;

typedef struct ctx_s {
  const uint8_t *d;
  size_t n, pos;
  slot_t *slots;   /* this context's slots */
  unsigned nslots;
  unsigned id;     /* slot index base, for the pattern and messages */
  uint64_t counter;
  slot_t *bulk;    /* the bulk pool */
  unsigned nbulk, bulk_max;
} ctx_t;

#ifdef FUZZ_THREADS
#include <stdatomic.h>
static _Atomic size_t live_bytes;
#define LIVE_ADD(x) atomic_fetch_add(&live_bytes, (x))
#define LIVE_SUB(x) atomic_fetch_sub(&live_bytes, (x))
#define LIVE_GET()  atomic_load(&live_bytes)
#else
static size_t live_bytes;
#define LIVE_ADD(x) (live_bytes += (x))
#define LIVE_SUB(x) (live_bytes -= (x))
#define LIVE_GET()  (live_bytes)
#endif

static __attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...);
#include <stdarg.h>
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("lithe-fuzz: FAIL: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

static uint8_t byte(ctx_t *c) { return c->pos < c->n ? c->d[c->pos++] : 0; }
static uint16_t u16(ctx_t *c) { uint16_t v = byte(c); return (uint16_t)(v | byte(c) << 8); }
static uint32_t u24(ctx_t *c) { uint32_t v = u16(c); return v | (uint32_t)byte(c) << 16; }

/* ---- the pattern ------------------------------------------------------- */

/* the byte loops are not traced for coverage: libFuzzer's comparison hooks
 * on every word made them most of the run time */
#if defined(__clang__) && __clang_major__ >= 13
#define NOCOV __attribute__((no_sanitize("coverage")))
#else
#define NOCOV
#endif

NOCOV static inline uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return x;
}
/* byte i of a block with this seed */
NOCOV static inline uint8_t pat(uint64_t seed, size_t i) {
  return (uint8_t)(mix(seed + (i >> 3)) >> (8 * (i & 7)));
}

/* the ranges of a block of length len that are written and checked */
typedef void (*range_fn)(unsigned char *p, size_t from, size_t to, uint64_t seed, void *arg);
static void for_ranges(unsigned char *p, size_t len, size_t limit, uint64_t seed, range_fn f,
                       void *arg) {
  /* limit: only bytes below it (the common prefix of a realloc) */
#define RANGE(a, b)                                                   \
  do {                                                                \
    size_t a_ = (a), b_ = (b) < limit ? (b) : limit;                  \
    if (a_ < b_) f(p, a_, b_, seed, arg);                             \
  } while (0)
  if (len <= DENSE_MAX) {
    RANGE(0, len);
    return;
  }
  size_t stride = len <= MiB ? 4 * KiB : 64 * KiB;
  RANGE(0, 4 * KiB);
  for (size_t o = stride; o + 64 <= len - 4 * KiB; o += stride) {
    size_t w = o + ((o / stride) * 40) % (stride - 64); /* a moving window */
    RANGE(w, w + 64 < len ? w + 64 : len);
  }
  RANGE(len - 4 * KiB, len);
#undef RANGE
}

NOCOV static void fill_range(unsigned char *p, size_t a, size_t b, uint64_t seed, void *arg) {
  (void)arg;
  size_t i = a;
  for (; i < b && (i & 7); i++) p[i] = pat(seed, i);
  for (; i + 8 <= b; i += 8) {
    uint64_t w = mix(seed + (i >> 3));
    memcpy(p + i, &w, 8);
  }
  for (; i < b; i++) p[i] = pat(seed, i);
}

typedef struct check_arg_s {
  const char *what;
  unsigned slot;
  size_t len;
} check_arg_t;

NOCOV static void check_range(unsigned char *p, size_t a, size_t b, uint64_t seed, void *arg) {
  const check_arg_t *ca = arg;
  size_t i = a;
  for (; i < b && (i & 7); i++)
    if (p[i] != pat(seed, i)) goto bad;
  for (; i + 8 <= b; i += 8) {
    uint64_t w = mix(seed + (i >> 3)), v;
    memcpy(&v, p + i, 8);
    if (v != w) break;
  }
  for (; i < b; i++)
    if (p[i] != pat(seed, i)) goto bad;
  return;
bad:
  fail("%s: slot %u block %p (len %zu): byte %zu is 0x%02x, expected 0x%02x", ca->what,
       ca->slot, (void *)p, ca->len, i, p[i], pat(seed, i));
}

NOCOV static void zero_range(unsigned char *p, size_t a, size_t b, uint64_t seed, void *arg) {
  (void)seed;
  const check_arg_t *ca = arg;
  size_t i = a;
  for (; i < b && (i & 7); i++)
    if (p[i]) goto bad;
  for (; i + 8 <= b; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    if (v) break;
  }
  for (; i < b; i++)
    if (p[i]) goto bad;
  return;
bad:
  fail("calloc: slot %u block %p (size %zu): byte %zu is 0x%02x, not 0", ca->slot, (void *)p,
       ca->len, i, p[i]);
}

/* ---- slots ------------------------------------------------------------- */

static void check_new(ctx_t *c, unsigned i, void *p, size_t size, size_t align, const char *op) {
  if (((uintptr_t)p & 15) != 0) fail("%s(%zu) = %p: not 16-byte aligned", op, size, p);
  if (align && ((uintptr_t)p & (align - 1)) != 0)
    fail("%s(align %zu, %zu) = %p: misaligned", op, align, size, p);
  size_t u = lithe_malloc_usable_size(p);
  if (u < size) fail("%s(%zu) = %p: usable size %zu too small", op, size, p, u);
  /* malloc(0) and friends: one byte at least is ours */
  if (u == 0) fail("%s(%zu) = %p: usable size 0", op, size, p);
  (void)c;
  (void)i;
}

static void block_fill(ctx_t *c, slot_t *s, unsigned id) {
  s->seed = mix(((uint64_t)id << 48) ^ ((uint64_t)s->size << 8) ^ ++c->counter);
  for_ranges(s->p, s->usable, s->usable, s->seed, fill_range, NULL);
}

static void block_check(slot_t *s, unsigned id, const char *what) {
  if (!s->p) return;
  check_arg_t ca = {what, id, s->usable};
  for_ranges(s->p, s->usable, s->usable, s->seed, check_range, &ca);
  size_t u = lithe_malloc_usable_size(s->p);
  if (u != s->usable)
    fail("%s: slot %u block %p: usable size changed %zu -> %zu", what, id, (void *)s->p,
         s->usable, u);
}

static void block_free(slot_t *s, unsigned id, bool sized) {
  if (!s->p) return;
  block_check(s, id, "before free");
  if (sized) lithe_free_sized(s->p, s->size);
  else lithe_free(s->p);
  LIVE_SUB(s->size);
  s->p = NULL;
  s->size = s->usable = 0;
}

static void block_set(ctx_t *c, slot_t *s, unsigned id, void *p, size_t size) {
  s->p = p;
  s->size = size;
  s->usable = lithe_malloc_usable_size(p);
  LIVE_ADD(size);
  block_fill(c, s, id);
}

static void slot_fill(ctx_t *c, unsigned i) { block_fill(c, &c->slots[i], c->id + i); }
static void slot_check(ctx_t *c, unsigned i, const char *what) {
  block_check(&c->slots[i], c->id + i, what);
}
static void slot_free(ctx_t *c, unsigned i, bool sized) {
  block_free(&c->slots[i], c->id + i, sized);
}
static void slot_set(ctx_t *c, unsigned i, void *p, size_t size) {
  block_set(c, &c->slots[i], c->id + i, p, size);
}

/* ---- the bulk pool: thousands of small blocks, to fill spans, empty them
 * in different orders and leave them partly used ----------------------- */

static bool fits(size_t size) { return LIVE_GET() + size <= LIVE_MAX; }

#define BULK_ID 100000u
static void bulk_compact(ctx_t *c) {
  unsigned k = 0;
  for (unsigned j = 0; j < c->nbulk; j++)
    if (c->bulk[j].p) c->bulk[k++] = c->bulk[j];
  c->nbulk = k;
}

static void bulk_alloc(ctx_t *c, size_t size, unsigned count, uint8_t how) {
  if (size > 32 * KiB) size = 32 * KiB;
  size_t each = size ? size : 1;
  if (count > (512 * KiB) / each) count = (unsigned)((512 * KiB) / each);
  if (count == 0) count = 1;
  if (c->nbulk + count > c->bulk_max) bulk_compact(c);
  for (unsigned j = 0; j < count && c->nbulk < c->bulk_max && fits(size); j++) {
    void *p;
    switch (how % 4) {
    case 0: p = lithe_calloc(1, size); break;
    case 1: {
      size_t a = (size_t)16 << (how / 4 % 4); /* 16 .. 128 */
      p = lithe_aligned_alloc(a, size);
      if (p && ((uintptr_t)p & (a - 1))) fail("aligned_alloc(%zu, %zu) = %p", a, size, p);
      break;
    }
    default: p = lithe_malloc(size); break;
    }
    if (!p) fail("bulk alloc of %zu failed (errno %d)", size, errno);
    check_new(c, 0, p, size, 0, "bulk alloc");
    if (how % 4 == 0) {
      check_arg_t ca = {"bulk calloc", BULK_ID + c->nbulk, size};
      zero_range(p, 0, size, 0, &ca);
    }
    slot_t *s = &c->bulk[c->nbulk++];
    block_set(c, s, BULK_ID + c->nbulk - 1, p, size);
  }
}

/* free every stride-th block from phase on; forwards or backwards */
static void bulk_free(ctx_t *c, unsigned stride, unsigned phase, bool backwards) {
  stride = stride ? stride : 1;
  for (unsigned k = 0; k < c->nbulk; k++) {
    unsigned j = backwards ? c->nbulk - 1 - k : k;
    if (j % stride == phase % stride) block_free(&c->bulk[j], BULK_ID + j, false);
  }
}

/* The class sizes up to 32 KiB (lithe's small max), as lithe reports them:
 * each distinct usable size of a malloc(n), n = 1 .. 32 KiB.  Asked, not
 * spelled out here, so the harness follows sizeclass.c's table (16-byte
 * steps to 128 B, then CLASS_STEPS a power of two) when it changes. */
#define FUZZ_SMALL_MAX 32768u
static size_t class_sizes[256];
static unsigned nclass_sizes;
static void classes_init(void) {
  for (size_t n = 1; n <= FUZZ_SMALL_MAX && nclass_sizes < 256;) {
    void *p = lithe_malloc(n);
    size_t u = p ? lithe_malloc_usable_size(p) : 0;
    lithe_free(p);
    if (u < n) fail("lithe_malloc(%zu): usable size %zu", n, u);
    class_sizes[nclass_sizes++] = u;
    n = u + 1;
  }
}

/* A size from the input, by category. */
static size_t pick_size(ctx_t *c) {
  uint8_t cat = byte(c);
  switch (cat & 15) {
  case 0: case 1: case 2: case 3:            /* tiny 0..255 */
    return byte(c);
  case 4: case 5: case 6: {                  /* a class size, -1 / 0 / +1 */
    uint8_t k = byte(c);
    size_t n = class_sizes[k % nclass_sizes];
    return n + (size_t)((k >> 6) % 3) - 1;
  }
  case 7: case 8:                            /* small, up to 32 KiB + a bit */
    return u16(c) % (32 * KiB + 256);
  case 9:                                    /* up to 256 KiB */
    return u24(c) % (256 * KiB);
  case 10: {                                 /* around page multiples, powers of two */
    uint8_t k = byte(c), e = byte(c);
    size_t base = (e & 1) ? ((size_t)1 << (12 + k % 13)) : (size_t)(k + 1) * 8 * KiB;
    return base + (size_t)((e >> 1) % 5) - 2;
  }
  case 11: case 12:                          /* large, up to 16 MiB */
    return u24(c) % (16 * MiB + 1);
  case 13: {                                 /* the large / xlarge threshold
                                                (1 MiB) and the former one */
    uint8_t k = byte(c);
    size_t t = (k & 0x80) ? 16 * MiB : MiB;
    return t + (size_t)(k % 9) * 4 * KiB - 16 * KiB + (size_t)((k >> 4) % 3) - 1;
  }
  case 14:                                   /* xlarge, 16..48 MiB */
    return 16 * MiB + u24(c) % (32 * MiB);
  default:
    return 0;
  }
}

static size_t pick_align(ctx_t *c) {
  uint8_t a = byte(c);
  if (a >= 0xF0) return (size_t)a * 3; /* not a power of two (mostly) */
  return (size_t)1 << (a % 23);        /* 1 .. 4 MiB */
}


/* ---- one operation ----------------------------------------------------- */

static void run_op(ctx_t *c, uint8_t op) {
  unsigned i = byte(c) % c->nslots;
  slot_t *s = &c->slots[i];
  switch (op % 20) {
  case 0: case 1: case 2: {                    /* malloc */
    size_t n = pick_size(c);
    if (!fits(n)) break;
    slot_free(c, i, false);
    void *p = lithe_malloc(n);
    if (!p) fail("malloc(%zu) = NULL (errno %d)", n, errno);
    check_new(c, i, p, n, 0, "malloc");
    slot_set(c, i, p, n);
    break;
  }
  case 3: {                                    /* calloc */
    size_t n = pick_size(c);
    uint8_t k = byte(c);
    size_t count = (k & 7) + 1, each = n / count;
    if (!fits(count * each)) break;
    slot_free(c, i, false);
    void *p = lithe_calloc(count, each);
    if (!p) fail("calloc(%zu, %zu) = NULL (errno %d)", count, each, errno);
    check_new(c, i, p, count * each, 0, "calloc");
    check_arg_t ca = {"calloc", c->id + i, count * each};
    for_ranges(p, count * each, count * each, 0, zero_range, &ca);
    slot_set(c, i, p, count * each);
    break;
  }
  case 4: case 5: case 6: {                    /* realloc (also of NULL, and to 0) */
    size_t n = pick_size(c);
    if (s->p && n > s->size && !fits(n - s->size)) break;
    if (!s->p && !fits(n)) break;
    slot_check(c, i, "before realloc");
    slot_t old = *s;
    void *p = lithe_realloc(s->p, n);
    if (n == 0 && old.p) {                     /* frees, returns NULL (docs/semantics.md) */
      if (p) fail("realloc(%p, 0) = %p, expected NULL", (void *)old.p, p);
      LIVE_SUB(old.size);
      s->p = NULL;
      s->size = s->usable = 0;
      break;
    }
    if (!p) fail("realloc(%p, %zu) = NULL (errno %d)", (void *)old.p, n, errno);
    check_new(c, i, p, n, 0, "realloc");
    if (old.p) {
      size_t keep = old.size < n ? old.size : n;
      check_arg_t ca = {"realloc kept prefix", c->id + i, keep};
      /* the bytes old's pattern wrote below keep must be there */
      for_ranges(p, old.usable, keep, old.seed, check_range, &ca);
      LIVE_SUB(old.size);
    }
    s->p = NULL;
    slot_set(c, i, p, n);
    break;
  }
  case 7: case 8:                              /* free */
    slot_free(c, i, op & 1);                   /* 7: free_sized */
    break;
  case 9: {                                    /* posix_memalign */
    size_t a = pick_align(c), n = pick_size(c);
    if (!fits(n + a)) break;
    void *p = (void *)0x1234;
    int r = lithe_posix_memalign(&p, a, n);
    bool ok = a && !(a & (a - 1)) && a % sizeof(void *) == 0;
    if (!ok) {
      if (r != EINVAL || p != (void *)0x1234)
        fail("posix_memalign(align %zu, %zu) = %d, out %p: expected EINVAL, out untouched", a, n,
             r, p);
      break;
    }
    if (r != 0) fail("posix_memalign(align %zu, %zu) = %d", a, n, r);
    check_new(c, i, p, n, a, "posix_memalign");
    slot_free(c, i, false);
    slot_set(c, i, p, n);
    break;
  }
  case 10: {                                   /* aligned_alloc */
    size_t a = pick_align(c), n = pick_size(c);
    if (!fits(n + a)) break;
    errno = 0;
    void *p = lithe_aligned_alloc(a, n);
    if (!a || (a & (a - 1))) {
      if (p || errno != EINVAL)
        fail("aligned_alloc(%zu, %zu) = %p errno %d: expected NULL, EINVAL", a, n, p, errno);
      break;
    }
    if (!p) fail("aligned_alloc(%zu, %zu) = NULL (errno %d)", a, n, errno);
    check_new(c, i, p, n, a, "aligned_alloc");
    slot_free(c, i, false);
    slot_set(c, i, p, n);
    break;
  }
  case 11:                                     /* check, and write a new pattern */
    if (s->p) {
      slot_check(c, i, "check");
      slot_fill(c, i);
    }
    break;
  case 12: {                                   /* impossible sizes: NULL, ENOMEM */
    uint8_t k = byte(c);
    size_t n = k & 1 ? SIZE_MAX - (k >> 1) : ((size_t)1 << 47) + ((size_t)k << 12);
    errno = 0;
    void *p = (k & 2) ? lithe_malloc(n) : lithe_calloc(2, n / 2 + 1);
    if (p || errno != ENOMEM) fail("impossible size %zu: %p, errno %d", n, p, errno);
    if (s->p) {                                /* a failed realloc leaves the block alone */
      errno = 0;
      if (lithe_realloc(s->p, n) || errno != ENOMEM) fail("realloc to %zu did not fail", n);
      slot_check(c, i, "after failed realloc");
    }
    break;
  }
  case 13:                                     /* collect */
    lithe_collect(op >= 128);
    break;
  case 14: {                                   /* free a run of slots */
    unsigned k = byte(c) % 8;
    for (unsigned j = 0; j <= k; j++) slot_free(c, (i + j) % c->nslots, false);
    break;
  }
  case 16: {                                   /* bulk: many blocks of one size */
    size_t n = pick_size(c);
    unsigned count = (unsigned)byte(c) * 16 + 1;
    bulk_alloc(c, n, count, (uint8_t)(op ^ i));
    break;
  }
  case 17: {                                   /* bulk: free a stride of them */
    uint8_t k = byte(c);
    bulk_free(c, (k & 7) + 1, i, k & 8);
    if (k & 16) bulk_compact(c);
    break;
  }
  case 18:                                     /* bulk: check them all */
    for (unsigned j = 0; j < c->nbulk; j++) block_check(&c->bulk[j], BULK_ID + j, "bulk check");
    break;
  case 19: {                                   /* memalign, valloc, pvalloc, reallocarray */
    size_t n = pick_size(c) & (64 * MiB - 1);
    uint8_t k = byte(c);
    if (!fits(n + 8 * KiB)) break;
    errno = 0;
    void *p;
    size_t a = 0, want = n;
    if (k % 4 == 0) { a = pick_align(c); p = lithe_memalign(a, n); }
    else if (k % 4 == 1) { a = 4096; p = lithe_valloc(n); }
    else if (k % 4 == 2) { a = 4096; p = lithe_pvalloc(n); want = n ? (n + 4095) & ~(size_t)4095 : 4096; }
    else {
      /* reallocarray of the slot: count * each = n */
      size_t count = (k >> 2) % 4 + 1, each = n / count;
      want = count * each;
      if (s->p && want > s->size && !fits(want - s->size)) break;
      slot_check(c, i, "before reallocarray");
      slot_t old = *s;
      p = lithe_reallocarray(s->p, count, each);
      if (want == 0 && old.p) {
        if (p) fail("reallocarray(%p, 0) = %p", (void *)old.p, p);
        LIVE_SUB(old.size);
        s->p = NULL;
        s->size = s->usable = 0;
        break;
      }
      if (!p) fail("reallocarray(%p, %zu, %zu) = NULL", (void *)old.p, count, each);
      check_new(c, i, p, want, 0, "reallocarray");
      if (old.p) {
        size_t keep = old.size < want ? old.size : want;
        check_arg_t ca = {"reallocarray kept prefix", c->id + i, keep};
        for_ranges(p, old.usable, keep, old.seed, check_range, &ca);
        LIVE_SUB(old.size);
      }
      s->p = NULL;
      slot_set(c, i, p, want);
      break;
    }
    if (a && (a & (a - 1))) {
      if (p || errno != EINVAL) fail("memalign(%zu, %zu) = %p: expected NULL, EINVAL", a, n, p);
      break;
    }
    if (!p) fail("memalign/valloc/pvalloc(%zu, %zu) = NULL", a, n);
    check_new(c, i, p, want, a, k % 4 == 0 ? "memalign" : k % 4 == 1 ? "valloc" : "pvalloc");
    slot_free(c, i, false);
    slot_set(c, i, p, want);
    break;
  }
  default:                                     /* malloc a run of small blocks */
  {
    unsigned k = byte(c) % 8;
    size_t n = byte(c);
    for (unsigned j = 0; j <= k; j++) {
      unsigned t = (i + j) % c->nslots;
      slot_free(c, t, false);
      void *p = lithe_malloc(n);
      if (!p) fail("malloc(%zu) = NULL", n);
      check_new(c, t, p, n, 0, "malloc");
      slot_set(c, t, p, n);
    }
    break;
  }
  }
}

static void free_all(ctx_t *c) {
  for (unsigned i = 0; i < c->nslots; i++) slot_free(c, i, false);
  for (unsigned j = 0; j < c->nbulk; j++) block_free(&c->bulk[j], BULK_ID + j, false);
  c->nbulk = 0;
}

/* ---- one input --------------------------------------------------------- */

static lithe_stats_t base;

static void check_counters(void) {
  lithe_stats_t st;
  lithe_stats_get(&st);
  if (st.large_live != base.large_live || st.xlarge_live != base.xlarge_live ||
      st.xlarge_bytes != base.xlarge_bytes)
    fail("after freeing everything: large_live %zu (was %zu), xlarge_live %zu (was %zu), "
         "xlarge_bytes %zu (was %zu)",
         st.large_live, base.large_live, st.xlarge_live, base.xlarge_live, st.xlarge_bytes,
         base.xlarge_bytes);
  if (LIVE_GET() != 0) fail("live byte count %zu after freeing everything", LIVE_GET());
  /* a thread's heap goes when the thread does (joined before this) */
  if (st.heaps_live > base.heaps_live + 1)
    fail("%zu thread heaps live after the input, %zu before", st.heaps_live, base.heaps_live);
}

/* after lithe_collect(true) with nothing live, the memory is given back */
static void check_returned(void) {
  lithe_stats_t st;
  lithe_stats_get(&st);
  size_t held = st.committed - st.purged - st.metadata;
  if (held > COMMIT_MAX)
    fail("committed %zu - purged %zu - metadata %zu = %zu bytes held with nothing live "
         "after lithe_collect(true)", st.committed, st.purged, st.metadata, held);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  classes_init(); /* (initialises lithe) */
  lithe_stats_get(&base);
  return 0;
}

#ifndef FUZZ_THREADS

static slot_t slots[NSLOTS];
static slot_t bulk[8192];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ctx_t c = {data, size, 0, slots, NSLOTS, 0, 0, bulk, 0, 8192};
  while (c.pos < c.n) run_op(&c, byte(&c));
  free_all(&c);
  check_counters();
  if (size && (data[size - 1] & 0x0f) == 0x0f) {
    lithe_collect(true);
    check_returned();
  }
  return 0;
}

#else /* FUZZ_THREADS: two threads, half the slots each, and mailboxes */

#define HALF (NSLOTS / 2)
#define MAILBOX 16
typedef struct mailbox_s {
  pthread_mutex_t lock;
  slot_t box[MAILBOX];
  unsigned count;
} mailbox_t;

typedef struct tctx_s {
  ctx_t c;
  slot_t slots[HALF];
  slot_t bulk[4096];
  mailbox_t *in, *out;
  unsigned t;
} tctx_t;

static mailbox_t mail[2] = {{PTHREAD_MUTEX_INITIALIZER, {{0}}, 0},
                            {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0}};

/* take what the other thread sent: check, then free, realloc or keep */
static void drain(tctx_t *t, uint8_t how) {
  pthread_mutex_lock(&t->in->lock);
  unsigned n = t->in->count;
  slot_t got[MAILBOX];
  memcpy(got, t->in->box, n * sizeof *got);
  t->in->count = 0;
  pthread_mutex_unlock(&t->in->lock);
  for (unsigned k = 0; k < n; k++) {
    check_arg_t ca = {"received block", 1000u + k, got[k].usable};
    for_ranges(got[k].p, got[k].usable, got[k].usable, got[k].seed, check_range, &ca);
    unsigned i = (how + k) % HALF;
    if ((how >> 4) & 1) {                      /* keep it in a slot of ours */
      ctx_t *c = &t->c;
      slot_free(c, i, false);
      c->slots[i] = got[k];
      slot_check(c, i, "adopted");
      if ((how >> 5) & 1) {                    /* and realloc it here */
        size_t nn = got[k].size / 2 + (how & 7) * 100;
        slot_t old = c->slots[i];
        void *p = lithe_realloc(old.p, nn ? nn : 1);
        if (!p) fail("realloc of a received block failed");
        nn = nn ? nn : 1;
        size_t keep = old.size < nn ? old.size : nn;
        check_arg_t cb = {"realloc of a received block", c->id + i, keep};
        for_ranges(p, old.usable, keep, old.seed, check_range, &cb);
        LIVE_SUB(old.size);
        c->slots[i].p = NULL;
        slot_set(c, i, p, nn);
      }
    } else {
      lithe_free(got[k].p);                    /* a remote free */
      LIVE_SUB(got[k].size);
    }
  }
}

static void send(tctx_t *t, unsigned i) {
  slot_t *s = &t->c.slots[i];
  if (!s->p) return;
  slot_check(&t->c, i, "before send");
  pthread_mutex_lock(&t->out->lock);
  if (t->out->count < MAILBOX) {
    t->out->box[t->out->count++] = *s;
    s->p = NULL;
    s->size = s->usable = 0;
  }
  pthread_mutex_unlock(&t->out->lock);
}

static const uint8_t *g_data;
static size_t g_size;

static void run_thread(tctx_t *t) {
  /* thread t runs the operations that start at even / odd bytes */
  ctx_t *c = &t->c;
  size_t step = 0;
  while (c->pos < c->n) {
    uint8_t op = byte(c);
    bool mine = (step++ & 1) == t->t;
    if (!mine) continue;
    if ((op & 0xf0) == 0xe0) send(t, byte(c) % HALF);
    else if ((op & 0xf0) == 0xf0) drain(t, byte(c));
    else run_op(c, op);
  }
  free_all(c);
}

static void *worker(void *arg) {
  run_thread(arg);
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_data = data;
  g_size = size;
  static tctx_t t[2];
  for (unsigned k = 0; k < 2; k++) {
    memset(&t[k].slots, 0, sizeof t[k].slots);
    t[k].c = (ctx_t){data, size, 0, t[k].slots, HALF, k * HALF, (uint64_t)k << 40,
                     t[k].bulk, 0, 4096};
    t[k].t = k;
    t[k].in = &mail[k];
    t[k].out = &mail[1 - k];
  }
  pthread_t th;
  if (pthread_create(&th, NULL, worker, &t[1])) fail("pthread_create");
  run_thread(&t[0]);
  pthread_join(th, NULL);
  /* what is left in the mailboxes: freed here (the worker's blocks remotely,
   * after its heap was given up) */
  drain(&t[0], 0);
  t[1].c.slots = t[1].slots;
  drain(&t[1], 0);
  check_counters();
  if (size && (data[size - 1] & 0x0f) == 0x0f) {
    lithe_collect(true);
    check_returned();
  }
  return 0;
}
#endif
