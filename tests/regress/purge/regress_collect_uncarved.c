/* SPDX-License-Identifier: MIT */
/* regress_collect_uncarved — lithe_collect(true) gives back the pages of a
 * span in use past its carve point.
 *
 * A small span cut from dirty free pages is resident whole from its first
 * block on, though the blocks past the carve point were never handed out.
 * The purge thread showed it: glibc calloc's the thread's TLS vector (one
 * 320-byte block) from the thread that starts it, that block's span of 64
 * KiB came from pages the program had just freed, and after
 * lithe_collect(true) the process kept 64 KiB more with the thread than
 * without (288 against 216 kB RssAnon after freeing 20 MB of 4 KiB blocks;
 * 228 with the fix, the rest the thread's stack that glibc caches).
 * Here: 16 MiB of 4 KiB blocks written and freed (dirty free runs, kept
 * by LITHE_PURGE_DELAY_MS=60000; the purge thread is off so that its TLS
 * vector does not take the first 320-byte block), then one block of 320
 * bytes, the first of a fresh span; its span's pages past the first are
 * resident before the collection and none of them after; the block keeps
 * its content, and the span carves on (zeroed calloc blocks).  Needs
 * lithe.
 *
 * What the tests check, in detail:
 *
 * `regress_collect_uncarved`: with `LITHE_PURGE_DELAY_MS=60000
 * LITHE_PURGE_THREAD=0`: 16 MiB of 4 KiB blocks written and freed, then one
 * 320-byte block, the first of a 64 KiB span cut from those dirty pages:
 * its 15 pages past the first resident before `lithe_collect(true)`, none
 * after (15 before the fix); the block keeps its bytes, and the span's next
 * 203 callocs are zero */
#include "testutil.h"

#define SIZE 320
#define NBLK 4096
#define BLK 4096

static void *blk[NBLK];

/* resident OS pages of [p, p + n) (p page-aligned) */
static long resident_pages(char *p, size_t n) {
  long ps = sysconf(_SC_PAGESIZE);
  static unsigned char vec[1024];
  size_t np = n / (size_t)ps;
  CHECKF(np <= sizeof vec, "%zu pages: more than the test's %zu", np, sizeof vec);
  CHECKF(mincore(p, n, vec) == 0, "mincore(%p, %zu): %s", (void *)p, n, strerror(errno));
  long r = 0;
  for (size_t i = 0; i < np; i++) r += vec[i] & 1;
  return r;
}

int main(void) {
  tu_require_lithe();
  for (int i = 0; i < NBLK; i++) {
    blk[i] = malloc(BLK);
    CHECK(blk[i] != NULL);
    memset(blk[i], 0xa5, BLK);
  }
  for (int i = 0; i < NBLK; i++) free(blk[i]);

  unsigned char *p = malloc(SIZE);
  CHECK(p != NULL);
  memset(p, 0x3c, SIZE);
  char line[512];
  CHECKF(tu_json_class_line(tu_stats_json(), SIZE, line, sizeof line), "no class line of %d B", SIZE);
  long span = tu_json_field(line, "span_bytes"), spans = tu_json_field(line, "spans");
  CHECKF(spans == 1 && span >= 32768, "the %d-byte class has %ld spans of %ld bytes: expected one of >= 32 KiB",
         SIZE, spans, span);
  CHECKF(((uintptr_t)p & 8191) == 0, "block %p is not a fresh span's first (8 KiB-aligned) block", (void *)p);
  long ps = sysconf(_SC_PAGESIZE);
  char *tail = (char *)p + ps;
  size_t tail_len = (size_t)span - (size_t)ps;
  long before = resident_pages(tail, tail_len);
  lithe_collect(true);
  long after = resident_pages(tail, tail_len);
  printf("span of %ld bytes, one %d-byte block carved: %ld of its %zu pages past the first resident before "
         "lithe_collect(true), %ld after\n",
         span, SIZE, before, tail_len / (size_t)ps, after);
  CHECKF(before > 0, "setup: no page of the span past the first was resident (%ld of %zu): it was not cut "
         "from dirty free pages, so the test proves nothing", before, tail_len / (size_t)ps);
  CHECKF(after == 0, "%ld of the span's %zu uncarved pages still resident after lithe_collect(true)", after,
         tail_len / (size_t)ps);
  for (int i = 0; i < SIZE; i++) CHECKF(p[i] == 0x3c, "byte %d of the live block is %#x after the collection", i, p[i]);

  /* the span carves on over the purged pages */
  long carved = 0;
  for (int i = 0; i < NBLK && carved < span / SIZE - 1; i++) {
    unsigned char *q = calloc(1, SIZE);
    CHECK(q != NULL);
    for (int j = 0; j < SIZE; j++) CHECKF(q[j] == 0, "calloc'd block %p: byte %d is %#x", (void *)q, j, q[j]);
    memset(q, 0x77, SIZE);
    blk[i] = q;
    carved += (char *)q >= (char *)p && (char *)q < (char *)p + span;
  }
  CHECKF(carved == span / SIZE - 1, "%ld blocks of the span handed out after it, expected %ld", carved,
         span / SIZE - 1);
  return 0;
}
