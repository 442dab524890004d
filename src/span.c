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

/* Primes above the most blocks a slice holds (EXTEND_BYTES / 16 = 256):
 * for any slice of n <= 256 blocks, p mod n is coprime with n (gcd(p mod
 * n, n) = gcd(p, n) = 1), so a random one of them gives a stride that
 * visits every block of the slice, without a gcd loop per slice. */
static const uint16_t carve_primes[16] = {257, 263, 269, 271, 277, 281, 283, 293,
                                          307, 311, 313, 317, 331, 337, 347, 349};
_Static_assert(EXTEND_BYTES / 16 < 257, "carve_primes must lie above the blocks of a slice");

/* xorshift per thread, seeded from the secret and the thread's address */
static uint64_t secure_random(void) {
  static __thread uint64_t x __attribute__((tls_model("initial-exec")));
  if (!x) x = (lithe_link.secret ^ (uintptr_t)&x) | 1;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

/* A popped block's link decodes to noise: report the block (its link word
 * was overwritten while it was free) and, if the report returns
 * (LITHE_ON_ERROR=ignore), drop the rest of the list rather than follow it. */
/* malloc_inline's pop found b's link bad: as block_pop_next then the pop */
void *lithe_bin_pop_corrupt(heap_t *h, unsigned c, block_t *b) {
  h->bin[c] = lithe_link_corrupt(b);
  h->bin_room[c]++;
  block_clear(b);
  return b;
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
  size_t n = EXTEND_BYTES / size;
  if (n == 0) n = 1;
  if (n > left) n = left;
  char *p = s->bump;
  block_t *head = s->free;
  uintptr_t key = span_free_key(s); /* carved blocks count as free: a free()
                                     of one is caught like a double free */
#if LITHE_SECURE
  /* Hardened build: the slice is linked in a random order, so the address
   * of the next block handed out cannot be predicted from the last one:
   * blocks (r + k * step) mod n, step coprime with n. */
  size_t r = 0, step = 1;
  if (n > 1) {
    uint64_t x = secure_random();
    r = (size_t)((x >> 8) % n);
    step = carve_primes[x & 15] % n;
  }
  /* block_set_next's encoding written out, the secret loaded once (the
   * key stores could alias it, so it was reloaded for every block) and
   * the address stepped, not multiplied */
  const uintptr_t secret = lithe_link.secret;
  uintptr_t first = (uintptr_t)p + r * size, at = first;
  uintptr_t jump = step * size, back = jump - n * size; /* back: the wrapped step, mod 2^64 */
  uintptr_t last = (uintptr_t)p + n * size - jump;      /* from here on a step wraps */
  /* at = p + ((r + k * step) mod n) * size; the walk is one cycle of
   * length n (step coprime with n), so it ends when it is back at first */
  do {
    block_t *b = (block_t *)at;
    b->next = (block_t *)((uintptr_t)head ^ secret ^ at);
    b->key = key;
    head = b;
    at += at >= last ? back : jump;
  } while (at != first);
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
