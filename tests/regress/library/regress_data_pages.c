/* SPDX-License-Identifier: MIT */
/* regress_data_pages — lithe's own writable data (.data, .bss) costs a
 * program few pages: the small variables every program writes lie
 * together, not scattered between big arrays.
 *
 * The library's link sorts its variables by alignment (src/CMakeLists.txt)
 * and its big arrays start pages of their own (internal.h, BIG_BSS).
 * Before, the small variables lay in the pages around the pagemap's
 * 32 KiB arrays, the page heap's 16 KiB resident vector and the
 * profiler's tables, and this program wrote 9 pages of lithe's
 * read-write segment; then 6, with two pages of .data (the empty heap,
 * only ever read, lay between the locks and the options); now 5: the
 * relocated read-only page (with the empty heap, src/heap.c), one of
 * .data, the pagemap's l2_sparse (its 4 MiB block lies where the flat
 * map does not reach), the page of l2_pieces that holds the first
 * arena's entry, and the page of small variables.  Every process pays
 * them: bench-mallocbench's rows ended at 16 kB less RssAnon (churn
 * 156 -> 140 kB after lithe_collect), then 4-8 kB less (140 -> 136).
 *
 * Counted in /proc/self/pagemap over the library's writable PT_LOAD
 * segment: pages present, mapped by this process alone and not file pages
 * (so written: a copy of .data or an anonymous page of .bss; a .bss page
 * only read maps the shared zero page, and a .data page only read is the
 * file's). */
#include "testutil.h"
#include <link.h>
#include <pthread.h>
#include "lithe.h"

static uintptr_t seg_lo, seg_hi;

static int find_segment(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  if (!info->dlpi_name || !strstr(info->dlpi_name, "liblithe")) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
      seg_lo = info->dlpi_addr + ph->p_vaddr;
      seg_hi = seg_lo + ph->p_memsz;
      return 1;
    }
  }
  return 0;
}

static void *thread_main(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) free(malloc((size_t)(i % 64 + 1) * 16));
  return NULL;
}

int main(void) {
  tu_require_lithe();
  /* some of everything a small program does: small and large blocks, a
   * thread, a collection */
  static void *p[256];
  for (int i = 0; i < 256; i++) p[i] = malloc((size_t)(i % 32 + 1) * 24);
  void *big = malloc(200 * KiB), *huge = malloc(4 * MiB);
  CHECK(big != NULL && huge != NULL);
  memset(huge, 1, 4 * MiB);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  for (int i = 0; i < 256; i++) free(p[i]);
  free(big);
  free(huge);
  lithe_collect(true);

  dl_iterate_phdr(find_segment, NULL);
  if (!seg_lo) {
    printf("SKIP: lithe is not a shared library here (no liblithe in the link map)\n");
    return 0;
  }
  long ps = sysconf(_SC_PAGESIZE);
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) {
    printf("SKIP: /proc/self/pagemap: %s\n", strerror(errno));
    return 0;
  }
  uintptr_t lo = seg_lo & ~(uintptr_t)(ps - 1), hi = (seg_hi + (uintptr_t)ps - 1) & ~(uintptr_t)(ps - 1);
  int written = 0, pages = 0;
  for (uintptr_t a = lo; a < hi; a += (uintptr_t)ps, pages++) {
    uint64_t e = 0;
    CHECK(pread(fd, &e, sizeof e, (off_t)(a / (uintptr_t)ps * sizeof e)) == (ssize_t)sizeof e);
    bool present = e >> 63 & 1, file = e >> 61 & 1, exclusive = e >> 56 & 1;
    if (present && exclusive && !file) {
      written++;
      printf("  written: segment page %ld\n", (long)((a - lo) / (uintptr_t)ps));
    }
  }
  close(fd);
  printf("lithe's writable segment: %d pages, %d written\n", pages, written);
  /* 9, then 6; 5 now, in the release and the debug build */
  CHECKF(written <= 5, "%d of lithe's %d writable pages written: its small variables are scattered", written,
         pages);
  printf("regress_data_pages: OK\n");
  return 0;
}
