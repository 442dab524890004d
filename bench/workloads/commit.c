/* SPDX-License-Identifier: MIT */
/* bench-commit: what a tiny heap costs the process: committed memory must stay
 * proportional to the heap, not to the address space reserved for arenas
 * (Go's lesson when it cut its arena size to 4 MiB on 64-bit Windows).
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
 * Output: Benchmarkcommit 1 <kB> vmdata-kB <kB> rss-kB <kB> vmdata-growth-kB
 * <kB> rss-growth-kB <kB> vmdata-total-kB <kB> anon-total-kB.
 *
 * The first two are the allocator's own total after the small mallocs,
 * including whatever it set up before main: jemalloc and tcmalloc
 * initialise in constructors, so a growth measured from main shows 0 for
 * them while they hold megabytes. They are read from /proc/self/smaps: the
 * sizes (vmdata-kB) and resident parts (rss-kB) of the private writable
 * anonymous mappings ([heap] and unnamed ones, not [stack]). The
 * program's own such mappings (its .bss, the loader's TLS) are in it for
 * every allocator alike: 76 kB mapped under glibc at the start of main.
 * Then the growth from main (the old figures), then the absolute VmData
 * and RssAnon.
 */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void *volatile g_keep[16];

/* Sums over /proc/self/smaps of the private writable anonymous mappings
 * ([heap] and unnamed, not [stack]): Size and Rss in kB. Streamed through a
 * stack buffer: no malloc, no static buffer (that would be .bss, i.e. one
 * of the mappings measured). */
static void anon_mappings(long *size_kb, long *rss_kb) {
  *size_kb = *rss_kb = 0;
  int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *size_kb = *rss_kb = -1;
    return;
  }
  char buf[8192], line[512];
  size_t ll = 0;
  int counted = 0; /* the current mapping is one we count */
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        if (ll < sizeof line - 1) line[ll++] = buf[i];
        continue;
      }
      line[ll] = 0;
      ll = 0;
      unsigned long lo, hi;
      char perms[8];
      int off = 0;
      if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &off) >= 3 && off > 0) {
        const char *path = line + off;
        counted = perms[1] == 'w' && perms[3] == 'p' &&
                  (!*path || !strcmp(path, "[heap]"));
        continue;
      }
      long v;
      if (counted && sscanf(line, "Size: %ld kB", &v) == 1) *size_kb += v;
      else if (counted && sscanf(line, "Rss: %ld kB", &v) == 1) *rss_kb += v;
    }
  }
  close(fd);
}

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
  long anon_size, anon_rss;
  anon_mappings(&anon_size, &anon_rss);

  static char outbuf[4096]; /* only now may stdio run, on a static buffer */
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  printf("# malloc: %s\n", bench_malloc_from());
  printf("# note: before first malloc VmData %ld kB VmRSS %ld kB RssAnon %ld kB\n", s0.vm_data,
         s0.vm_rss, s0.rss_anon);
  printf("# note: after malloc(16): VmData +%ld kB, VmRSS +%ld kB\n", s1.vm_data - s0.vm_data,
         s1.vm_rss - s0.vm_rss);
  printf("# note: after %zu more small mallocs: VmData +%ld kB, VmRSS +%ld kB, RssAnon +%ld kB\n",
         nmore, s2.vm_data - s0.vm_data, s2.vm_rss - s0.vm_rss, s2.rss_anon - s0.rss_anon);
  printf("# note: anonymous writable mappings after the mallocs (smaps): %ld kB mapped, %ld kB "
         "resident, before-main setup included\n", anon_size, anon_rss);
  /* the allocator's total first (what it set up before main included),
   * then the growth from main, then the absolute process figures */
  printf("Benchmarkcommit 1 %ld vmdata-kB %ld rss-kB %ld vmdata-growth-kB %ld rss-growth-kB %ld "
         "vmdata-total-kB %ld anon-total-kB\n",
         anon_size, anon_rss, s2.vm_data - s0.vm_data, s2.vm_rss - s0.vm_rss, s2.vm_data,
         s2.rss_anon);
  fflush(stdout);
  for (size_t i = 0; i <= nmore; i++) free(g_keep[i]);
  return 0;
}
