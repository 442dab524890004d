/* SPDX-License-Identifier: MIT */
/* span.c — a span holds objects of one small size class.
 *
 * Its owner thread pops blocks from `free` and pushes its own frees back on
 * it (no atomics).  Other threads push their frees on `thread_free` with a
 * CAS; the owner takes that whole list with one exchange when `free` runs
 * dry.  Blocks are carved lazily from `bump`, one OS page worth at a time,
 * so a span costs resident memory only for what was used. */
#include "internal.h"

void span_init_small(span_t *s, unsigned cls) {
  uint32_t size = class_size[cls];
  lt_assert_cmp(cls, <, (unsigned)NCLASSES);
  lt_assert_v(cls > 0 && size >= 16, cls);
  lt_assert_cmp(s->bytes, >=, (size_t)size);
  lt_assert_cmp(s->bytes, <, (size_t)1 << 32); /* the divisibility test */
  lt_assert_v(((uintptr_t)s->start & (PAGE_SIZE - 1)) == 0, (uintptr_t)s->start);
  span_set_kind(s, SPAN_SMALL);
  s->cls = (uint8_t)cls;
  s->bin_cls = (uint8_t)cls; /* heap_malloc_class: 0 in a first-class heap */
  s->block_size = size;
  s->capacity = (uint32_t)(s->bytes / size);
  /* Lemire's divisibility test: off % size == 0  <=>  off * M < M, with
   * M = floor(2^64 / size) + 1 (2^64 / size rounded up, and one more for
   * a power of two, so that a block start's product is never 0 past the
   * first: the carved test of fastpath.h counts blocks with it). */
  s->div_magic = UINT64_MAX / size + 1 + ((size & (size - 1)) == 0);
  s->free = NULL;
  s->nfree = 0;
  s->used = 0;
  s->full = 0;
  s->free_trigger = 0;
  span_set_bump(s, s->start);
  span_set_carved_lim(s, 0);
  s->bump_end = s->start + (size_t)s->capacity * size;
  atomic_store_explicit(&s->thread_free, 0, memory_order_relaxed);
  atomic_store_explicit(&s->remote_next, NULL, memory_order_relaxed);
  lt_vg_close(s->start, s->bytes); /* valgrind build: no access until carved and handed out */
  lt_assert_cmp((uint64_t)s->capacity, <, (uint64_t)1 << (64 - TF_COUNT_SHIFT));
}

#if LITHE_SECURE
lithe_link_keys_t lithe_link = {0, LINK_BAD_BITS};

/* xorshift per thread, seeded from the secret and the thread's address */
static uint64_t secure_random(void) {
  static __thread uint64_t x __attribute__((tls_model("initial-exec")));
  if (!x) x = (lithe_link.secret ^ (uintptr_t)&x) | 1;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

/* Hardened build: the order a fresh slice is handed out in.  What the
 * randomisation is for: an attacker with an overflow out of block A wants
 * the object it allocates next, B, right after A, and a carve in address
 * order makes B = A + size every time.  Here the slice is cut into
 * windows of CARVE_WINDOW blocks, handed out one window after another in
 * address order, the blocks of each window in a random order (a shuffle
 * per window): B is A's neighbour about 1 time in CARVE_WINDOW (the
 * neighbours test, 5 runs: 52-63 of 511 consecutive pairs in class 48,
 * 58-83 in class 224, whose 18-block slices end in a window of 2), and
 * otherwise A's neighbour is a block of the same window handed
 * out before or after A.  A program that walks its blocks in allocation
 * order still reads memory upwards, jittered within 8 blocks, which the
 * hardware prefetcher follows: list_traverse runs as fast as in the
 * release build; wider windows and the other orders tried were slower or
 * left most neighbours in order (docs/lab/2026-12-01-hardened-build-cost.md). */
#define CARVE_WINDOW 8
/* Slices smaller than this are carved this many blocks at a time, so that
 * a window has blocks to mix: a class above 1 KiB has fewer than 4 to a
 * 4 KiB slice, and one to a slice would go out in address order (the
 * neighbours test: 85-123 of 511 pairs in classes 1536 and 3072).  4 commits
 * a 4 KiB class's 16 KiB first span whole at its first malloc (one 4 KiB
 * page in the release build); 8 would double that for the big classes. */
#define CARVE_MIN_BLOCKS 4

/* The window orders: CARVE_ORDERS random permutations of the 8 slots
 * (the slot handed out first in byte 0), made once per process
 * (span_secure_init, from process_init, after the secret); each window
 * takes one with 8 random bits.  A shuffle per window (inside-out
 * Fisher-Yates, 7 draws) made the carve 3.7x the release build's
 * (callgrind, list_traverse --quick, 2,422 slices carved: span_extend
 * 2.96 M instructions release, 10.88 M); the table, read a byte a block,
 * 3.34 M.  What is given up: a window's order is one of 256 per
 * process, not of all 40,320, so a program that learns the table (from
 * the addresses of its own blocks) needs fewer blocks of a window to tell
 * its order. */
#define CARVE_ORDERS 256
static uint8_t carve_order[CARVE_ORDERS][CARVE_WINDOW];

/* span_free_key (the division magic) of every class: what word 1 of a
 * free block in a bin holds, which malloc_inline checks on each pop */
uintptr_t lithe_class_key[NCLASSES];

void span_secure_init(void) {
  for (unsigned c = 1; c < NCLASSES; c++) {
    uint32_t size = class_size[c];
    lithe_class_key[c] = UINT64_MAX / size + 1 + ((size & (size - 1)) == 0); /* span_init_small */
  }
  for (unsigned k = 0; k < CARVE_ORDERS; k++) {
    uint8_t *idx = carve_order[k];
    uint64_t r = secure_random();
    idx[0] = 0;
    for (unsigned i = 1; i < CARVE_WINDOW; i++, r >>= 8) {
      unsigned j = (unsigned)(((r & 0xff) * (i + 1)) >> 8); /* 0..i, biased at most 1 in 36 */
      idx[i] = idx[j];
      idx[j] = (uint8_t)i;
    }
  }
}

/* The n blocks of slice p before head, window by window (above).  The
 * links are block_set_next's encoding written out, with the secret loaded
 * once (the key stores could alias it, so it was reloaded for every
 * block); the list is built from its end, the last window first, each
 * window's order from its last slot down.  A window cut short by the
 * slice's end (m blocks; only the last can be) keeps the slots below m in
 * the order drawn.  lead (a span's first slice): the block at the span's
 * start goes out first, the rest of its window after it in the order
 * drawn.  As in the release build, a write just before the first block a
 * span hands out then lands before the span (in a fresh arena, on memory
 * not committed, which faults).  A random first block hid 1- and 32-byte
 * underflows of small and medium blocks that the release build catches
 * so (tests/regress/misuse/misuse_matrix.c), and one predictable block per
 * span gives an attacker little: the block after it is still drawn. */
static block_t *carve_shuffled(char *p, size_t n, size_t size, block_t *head, uintptr_t key,
                               bool lead) {
  const uintptr_t secret = lithe_link.secret;
  uint64_t r = secure_random();
  unsigned draws = 64 / 8;
  size_t w0 = (n - 1) / CARVE_WINDOW * CARVE_WINDOW;
  unsigned m = (unsigned)(n - w0); /* 1..CARVE_WINDOW */
  for (;; w0 -= CARVE_WINDOW, m = CARVE_WINDOW) {
    if (draws == 0) {
      r = secure_random();
      draws = 64 / 8;
    }
    const uint8_t *order = carve_order[r & (CARVE_ORDERS - 1)];
    r >>= 8;
    draws--;
    char *w = p + w0 * size;
    if (likely(m == CARVE_WINDOW && !(lead && w0 == 0))) {
#pragma GCC unroll 8
      for (int i = CARVE_WINDOW - 1; i >= 0; i--) {
        block_t *b = (block_t *)(w + order[i] * size);
        b->next = (block_t *)((uintptr_t)head ^ secret ^ (uintptr_t)b);
        b->key = key;
        head = b;
      }
    } else {
      for (int i = CARVE_WINDOW - 1; i >= 0; i--) {
        if (order[i] >= m || (lead && w0 == 0 && order[i] == 0)) continue;
        block_t *b = (block_t *)(w + order[i] * size);
        b->next = (block_t *)((uintptr_t)head ^ secret ^ (uintptr_t)b);
        b->key = key;
        head = b;
      }
    }
    if (w0 == 0) break;
  }
  if (lead) { /* the span's first block, first (above) */
    block_t *b = (block_t *)p;
    b->next = (block_t *)((uintptr_t)head ^ secret ^ (uintptr_t)b);
    b->key = key;
    head = b;
  }
  return head;
}

/* A popped block's link decodes to noise: report the block (its link word
 * was overwritten while it was free) and, if the report returns
 * (LITHE_ON_ERROR=ignore), drop the rest of the list rather than follow it. */
/* malloc_inline's pop found b's link bad: as block_pop_next then the pop.
 * The arguments in the registers the fast path has them in (x86-64: the
 * size in rdi, the class in rsi, the heap in rdx; the block, in rax, is
 * the one move): with (h, c, b) GCC kept the heap in rdi for this call,
 * three moves more on every malloc (26 instructions to ret and the ret
 * included, now 23; release 19). */
void *lithe_bin_pop_corrupt(size_t n, unsigned c, heap_t *h, block_t *b) {
  (void)n;
  h->bins->bin[c] = link_bad(block_next(b)) ? lithe_link_corrupt(b) : lithe_key_corrupt(b);
  h->bins->bin_room[c]++;
  block_clear(b);
  return b;
}

/* b's free key (word 1) is not its class's: written after its free.  As
 * lithe_link_corrupt: reports, and the rest of the list is dropped. */
block_t *lithe_key_corrupt(block_t *b) {
  lithe_report("malloc", b, "free list corrupted: this free block was written after its free "
                            "(its free key changed)");
  return NULL;
}

block_t *lithe_link_corrupt(block_t *b) {
  lithe_report("malloc", b, "free list corrupted: this free block's link was overwritten "
                            "(a write after free, or an overflow from the block before it)");
  return NULL;
}
#endif

/* Carve the next slice of never-used blocks onto the free list. */
bool span_extend(span_t *s) {
  size_t size = s->block_size;
  size_t left = (size_t)(s->bump_end - s->bump) / size;
  if (left == 0) return false;
  size_t n = (s->bump == s->start ? EXTEND_FIRST_BYTES : EXTEND_BYTES) / size;
  if (n == 0) n = 1;
#if LITHE_SECURE
  /* at least CARVE_MIN_BLOCKS: a class above 1 KiB has fewer than 4 to a
   * 4 KiB slice, and one to a slice would be handed out in address order */
  if (n < CARVE_MIN_BLOCKS) n = CARVE_MIN_BLOCKS;
#endif
  if (n > left) n = left;
  char *p = s->bump;
  block_t *head = s->free;
  uintptr_t key = span_free_key(s); /* carved blocks count as free: a free()
                                     of one is caught like a double free */
#if LITHE_SECURE
  head = carve_shuffled(p, n, size, head, key, p == s->start); /* in a random order (above) */
#else
  for (size_t i = n; i-- > 0;) {
    block_t *b = (block_t *)(p + i * size);
    block_set_next(b, head);
    block_set_key(b, key);
    head = b;
  }
#endif
  s->free = head;
  s->nfree += (uint32_t)n;
  span_set_bump(s, p + n * size);
  lt_assert_cmp(s->bump, <=, s->bump_end);
  span_set_carved_lim(s, ((uint64_t)(s->bump - s->start) / size) * block_step(s));
  return true;
}

/* lithe_collect(true), by the span's owner: the OS pages past the carve
 * point hold no block and never did, so they go back.  A span cut from
 * dirty free pages is resident whole from its first block on: the purge
 * thread's TLS vector (one 320-byte block, calloc'ed by glibc from the
 * thread that starts it) kept a 64 KiB span resident after
 * lithe_collect(true), 64 of the ~70 KiB the thread cost.  Carving there
 * later faults zero pages in, as on a fresh span.  Only the owner: it
 * alone moves bump, and a purge racing a carve would zero blocks just
 * handed out. */
void span_purge_uncarved(span_t *s) {
  lt_assert_cmp(s->kind, ==, SPAN_SMALL);
  char *b = span_bump(s);
  lt_assert_cmp(b, <=, s->bump_end);
  if (b < s->bump_end) os_purge(b, (size_t)(s->start + s->bytes - b)); /* (whole OS pages) */
}

/* Take the blocks other threads freed (keeping the notify state bits). */
uint32_t span_collect_remote(span_t *s) {
  uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
  do {
    if ((tf & ~(uintptr_t)TF_MASK) == 0) return 0;
  } while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &tf, tf & TF_MASK,
                                                  memory_order_acquire, memory_order_relaxed));
  block_t *list = TF_PTR(tf);
  uint32_t n = TF_COUNT(tf);
  /* every remote free was of a block handed out: at most `used` of them */
  lt_assert_cmp(n, <=, s->used);
  lt_assert_block(s, list);
  if (s->free) { /* rare: the malloc slow path collects only when empty */
    block_t *tail = list;
    while (block_next(tail)) tail = block_next(tail);
    block_set_next(tail, s->free);
  }
  s->free = list;
  s->nfree += n;
  s->used -= n;
  return n;
}

static bool list_has(span_t *s, block_t *list, block_t *b) {
  /* bounded and range-checked: a corrupted list must not take us astray */
  for (uint32_t i = 0; list && i <= s->capacity; i++) {
    if (list == b) return true;
    if ((char *)list < s->start || (char *)list >= s->bump_end) return false;
    list = block_next(list);
  }
  return false;
}

/* Slow confirmation of a suspected double free: is b already free? */
bool span_contains_free(span_t *s, block_t *b) {
  if ((char *)b >= span_bump(s)) return true; /* never handed out */
  if (list_has(s, s->free, b)) return true;
  uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_acquire);
  return list_has(s, TF_PTR(tf), b);
}
