/* bench-commit: what a tiny heap costs the process (seed 000).
 *
 *   bench-commit
 *
 * Reads VmData and VmRSS from /proc/self/status before the program's first
 * allocation (open/read into a stack buffer: no stdio, no malloc), then makes
 * one 16-byte malloc, reads again, makes a handful more small mallocs (each
 * written in full, as a program would), reads again, and prints the growth in
 * KiB. VmData counts private writable mappings: address space the kernel may
 * have to back (what a commit-charging OS would charge); reserved PROT_NONE
 * ranges do not count. VmRSS is what was actually touched.
 *
 * Output: Benchmarkcommit 1 <kB> vmdata-kB <kB> rss-kB <kB> vmdata-total-kB
 * <kB> anon-total-kB: the growth after all of the small mallocs, then the
 * absolute VmData and RssAnon at that point. Whatever an allocator did in its
 * constructors before main is in the baseline, not in the growth (jemalloc
 * and tcmalloc initialise before main); the totals and the # note lines show
 * it.
 */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <string.h>

static void *volatile g_keep[16];

int main(int argc, char **argv) {
  bench_status_t s0, s1, s2;
  if (bench_read_status(&s0) != 0) bench_die("cannot read /proc/self/status");
  (void)argc;
  (void)argv;

  char *first = malloc(16);
  memset(first, 1, 16);
  g_keep[0] = first;
  bench_read_status(&s1);

  static const size_t more[] = {16, 24, 32, 48, 64, 100, 128, 256, 512, 1000, 2048, 4096};
  size_t nmore = sizeof more / sizeof more[0];
  for (size_t i = 0; i < nmore; i++) {
    char *p = malloc(more[i]);
    memset(p, 1, more[i]);
    g_keep[1 + i] = p;
  }
  bench_read_status(&s2);

  static char outbuf[4096]; /* only now may stdio run, on a static buffer */
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  printf("# malloc: %s\n", bench_malloc_from());
  printf("# note: before first malloc VmData %ld kB VmRSS %ld kB RssAnon %ld kB\n", s0.vm_data,
         s0.vm_rss, s0.rss_anon);
  printf("# note: after malloc(16): VmData +%ld kB, VmRSS +%ld kB\n", s1.vm_data - s0.vm_data,
         s1.vm_rss - s0.vm_rss);
  printf("# note: after %zu more small mallocs: VmData +%ld kB, VmRSS +%ld kB, RssAnon +%ld kB\n",
         nmore, s2.vm_data - s0.vm_data, s2.vm_rss - s0.vm_rss, s2.rss_anon - s0.rss_anon);
  /* growth first (the protocol's figures), then the absolute anonymous
   * footprint, which also charges what an allocator did before main */
  printf("Benchmarkcommit 1 %ld vmdata-kB %ld rss-kB %ld vmdata-total-kB %ld anon-total-kB\n",
         s2.vm_data - s0.vm_data, s2.vm_rss - s0.vm_rss, s2.vm_data, s2.rss_anon);
  fflush(stdout);
  for (size_t i = 0; i <= nmore; i++) free(g_keep[i]);
  return 0;
}
