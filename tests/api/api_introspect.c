/* SPDX-License-Identifier: MIT */
/* api_introspect: glibc's introspection calls answer with lithe's figures
 * (src/introspect.c), which agree with lithe_stats_get and with the
 * kernel's /proc/self/status:
 *   mallinfo2: hblks/hblkhd = xlarge live/bytes; arena + hblkhd = committed;
 *     uordblks grows by exactly the class bytes of the small blocks made and
 *     the pages of the large ones, and returns to its start when they are
 *     freed; VmRSS grows with it; VmData covers arena + hblkhd;
 *   mallinfo saturates at INT_MAX (a 2.5 GiB xlarge block);
 *   malloc_stats (stderr) and malloc_info (XML) print the same figures;
 *   mallopt accepts glibc's parameters; M_TRIM_THRESHOLD 0 / other maps to
 *     the purge delay (free page runs given back at once / after the delay);
 *   free_aligned_sized, malloc_size.
 * Single-threaded, so every snapshot is exact.  Needs lithe.
 *
 * What the tests check, in detail:
 *
 * `api_introspect`: `mallinfo2` against `lithe_stats_get` (hblks / hblkhd =
 * xlarge live / bytes, arena + hblkhd = committed) and `/proc/self/status`
 * (VmData covers arena + hblkhd; 200,000 x 256 B + 3 x 1 MiB raise uordblks
 * by exactly 54,345,728 and VmRSS by 95..110 % of it); all freed: uordblks
 * back to its start; `mallinfo` saturates (2.5 GiB xlarge); `malloc_stats`
 * and `malloc_info` (glibc's XML) print the same figures; `mallopt` takes
 * every glibc parameter, `M_TRIM_THRESHOLD` 0 purges at once (keepcost 0),
 * another value restores the delay; `free_aligned_sized`, `malloc_size` */
#include "testutil.h"
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include "procstatus.h"

static char status[16384];
static long vm_kb(const char *key) {
  procstatus_read(status, sizeof status);
  return procstatus_kb(status, key);
}

static void show(const char *when, const struct mallinfo2 *m) {
  printf("%-22s arena %zu ordblks %zu hblks %zu hblkhd %zu uordblks %zu fordblks %zu keepcost %zu\n",
         when, m->arena, m->ordblks, m->hblks, m->hblkhd, m->uordblks, m->fordblks, m->keepcost);
}

/* mallinfo2 against lithe_stats_get, taken back to back with nothing between */
static void agree(const char *when, struct mallinfo2 *out) {
  struct mallinfo2 m = mallinfo2();
  lithe_stats_t st;
  lithe_stats_get(&st);
  show(when, &m);
  CHECKF(m.hblks == st.xlarge_live, "%s: hblks %zu, xlarge_live %zu", when, m.hblks, st.xlarge_live);
  CHECKF(m.hblkhd == st.xlarge_bytes, "%s: hblkhd %zu, xlarge_bytes %zu", when, m.hblkhd, st.xlarge_bytes);
  CHECKF(m.arena + m.hblkhd == st.committed, "%s: arena %zu + hblkhd %zu != committed %zu", when,
         m.arena, m.hblkhd, st.committed);
  CHECKF(m.uordblks + m.fordblks == m.arena, "%s: uordblks + fordblks != arena", when);
  long data = vm_kb("VmData");
  CHECKF((long)((m.arena + m.hblkhd) >> 10) <= data, "%s: arena + hblkhd %zu kB > VmData %ld kB",
         when, (m.arena + m.hblkhd) >> 10, data);
  *out = m;
}

/* the number after `key` on the line that follows `section` in text */
static size_t figure_after(const char *text, const char *section, const char *key) {
  const char *p = strstr(text, section);
  if (!p) return (size_t)-1;
  p = strstr(p, key);
  if (!p) return (size_t)-1;
  p += strlen(key);
  while (*p == ' ' || *p == '=' || *p == '"') p++;
  return (size_t)strtoull(p, NULL, 10);
}

int main(void) {
  tu_require_lithe();
  setvbuf(stdout, NULL, _IONBF, 0);
  enum { N = 200000, SZ = 256, NL = 3 };
  static void *small[N], *large[NL];
  const size_t LARGE = 1 << 20; /* 128 pages of 8 KiB: usable size exactly 1 MiB */

  lithe_collect(true);
  struct mallinfo2 m0, m1, m2, m3;
  agree("start", &m0);
  long rss0 = vm_kb("VmRSS");

  for (int i = 0; i < N; i++) {
    small[i] = malloc(SZ);
    CHECK(small[i] != NULL);
    memset(small[i], i & 0xff, SZ);
  }
  for (int i = 0; i < NL; i++) {
    large[i] = malloc(LARGE);
    CHECK(large[i] != NULL);
    memset(large[i], 1, LARGE);
  }
  struct mallinfo2 mm = mallinfo2(); /* before anything else allocates */
  long rss1 = vm_kb("VmRSS");
  agree("after 51 MiB small+3M", &m1);
  size_t want = (size_t)N * SZ + NL * LARGE;
  CHECKF(mm.uordblks - m0.uordblks == want, "uordblks grew by %zu, want %zu (%d x %d + %d x 1 MiB)",
         mm.uordblks - m0.uordblks, want, N, SZ, NL);
  long drss = rss1 - rss0;
  printf("uordblks +%zu kB, VmRSS +%ld kB\n", (mm.uordblks - m0.uordblks) >> 10, drss);
  CHECKF(drss >= (long)(want >> 10) * 95 / 100 && drss <= (long)(want >> 10) * 110 / 100 + 2048,
         "VmRSS grew by %ld kB for %zu kB of blocks", drss, want >> 10);

  /* xlarge: own mappings, hblks / hblkhd; 2.5 GiB (untouched) saturates mallinfo */
  void *x1 = malloc(40u << 20), *x2 = malloc(40u << 20);
  CHECK(x1 && x2);
  agree("+2 xlarge 40 MiB", &m2);
  CHECKF(m2.hblks == m1.hblks + 2 && m2.hblkhd >= m1.hblkhd + (80u << 20),
         "hblks %zu -> %zu, hblkhd %zu -> %zu", m1.hblks, m2.hblks, m1.hblkhd, m2.hblkhd);
  void *huge = malloc((size_t)5 << 29);
  CHECK(huge != NULL);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
  struct mallinfo2 big = mallinfo2();
  printf("2.5 GiB xlarge: mallinfo2.hblkhd %zu, mallinfo.hblkhd %d\n", big.hblkhd, old.hblkhd);
  CHECKF(big.hblkhd > (size_t)INT_MAX && old.hblkhd == INT_MAX, "mallinfo.hblkhd %d does not saturate",
         old.hblkhd);
  CHECKF(old.hblks == (int)big.hblks && old.uordblks == (int)big.uordblks, "mallinfo fields differ");
  free(huge);

  /* malloc_stats: glibc's lines on stderr, lithe's figures */
  char path[] = "/tmp/lithe-introspect.XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  int saved = dup(2);
  dup2(fd, 2);
  struct mallinfo2 ms = mallinfo2();
  malloc_stats();
  dup2(saved, 2);
  close(saved);
  static char text[65536];
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  CHECK(n > 0);
  text[n] = 0;
  printf("malloc_stats:\n%s", text);
  CHECKF(figure_after(text, "Arena 0:", "in use bytes") == ms.uordblks, "Arena 0 in use %zu, uordblks %zu",
         figure_after(text, "Arena 0:", "in use bytes"), ms.uordblks);
  CHECKF(figure_after(text, "Total (incl. mmap):", "system bytes") == ms.arena + ms.hblkhd,
         "total system bytes != arena + hblkhd");
  CHECKF(figure_after(text, "Total (incl. mmap):", "in use bytes") == ms.uordblks + ms.hblkhd,
         "total in use bytes != uordblks + hblkhd");
  CHECKF(figure_after(text, "", "mmap regions") == ms.hblks, "mmap regions != hblks");

  /* malloc_info: glibc's XML shape; a static buffer so stdio allocates nothing */
  static char xbuf[65536];
  memset(xbuf, 0, sizeof xbuf);
  FILE *xf = fmemopen(xbuf, sizeof xbuf - 1, "w");
  CHECK(xf != NULL);
  setvbuf(xf, NULL, _IONBF, 0);
  struct mallinfo2 mx = mallinfo2();
  lithe_stats_t sx;
  lithe_stats_get(&sx);
  CHECK(malloc_info(0, xf) == 0);
  fclose(xf);
  printf("malloc_info: %zu bytes of XML, first lines:\n%.300s...\n", strlen(xbuf), xbuf);
  CHECK(strncmp(xbuf, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", 42) == 0);
  CHECK(strstr(xbuf, "</sizes>") && strstr(xbuf, "</heap>") && strstr(xbuf, "</malloc>\n"));
  CHECK(strstr(xbuf, "<size from=\"225\" to=\"256\" total=\"0\" count=\"0\"/>") != NULL); /* the 256-byte class: all handed out */
  char want_mmap[128];
  snprintf(want_mmap, sizeof want_mmap, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>", mx.hblks,
           mx.hblkhd);
  CHECKF(strstr(xbuf, want_mmap) != NULL, "no '%s' in malloc_info", want_mmap);
  char want_sys[128];
  snprintf(want_sys, sizeof want_sys, "</heap>\n<total type=\"fast\" count=\"0\" size=\"0\"/>");
  CHECK(strstr(xbuf, want_sys) != NULL);
  CHECKF(figure_after(xbuf, "</heap>", "<system type=\"current\" size=") == sx.committed,
         "malloc_info system current %zu, committed %zu",
         figure_after(xbuf, "</heap>", "<system type=\"current\" size="), sx.committed);
  errno = 0;
  CHECK(malloc_info(1, stdout) == -1 && errno == EINVAL);

  /* everything freed: uordblks back where it started */
  for (int i = 0; i < N; i++) free(small[i]);
  for (int i = 0; i < NL; i++) free(large[i]);
  free(x1);
  free(x2);
  agree("all freed", &m3);
  CHECKF(m3.uordblks == m0.uordblks, "uordblks %zu after freeing all, %zu at start", m3.uordblks,
         m0.uordblks);
  CHECKF(m3.hblks == m0.hblks, "hblks %zu after freeing all", m3.hblks);

  /* mallopt: accepted; M_TRIM_THRESHOLD 0 = purge at once, other = the delay */
  int params[] = {M_MXFAST, M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX,
                  M_CHECK_ACTION, M_PERTURB, M_ARENA_TEST, M_ARENA_MAX};
  lithe_collect(true);
  CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1);
  void *l = malloc(LARGE); /* a page run (keepcost counts free runs) */
  memset(l, 2, LARGE);
  free(l);
  struct mallinfo2 now = mallinfo2();
  printf("M_TRIM_THRESHOLD 0: keepcost %zu after freeing 1 MiB\n", now.keepcost);
  CHECKF(now.keepcost < LARGE / 4, "keepcost %zu: freed pages not given back at once", now.keepcost);
  CHECK(mallopt(M_TRIM_THRESHOLD, 128 * 1024) == 1); /* back to the delay (1 s by default) */
  l = malloc(LARGE);
  memset(l, 2, LARGE);
  free(l);
  now = mallinfo2();
  printf("M_TRIM_THRESHOLD 128K: keepcost %zu after freeing 1 MiB\n", now.keepcost);
  CHECKF(now.keepcost >= LARGE, "keepcost %zu: pages given back before the delay", now.keepcost);
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
    if (params[i] != M_TRIM_THRESHOLD) CHECKF(mallopt(params[i], 1) == 1, "mallopt(%d, 1) != 1", params[i]);

  /* C23 free_aligned_sized, malloc_size */
  void *a = aligned_alloc(64, 640);
  CHECK(a && ((uintptr_t)a & 63) == 0);
  extern size_t malloc_size(const void *);
  extern void free_aligned_sized(void *, size_t, size_t);
  CHECK(malloc_size(a) == malloc_usable_size(a) && malloc_size(a) >= 640);
  free_aligned_sized(a, 64, 640);
  lithe_free_aligned_sized(lithe_aligned_alloc(4096, 4096), 4096, 4096);
  printf("api_introspect: OK\n");
  return 0;
}
