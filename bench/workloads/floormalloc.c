/* SPDX-License-Identifier: MIT */
/* libbench-floor.so — the floor of an allocator benchmark: malloc is an
 * atomic bump of a pointer through a static 1 GiB region (reserved in
 * .bss, so only what is handed out is ever faulted in), free does
 * nothing.  A figure an allocator cannot beat: what is left of a
 * benchmark's time with it preloaded is the benchmark's own work and its
 * threads' scheduling (bench-startup: docs/design.md, "Threads").
 * Every block has a 16-byte header before it holding its size, for
 * realloc and malloc_usable_size.  Not for real programs: nothing is
 * reused, and the region runs out (ENOMEM).
 *
 * libbench-floor-lifo.so (built with -DFLOOR_LIFO): free pushes the block
 * on a per-thread list (the link in its header) and malloc takes the
 * list's head back when its size is the one asked for, else bumps.  The
 * floor of a fixed-size churn (bench-scaling's StackGrowth op: three
 * 4 KiB blocks allocated, touched and freed in reverse order): the fewest
 * instructions and lines a free list can cost, with no check at all, on
 * blocks that stay in the cache (docs/design.md, "Threads"). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REGION ((size_t)1 << 30)
#define HDR 16
static char region[REGION] __attribute__((aligned(4096)));
static size_t top;

static void *take(size_t n, size_t align) {
  if (n > REGION || align > REGION / 2) { errno = ENOMEM; return NULL; }
  size_t need = HDR + n + align;
  size_t o = __atomic_fetch_add(&top, (need + 15) & ~(size_t)15, __ATOMIC_RELAXED);
  if (o > REGION - need) { errno = ENOMEM; return NULL; }
  uintptr_t p = ((uintptr_t)region + o + HDR + align - 1) & ~(uintptr_t)(align - 1);
  ((size_t *)p)[-1] = n;
  return (void *)p;
}

#ifdef FLOOR_LIFO
static __thread void **lifo __attribute__((tls_model("initial-exec"))); /* header word 0: the next */
void *malloc(size_t n) {
  void **b = lifo;
  if (b && ((size_t *)b)[-1] == n) {
    lifo = b[-2];
    return b;
  }
  return take(n, 16);
}
void free(void *p) {
  if (!p) return;
  ((void **)p)[-2] = lifo;
  lifo = p;
}
#else
void *malloc(size_t n) { return take(n, 16); }
void free(void *p) { (void)p; }
#endif
void *calloc(size_t c, size_t n) {
  size_t b;
  if (__builtin_mul_overflow(c, n, &b)) { errno = ENOMEM; return NULL; }
  return take(b, 16); /* never-used memory of the region reads zero */
}
void *realloc(void *p, size_t n) {
  void *q = take(n, 16);
  if (p && q) {
    size_t old = ((size_t *)p)[-1];
    memcpy(q, p, old < n ? old : n);
  }
  return q;
}
size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }
int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  void *p = take(n, align < 16 ? 16 : align);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t n) {
  void *p = NULL;
  int e = posix_memalign(&p, align, n);
  if (e) errno = e;
  return p;
}
void *memalign(size_t align, size_t n) { return aligned_alloc(align, n); }
