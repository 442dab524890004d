/* SPDX-License-Identifier: MIT */
/* regress_meta_purge [child CASE] (white box: linked with liblithe.a) —
 * lithe_collect(true) gives back the pages of span descriptors that are
 * all free, and a stale pointer whose descriptor page went back is still
 * reported as misuse.
 *
 * Before: descriptors were never given back (medium, ~1 GiB of 1-8 KiB
 * blocks, kept 7.1 MB of them resident after lithe_collect(true), where
 * glibc's malloc_trim(0) leaves 128 kB of the whole process).
 *
 * Setup (in the test and in each child): NBLK large blocks side by side,
 * one descriptor each, and a live block after them, so that the run they
 * leave stays under the arena's bump pointer with its pages' pagemap
 * entries naming the freed descriptors; all NBLK freed (each free merges
 * into the run before it and frees its descriptor), lithe_collect(true).
 * The test checks that the metadata count fell by the descriptor pages,
 * that the page of a block's old descriptor is no longer resident
 * (mincore) and reads as zero (kind 0, carved_lim 0: "no block here"),
 * that the blocks can be allocated again (their descriptors come from the
 * purged pages), and, in children, that free() and realloc() of a stale
 * block start and free() of a stale interior pointer die by SIGABRT with a
 * report naming the operation and the address.
 *
 * What the tests check, in detail:
 *
 * `regress_meta_purge`: (white box, liblithe.a; Debug: with `lithe_verify`)
 * 1,200 large blocks side by side below a live one, freed,
 * `lithe_collect(true)`: the metadata count falls by >= 3/4 of their
 * descriptors' bytes (prints it and RssAnon), the page of a freed
 * descriptor in the middle is not resident (mincore) and reads as zero
 * while the freed run's stale pagemap entry still names it; the blocks
 * allocated again take the purged pages (metadata no higher than before),
 * contents kept; a second collection with nothing freed changes nothing; in
 * children, `free` and `realloc` of the old block start ("double free") and
 * `free` of an interior pointer ("not allocated by lithe") die by SIGABRT
 * with a report naming the operation and the address (descriptors were
 * never given back: medium kept 7.1 MB of them) */
#include "testutil.h"
#include <sys/mman.h>
#include "internal.h"

#define NBLK 1200
#define BLK (5 * PAGE_SIZE) /* large: a page run of its own, one descriptor */

static char *blk[NBLK];
static char *guard;
static long rss_before, rss_after; /* RssAnon around the collection, kB */

/* the descriptor of block NBLK / 2 before the frees (the stale one) */
static span_t *setup(lithe_stats_t *before, lithe_stats_t *after) {
  for (int i = 0; i < NBLK; i++) CHECK((blk[i] = malloc(BLK)) != NULL);
  guard = malloc(BLK);
  CHECK(guard != NULL);
  memset(guard, 7, BLK);
  char *mid = blk[NBLK / 2];
  span_t *d = pagemap_lookup(mid);
  CHECKF(d && d->kind == SPAN_LARGE && d->start == mid, "block %p: descriptor %p", (void *)mid, (void *)d);
  CHECKF(pagemap_lookup(guard)->arena == d->arena && guard > mid, "the live block %p is not above %p in its arena",
         (void *)guard, (void *)mid);
  for (int i = 0; i < NBLK; i++) free(blk[i]);
  lithe_stats_get(before);
  rss_before = tu_status_kb("RssAnon");
  lithe_collect(true);
  rss_after = tu_status_kb("RssAnon");
  lithe_stats_get(after);
  return d;
}

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

static int child(const char *cas) {
  lithe_stats_t b, a;
  setup(&b, &a);
  char *p = blk[NBLK / 2];
  if (strcmp(cas, "free") == 0) {
    announce(p);
    free(p);
  } else if (strcmp(cas, "realloc") == 0) {
    announce(p);
    p = realloc(p, 100);
  } else if (strcmp(cas, "free_interior") == 0) {
    announce(p + 48);
    free(p + 48);
  } else {
    FAIL("unknown case %s", cas);
  }
  printf("after: let through (%p)\n", (void *)p);
  return 0;
}

static const struct {
  const char *name, *op, *kind;
} cases[] = {
    {"free", "free", "double free"},
    {"realloc", "realloc", "double free"},
    {"free_interior", "free", "not allocated by lithe"},
};

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  tu_require_lithe();
  size_t ps = os_page_size();
  lithe_stats_t before, after;
  span_t *d = setup(&before, &after);
  char *page = (char *)((uintptr_t)d & ~(uintptr_t)(ps - 1));
  unsigned char vec = 1;
  CHECK(mincore(page, ps, &vec) == 0);
  printf("%d descriptors freed: metadata %zu -> %zu bytes, purged %zu -> %zu bytes; RssAnon %ld -> %ld kB; "
         "descriptor page %p resident: %d\n",
         NBLK, before.metadata, after.metadata, before.purged, after.purged, rss_before, rss_after, (void *)page, vec & 1);
  /* NBLK descriptors: at least 3/4 of their bytes go (meta.c gives back
   * whole units of 64, and the last unit holds live ones too) */
  size_t want = (size_t)NBLK * sizeof(span_t) / 4 * 3;
  CHECKF(before.metadata - after.metadata >= want, "metadata fell by %zu bytes, want >= %zu",
         before.metadata - after.metadata, want);
  CHECKF(after.purged >= before.purged + want, "purged grew by %zu bytes, want >= %zu", after.purged - before.purged,
         want);
  CHECKF(!(vec & 1), "the page %p of a freed descriptor is still resident", (void *)page);
  CHECKF(d->kind == 0 && span_carved_lim(d) == 0 && d->bytes == 0 && d->start == NULL,
         "a purged descriptor reads kind %d, carved_lim %llu, bytes %zu, start %p", d->kind,
         (unsigned long long)span_carved_lim(d), d->bytes, (void *)d->start);
  CHECKF(pagemap_lookup(blk[NBLK / 2]) == d, "the stale entry of %p no longer names %p", (void *)blk[NBLK / 2],
         (void *)d);
#if LITHE_DEBUG
  lithe_verify();
#endif
  /* allocated again: descriptors from the purged pages, contents kept */
  for (int i = 0; i < NBLK; i++) {
    CHECK((blk[i] = malloc(BLK)) != NULL);
    memset(blk[i], i & 255, BLK);
  }
  lithe_stats_t again;
  lithe_stats_get(&again);
  printf("allocated again: metadata %zu bytes, purged %zu\n", again.metadata, again.purged);
  CHECKF(again.metadata <= before.metadata, "metadata %zu above the %zu of before: the purged pages were not reused",
         again.metadata, before.metadata);
  for (int i = 0; i < NBLK; i++)
    for (size_t k = 0; k < BLK; k += 4096) CHECKF((unsigned char)blk[i][k] == (i & 255), "block %d byte %zu", i, k);
  for (size_t k = 0; k < BLK; k++) CHECK(guard[k] == 7);
#if LITHE_DEBUG
  lithe_verify();
#endif
  for (int i = 0; i < NBLK; i++) free(blk[i]);
  lithe_collect(true);
  /* a second collection with nothing freed since finds nothing to do */
  lithe_stats_get(&before);
  lithe_collect(true);
  lithe_stats_get(&after);
  CHECKF(after.metadata == before.metadata, "metadata %zu -> %zu", before.metadata, after.metadata);
#if LITHE_DEBUG
  lithe_verify();
#endif
  free(guard);

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    static tu_child r;
    char how[64];
    tu_run_self_child(&r, cases[i].name, how, sizeof how);
    tu_expect_report(&r, how, cases[i].op, cases[i].kind);
  }
  printf("stale pointers into freed runs whose descriptor pages went back are reported\n");
  return 0;
}
