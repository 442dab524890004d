/* SPDX-License-Identifier: MIT */
/* introspect.c — glibc's introspection calls, answered with lithe's
 * figures: mallinfo2, mallinfo, malloc_stats, malloc_info, mallopt; plus
 * the C23 free_aligned_sized and the malloc_size alias.  Programs and
 * tools that call these under LD_PRELOAD or -llithe would otherwise read
 * glibc's own (unused) heap and see zeros.
 *
 * The figures come from one pass over the arenas (heap_walk, stats.c, under
 * pages_lock) and from the OS counters of lithe_stats_get:
 *   mallinfo2.arena     committed bytes outside xlarge mappings (arenas,
 *                       pagemap, metadata): glibc's "non-mmapped space"
 *   mallinfo2.hblks/hblkhd  live xlarge objects / their mapped bytes
 *   mallinfo2.uordblks  bytes of live small blocks (their class size) and
 *                       large objects (whole pages)
 *   mallinfo2.fordblks  arena - uordblks (free blocks, free runs, metadata)
 *   mallinfo2.ordblks   free page runs in the page heap
 *   mallinfo2.keepcost  bytes of free runs not yet given back to the OS
 *                       (what malloc_trim would return now)
 *   smblks, usmblks, fsmblks: 0 (no fastbins; usmblks is 0 in glibc too).
 * Nothing here holds a lock while writing to a FILE: the walk copies its
 * figures out first, since stdio may allocate (and so re-enter lithe). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

/* ---- mallinfo ------------------------------------------------------------ */

static struct mallinfo2 info_from(const lithe_stats_t *st, const heap_walk_t *w) {
  struct mallinfo2 mi;
  memset(&mi, 0, sizeof mi);
  size_t in_arenas = st->committed > st->xlarge_bytes ? st->committed - st->xlarge_bytes : 0;
  mi.arena = in_arenas;
  mi.ordblks = w->free_runs;
  mi.hblks = st->xlarge_live;
  mi.hblkhd = st->xlarge_bytes;
  mi.uordblks = w->small_live_bytes + w->large_bytes;
  mi.fordblks = in_arenas > mi.uordblks ? in_arenas - mi.uordblks : 0;
  mi.keepcost = w->free_dirty_bytes + w->large_cached_bytes; /* (both malloc_trim's) */
  return mi;
}

static void snapshot(lithe_stats_t *st, heap_walk_t *w) {
  heap_walk(w);
  lithe_stats_get(st);
}

LITHE_API struct mallinfo2 mallinfo2(void) {
  lithe_stats_t st;
  heap_walk_t w;
  snapshot(&st, &w);
  return info_from(&st, &w);
}

/* The old int fields saturate at INT_MAX instead of wrapping (glibc wraps). */
static int sat(size_t v) { return v > (size_t)__INT_MAX__ ? __INT_MAX__ : (int)v; }

LITHE_API struct mallinfo mallinfo(void) {
  struct mallinfo2 m = mallinfo2();
  struct mallinfo o;
  o.arena = sat(m.arena);
  o.ordblks = sat(m.ordblks);
  o.smblks = sat(m.smblks);
  o.hblks = sat(m.hblks);
  o.hblkhd = sat(m.hblkhd);
  o.usmblks = sat(m.usmblks);
  o.fsmblks = sat(m.fsmblks);
  o.uordblks = sat(m.uordblks);
  o.fordblks = sat(m.fordblks);
  o.keepcost = sat(m.keepcost);
  return o;
}

/* ---- malloc_stats: glibc's lines, on stderr ------------------------------ */
/* glibc prints per-arena and total "system bytes" / "in use bytes", then
 * the maxima of its mmap'ed chunks.  lithe has one page heap ("Arena 0"
 * holds all arenas) and keeps no maxima: the last two lines are the
 * current xlarge (own mapping) figures, and say so. */
LITHE_API void malloc_stats(void) {
  lithe_stats_t st;
  heap_walk_t w;
  snapshot(&st, &w);
  struct mallinfo2 m = info_from(&st, &w);
  fprintf(stderr, "Arena 0:\n");
  fprintf(stderr, "system bytes     = %10zu\n", m.arena);
  fprintf(stderr, "in use bytes     = %10zu\n", m.uordblks);
  fprintf(stderr, "Total (incl. mmap):\n");
  fprintf(stderr, "system bytes     = %10zu\n", m.arena + m.hblkhd);
  fprintf(stderr, "in use bytes     = %10zu\n", m.uordblks + m.hblkhd);
  fprintf(stderr, "mmap regions     = %10zu\n", m.hblks);
  fprintf(stderr, "mmap bytes       = %10zu\n", m.hblkhd);
  fflush(stderr);
}

/* ---- malloc_info: glibc's XML ------------------------------------------- */
/* glibc lists free chunks by bin in <sizes>; lithe lists, per size class
 * with any span, the free (not handed out) blocks: from/to are the sizes the
 * class serves, total their bytes, count their number.  "rest" is free
 * blocks plus free page runs; "mmap" the xlarge objects; <system> the
 * committed bytes; <aspace type="total"> the reserved address space. */
LITHE_API int malloc_info(int options, FILE *fp) {
  if (options != 0 || fp == NULL) {
    errno = EINVAL;
    return -1;
  }
  lithe_stats_t st;
  heap_walk_t w;
  snapshot(&st, &w);
  struct mallinfo2 m = info_from(&st, &w);
  size_t rest_count = w.free_runs, rest_bytes = w.free_bytes + w.small_free_bytes;
  fprintf(fp, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
  for (unsigned c = 1; c < NCLASSES; c++) {
    if (!w.cls[c].spans) continue;
    size_t from = class_size[c - 1] + 1, to = class_size[c];
    if (c == 1) from = 1;
    fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n", from, to,
            w.cls[c].blocks_free * to, w.cls[c].blocks_free);
    rest_count += w.cls[c].blocks_free;
  }
  fprintf(fp, "</sizes>\n");
  fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", rest_count, rest_bytes);
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n", m.arena);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n", st.reserved - m.hblkhd);
  fprintf(fp, "<aspace type=\"mprotect\" size=\"%zu\"/>\n", m.arena);
  fprintf(fp, "</heap>\n");
  fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", rest_count, rest_bytes);
  fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", m.hblks, m.hblkhd);
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n", st.committed);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n", st.reserved);
  fprintf(fp, "<aspace type=\"mprotect\" size=\"%zu\"/>\n", st.committed);
  fprintf(fp, "</malloc>\n");
  return 0;
}

/* ---- mallopt ------------------------------------------------------------ */
/* Every glibc parameter is accepted (returns 1, as glibc does for valid
 * ones).  One has an effect:
 *   M_TRIM_THRESHOLD  glibc trims the heap top once this much is free; lithe
 *                     gives free pages back after LITHE_PURGE_DELAY_MS
 *                     instead, so: -1 (glibc: never trim) = never purge on
 *                     its own (delay -1); 0 = purge at once (delay 0); any
 *                     other value = the delay set by the environment (or its
 *                     default).
 * Ignored: M_MMAP_THRESHOLD (lithe maps objects of its own above its large
 * limit, 1 MiB, and unmaps them at free already),
 * M_TOP_PAD, M_MMAP_MAX, M_CHECK_ACTION (misuse: LITHE_ON_ERROR),
 * M_PERTURB, M_ARENA_TEST, M_ARENA_MAX (lithe has a heap per thread),
 * M_MXFAST (no fastbins). */
static long env_purge_delay;
static pthread_once_t env_delay_once = PTHREAD_ONCE_INIT;
static void save_env_delay(void) { env_purge_delay = lithe_opt.purge_delay_ms; }

LITHE_API int mallopt(int param, int value) {
  lithe_process_init(); /* the options are read first, or they would undo this */
  pthread_once(&env_delay_once, save_env_delay);
  if (param == M_TRIM_THRESHOLD) {
    long delay = value == -1 ? -1 : value == 0 ? 0 : env_purge_delay;
    /* read without a lock by the page heap: a whole-word store */
    __atomic_store_n(&lithe_opt.purge_delay_ms, delay, __ATOMIC_RELAXED);
  }
  return 1;
}

/* ---- C23 and other platforms' names -------------------------------------- */

/* free_aligned_sized(p, alignment, size): p came from aligned_alloc. */
LITHE_API void lithe_free_aligned_sized(void *p, size_t alignment, size_t size) {
  (void)alignment;
  lt_free_sized(p, size);
}
LITHE_API void free_aligned_sized(void *p, size_t alignment, size_t size)
    __attribute__((alias("lithe_free_aligned_sized")));

/* macOS / FreeBSD spelling of malloc_usable_size */
LITHE_API size_t malloc_size(const void *p) { return lt_malloc_usable_size(p); }
