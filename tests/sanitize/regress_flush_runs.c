/* SPDX-License-Identifier: MIT */
/* regress_flush_runs (white box: linked with liblithe.a, the Debug one in
 * the Debug build, which also runs lithe_verify) — a bin given back to its
 * spans (heap.c, give_back_lists) leaves every span exactly as one
 * span_push per block in the bin's order would: the blocks of a span at
 * the head of its free list in reverse bin order, its free and used
 * counts moved by as many, a full span refiled once 1/16 of it is freed,
 * an emptied span released.  The walk pushes a span's blocks that lie
 * next to each other in the bin as one run and looks up only a block
 * outside the run's span, so the bin here mixes every case a run must
 * end on:
 *
 *   full   half of the blocks of a full span, in a row: more than the
 *          1/16 that brings its slow path (the run is cut there and goes
 *          on after it)
 *   mixed  blocks of two spans, one of each in turn (runs of one)
 *   remote a block of another thread's heap (to its span's thread_free)
 *          between two blocks of one span: the run before it is closed,
 *          and the block after it starts a run of its own
 *   empty  every block a span has out: the span is released
 *
 * All of it is freed into the bin (grown first so that it holds them all:
 * no free spills), then lithe_collect(false) gives the bin back, and each
 * span's free list is compared block by block with the model.
 *
 * A bin over its capacity is the other way back (heap.c, bins_over and
 * bin_splice_back): a refill took a span's whole free list, more than the
 * capacity, and until malloc has popped the excess no block can be pushed
 * there, so the bin is the rest of that list and goes back onto the span
 * whole, in its order, after the span's free list when that is shorter.
 * The other case (over_capacity, run first) makes such a bin: blocks of
 * 512 bytes freed into the bin a capacity at a time, each lot given
 * back, then one malloc.  It then frees three blocks of that span (they
 * spill onto the span) and checks that the span's free list is those
 * three and then the bin's list as it was. */
#include "testutil.h"
#include "internal.h"

#include <pthread.h>

enum { SZ = 1024, WAVE = 1500, MAXS = 64, NREMOTE = 8 };
static void *blk[WAVE];
static void *remote_blk[NREMOTE];
static pthread_barrier_t bar;

static void *remote_thread(void *arg) {
  (void)arg;
  /* past the first allocations, which the shared fallback heap serves:
   * its blocks then come from the thread's own heap */
  enum { PAST_HEAPLESS = 64 }; /* > heap.c's HEAPLESS_ALLOCS */
  static void *first[PAST_HEAPLESS];
  for (int i = 0; i < PAST_HEAPLESS; i++) CHECK((first[i] = malloc(16)) != NULL);
  for (int i = 0; i < NREMOTE; i++) CHECK((remote_blk[i] = malloc(SZ)) != NULL);
  pthread_barrier_wait(&bar); /* its blocks are out */
  pthread_barrier_wait(&bar); /* main is done: the thread may end */
  for (int i = 0; i < PAST_HEAPLESS; i++) free(first[i]);
  return NULL;
}

/* the model of one span of this heap */
typedef struct {
  span_t *s;
  block_t *before[2048]; /* its free list before the flush */
  unsigned nbefore;
  block_t *binned[2048]; /* its blocks in the bin, in bin order */
  unsigned nbinned;
  uint32_t used;
} model_t;
static model_t m[MAXS];
static unsigned nm;

static model_t *model_of(span_t *s) {
  for (unsigned i = 0; i < nm; i++)
    if (m[i].s == s) return &m[i];
  CHECKF(nm < MAXS, "more than %d spans", MAXS);
  model_t *x = &m[nm++];
  x->s = s;
  x->used = s->used;
  for (block_t *b = s->free; b; b = block_next(b)) {
    CHECKF(x->nbefore < 2048, "span %p: free list longer than 2048", (void *)s);
    x->before[x->nbefore++] = b;
  }
  return x;
}

static span_t *span_of(void *p) { return pagemap_lookup(p); }

/* s's free list is rev[nrev - 1] .. rev[0] (pushed one by one: the last
 * pushed first), then fwd[0] .. fwd[nfwd - 1], and nothing after */
static void check_free_list(span_t *s, block_t *const *rev, unsigned nrev, block_t *const *fwd, unsigned nfwd) {
  unsigned j = 0;
  for (block_t *f = s->free; f; f = block_next(f), j++) {
    CHECKF(j < nrev + nfwd, "span %p: free list longer than %u", (void *)s, nrev + nfwd);
    block_t *want = j < nrev ? rev[nrev - 1 - j] : fwd[j - nrev];
    CHECKF(f == want, "span %p: free list block %u is %p, want %p (%u pushed, then %u as they were)", (void *)s,
           j, (void *)f, (void *)want, nrev, nfwd);
  }
  CHECKF(j == nrev + nfwd, "span %p: free list of %u blocks, want %u", (void *)s, j, nrev + nfwd);
}

/* the other case (above) */
static void over_capacity(void) {
  enum { OSZ = 512, ON = 600 };
  static void *p[ON];
  unsigned cls = size_class(OSZ);
  uint32_t cap0 = (uint32_t)(16384 / OSZ); /* heap.c's first capacity, BIN_FIRST_BYTES */
  for (int i = 0; i < ON; i++) CHECK((p[i] = malloc(OSZ)) != NULL);
  heap_t *h = lithe_tls_heap; /* (the first mallocs come from the shared heap) */
  CHECKF(h->bin_cap[cls] == cap0, "the %d-byte bin's capacity is %u, want its first, %u", OSZ, h->bin_cap[cls],
         cap0);
  /* a span no bigger than the capacity (the class's first) stays full:
   * the refill below must come from a bigger one; of the others every
   * tenth block stays */
  bool keep[ON];
  for (int i = 0; i < ON; i++) keep[i] = span_of(p[i])->capacity <= 2 * cap0 + 2 || i % 10 == 0;
  /* the rest freed a bin's room at a time, each lot given back to the
   * spans by lithe_collect: no free goes past the bin, so none counts as
   * a spill that would grow the capacity at the next refill */
  for (int i = 0; i < ON;) {
    int32_t room = lithe_tls_bins.bin_room[cls];
    for (; i < ON && room > 0; i++)
      if (!keep[i]) {
        free(p[i]);
        room--;
      }
    lithe_collect(false);
  }
  void *q = malloc(OSZ); /* a refill: the current span's whole list */
  CHECK(q != NULL);
  int32_t room = lithe_tls_bins.bin_room[cls];
  CHECKF(room < 0, "after the refill the bin's room is %d (capacity %u): not over it", room, h->bin_cap[cls]);
  block_t *head = lithe_tls_bins.bin[cls];
  span_t *s = span_of(head);
  static block_t *was[ON];
  unsigned n = 0;
  for (block_t *x = head; x; x = block_next(x)) {
    CHECKF(span_of(x) == s, "bin block %p not of the refill's span %p", (void *)x, (void *)s);
    CHECK(n < ON);
    was[n++] = x;
  }
  CHECKF((int64_t)n == (int64_t)h->bin_cap[cls] - room, "the bin holds %u blocks, its count says %lld", n,
         (long long)h->bin_cap[cls] - room);
  CHECKF(s->free == NULL, "span %p has a free list after the refill took it", (void *)s);
  /* three of s's kept blocks freed now spill onto s (the bin has no
   * room): its free list, shorter than the bin, goes first */
  block_t *spilt[3];
  unsigned ns = 0;
  for (int i = 0; i < ON && ns < 3; i++)
    if (keep[i] && span_of(p[i]) == s) {
      spilt[ns++] = p[i];
      keep[i] = false;
      free(p[i]);
    }
  CHECKF(ns == 3 && s->nfree == 3, "span %p: %u kept blocks freed, its free list holds %u", (void *)s, ns,
         s->nfree);
  uint32_t used = s->used;
  lithe_collect(false);
  CHECKF(atomic_load(&s->owner) == h, "span %p left the heap", (void *)s);
  CHECKF(s->used == used - n && s->nfree == n + ns, "span %p: used %u nfree %u, want %u and %u", (void *)s,
         s->used, s->nfree, used - n, n + ns);
  check_free_list(s, spilt, ns, was, n); /* the spilt ones, then the bin's */
#if LITHE_DEBUG
  lithe_verify();
#endif
  printf("a bin %d over its capacity of %u went back onto span %p whole, in its order, after the %u blocks "
         "spilt onto it\n",
         -room, h->bin_cap[cls], (void *)s, ns);
  free(q);
  for (int i = 0; i < ON; i++)
    if (keep[i]) free(p[i]);
}

int main(void) {
  over_capacity();
  unsigned cls = size_class(SZ);
  /* waves of mallocs and frees grow the bin past WAVE (a refill grows it
   * by the frees that spilled past it since the last) */
  for (int round = 0; round < 6; round++) {
    for (int i = 0; i < WAVE; i++) CHECK((blk[i] = malloc(SZ)) != NULL);
    for (int i = 0; i < WAVE; i++) free(blk[i]);
  }
  for (int i = 0; i < WAVE; i++) CHECK((blk[i] = malloc(SZ)) != NULL);
  heap_t *h = lithe_tls_heap;
  CHECKF(h->bin_cap[cls] >= WAVE, "bin capacity %u after the waves, want %d or more", h->bin_cap[cls], WAVE);
  lithe_collect(false); /* the bin empty, the waves' spans refiled */
  CHECKF(lithe_tls_bins.bin[cls] == NULL, "the bin holds blocks after lithe_collect");

  CHECK(pthread_barrier_init(&bar, NULL, 2) == 0);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, remote_thread, NULL) == 0);
  pthread_barrier_wait(&bar);

  /* this heap's spans and the blocks each has out, in address order */
  span_t *spans[MAXS];
  unsigned ns = 0, out[MAXS] = {0};
  for (int i = 0; i < WAVE; i++) {
    span_t *s = span_of(blk[i]);
    CHECKF(atomic_load(&s->owner) == h, "block %p: not this heap's", blk[i]);
    unsigned k = 0;
    while (k < ns && spans[k] != s) k++;
    if (k == ns) {
      CHECK(ns < MAXS);
      spans[ns++] = s;
    }
    out[k]++;
  }
  /* the cases' spans: a full one whose blocks are all ours, two more,
   * one to empty (not the current span, which is never released; full or
   * not) */
  int full = -1, mixed_a = -1, mixed_b = -1, empty = -1;
  for (unsigned k = 0; k < ns; k++) {
    span_t *s = spans[k];
    bool all_ours = out[k] == s->used;
    if (full < 0 && s->full && all_ours && s->used > s->capacity / 16 + 2) full = (int)k;
    else if (empty < 0 && all_ours && h->current[cls] != s) empty = (int)k;
    else if (mixed_a < 0) mixed_a = (int)k;
    else if (mixed_b < 0) mixed_b = (int)k;
  }
  CHECKF(full >= 0 && mixed_a >= 0 && mixed_b >= 0 && empty >= 0,
         "spans for the cases not found among %u: full %d mixed %d/%d empty %d", ns, full, mixed_a, mixed_b,
         empty);
  printf("%u spans of %u-byte blocks; full span %p (%u of %u out), empty span %p (%u out)\n", ns,
         (unsigned)SZ, (void *)spans[full], spans[full]->used, spans[full]->capacity, (void *)spans[empty],
         spans[empty]->used);

  /* the frees, in the order the bin will hold them reversed (LIFO): the
   * first freed ends the bin */
  void *order[WAVE + NREMOTE];
  unsigned no = 0;
  unsigned half = spans[full]->used / 2; /* past its 1/16, and it stays in use */
  for (int i = 0; i < WAVE && no < half; i++)
    if (span_of(blk[i]) == spans[full]) order[no++] = blk[i];
  void *a[WAVE], *b[WAVE];
  unsigned na = 0, nb = 0;
  for (int i = 0; i < WAVE; i++) {
    if (span_of(blk[i]) == spans[mixed_a] && na < WAVE) a[na++] = blk[i];
    if (span_of(blk[i]) == spans[mixed_b] && nb < WAVE) b[nb++] = blk[i];
  }
  unsigned pairs = nb < na - NREMOTE - 1 ? nb : na - NREMOTE - 1; /* a's last for the remote case */
  CHECKF(na > NREMOTE + 1 && pairs >= 8, "span a has %u blocks out, span b %u", na, nb);
  for (unsigned i = 0; i < pairs; i++) {
    order[no++] = a[i];
    order[no++] = b[i];
  }
  for (int i = 0; i < WAVE; i++)
    if (span_of(blk[i]) == spans[empty]) order[no++] = blk[i];
  /* remote blocks between blocks of one span: a's next ones */
  unsigned ra = pairs;
  for (int r = 0; r < NREMOTE; r++) {
    order[no++] = a[ra++];
    order[no++] = remote_blk[r];
  }
  order[no++] = a[ra++];
  int32_t room0 = lithe_tls_bins.bin_room[cls];
  CHECKF(room0 >= (int32_t)no, "bin room %d for %u frees", room0, no);
  for (unsigned i = 0; i < no; i++) free(order[i]);

  /* the model: each span of this heap, its list before and its blocks in
   * the bin; the other heap's blocks counted apart */
  unsigned nbin = 0, nremote = 0;
  for (block_t *x = lithe_tls_bins.bin[cls]; x; x = block_next(x), nbin++) {
    span_t *s = span_of(x);
    if (atomic_load(&s->owner) != h) {
      nremote++;
      continue;
    }
    model_t *mm = model_of(s);
    CHECK(mm->nbinned < 2048);
    mm->binned[mm->nbinned++] = x;
  }
  CHECKF(nbin == no, "the bin holds %u blocks, %u were freed into it", nbin, no);
  CHECKF(nremote == NREMOTE, "%u of the other heap's blocks in the bin, want %d", nremote, NREMOTE);
  model_t *me = model_of(spans[empty]), *mf = model_of(spans[full]);
  CHECKF(me->nbinned == me->used, "the span to empty has %u blocks out, %u in the bin", me->used, me->nbinned);

  lithe_collect(false);
  CHECKF(lithe_tls_bins.bin[cls] == NULL, "the bin holds blocks after lithe_collect");
  for (unsigned i = 0; i < nm; i++) {
    model_t *x = &m[i];
    if (x == me) continue;
    span_t *s = x->s;
    CHECKF(atomic_load(&s->owner) == h, "span %p left the heap (%u blocks out before, %u in the bin)",
           (void *)s, x->used, x->nbinned);
    CHECKF(s->used == x->used - x->nbinned, "span %p: used %u, want %u - %u", (void *)s, s->used, x->used,
           x->nbinned);
    CHECKF(s->nfree == x->nbefore + x->nbinned, "span %p: nfree %u, want %u + %u", (void *)s, s->nfree,
           x->nbefore, x->nbinned);
    check_free_list(s, x->binned, x->nbinned, x->before, x->nbefore); /* the bin's, then the list before */
  }
  CHECKF(!spans[full]->full, "the full span %p is still filed as full after %u of its %u blocks came back",
         (void *)spans[full], mf->nbinned, mf->s->capacity);
  span_t *gone = pagemap_lookup(me->binned[0]);
  CHECKF(gone != spans[empty] || atomic_load(&gone->owner) != h || gone->kind != SPAN_SMALL,
         "the emptied span %p is still this heap's small span", (void *)spans[empty]);
#if LITHE_DEBUG
  lithe_verify();
#endif
  printf("%u blocks given back (%u of another heap): every span's free list as block-by-block pushes leave it\n",
         nbin, nremote);
  pthread_barrier_wait(&bar); /* the other heap's spans stay its own until here */
  CHECK(pthread_join(th, NULL) == 0);
  for (int i = 0; i < WAVE; i++) {
    bool freed = false;
    for (unsigned k = 0; k < no && !freed; k++) freed = order[k] == blk[i];
    if (!freed) free(blk[i]);
  }
  return 0;
}
