/* SPDX-License-Identifier: MIT */
/* regress_dontdump — lithe's reserved, uncommitted address space is left
 * out of core dumps (MADV_DONTDUMP: "dd" in /proc/self/smaps' VmFlags), and
 * what it commits is dumped.  Before: the pagemap's 128 GiB PROT_READ
 * reservation (and the arenas' PROT_NONE tails) had no dd flag, and a piped
 * core handler (systemd-coredump, apport) received 128 GiB of zeros.
 *
 * After allocating small, large and xlarge blocks (and giving some back):
 *   - the anonymous mappings without dd, of any protection, add up to
 *     about the committed bytes lithe_stats_get reports (plus the
 *     program's own few anonymous pages), not ~128 GiB;
 *   - the anonymous mappings with dd cover at least what lithe reserved
 *     and did not commit (reserved - committed);
 *   - no read/write anonymous mapping is dd (committed memory is dumped). */
#include "testutil.h"
#include <ctype.h>

typedef struct {
  size_t dd, nodd, nodd_readable, dd_rw;
} sums_t;

/* One pass over /proc/self/smaps (read with raw system calls: no stdio
 * buffer appears while it is read). */
static sums_t scan(void) {
  static char buf[8 << 20];
  int fd = open("/proc/self/smaps", O_RDONLY);
  CHECK(fd >= 0);
  size_t len = 0;
  for (ssize_t got; (got = read(fd, buf + len, sizeof buf - 1 - len)) > 0;) len += (size_t)got;
  close(fd);
  CHECK(len < sizeof buf - 1);
  buf[len] = 0;
  sums_t s = {0, 0, 0, 0};
  int anon = 0;
  char perms[8] = "";
  size_t size = 0;
  for (char *line = buf, *next; *line; line = next) {
    next = strchr(line, '\n');
    next = next ? next + 1 : line + strlen(line);
    unsigned long lo, hi;
    int path_at = 0;
    if (isxdigit((unsigned char)line[0]) &&
        sscanf(line, "%lx-%lx %7s %*s %*s %*s%n", &lo, &hi, perms, &path_at) == 3) {
      /* a mapping's header: anonymous when no path follows the inode */
      size = (size_t)(hi - lo);
      while (line[path_at] == ' ') path_at++;
      anon = path_at > 0 && (line[path_at] == '\n' || line[path_at] == 0);
    } else if (strncmp(line, "VmFlags:", 8) == 0 && anon) {
      char *eol = strchr(line, '\n');
      size_t n = eol ? (size_t)(eol - line) : strlen(line);
      int dd = 0;
      for (size_t i = 8; i + 1 < n; i++)
        if (line[i] == 'd' && line[i + 1] == 'd' && line[i - 1] == ' ' &&
            (i + 2 == n || line[i + 2] == ' '))
          dd = 1;
      if (dd) {
        s.dd += size;
        if (perms[0] == 'r' && perms[1] == 'w') s.dd_rw += size;
      } else {
        s.nodd += size;
        if (perms[0] == 'r') s.nodd_readable += size;
      }
    }
  }
  return s;
}

static void *volatile keep[4096];

int main(void) {
  tu_require_lithe();
  size_t k = 0;
  for (int i = 0; i < 2000; i++) keep[k++] = malloc(16 + (size_t)(i % 64) * 48);
  for (int i = 0; i < 40; i++) keep[k++] = malloc(100 * KiB + (size_t)i * 8 * KiB);
  keep[k++] = malloc(40 * MiB);
  keep[k++] = malloc(3 * MiB);
  for (size_t i = 0; i < k; i++) memset(keep[i], 1, 16);
  for (size_t i = 0; i < k; i += 3) free(keep[i]);
  lithe_collect(true);

  lithe_stats_t st;
  lithe_stats_get(&st);
  sums_t s = scan();
  printf("lithe: reserved %zu MiB, committed %zu KiB\n", st.reserved >> 20, st.committed >> 10);
  printf("anonymous mappings: dd %zu MiB (read/write %zu KiB); without dd %zu KiB (readable %zu KiB)\n",
         s.dd >> 20, s.dd_rw >> 10, s.nodd >> 10, s.nodd_readable >> 10);
  /* the program's own anonymous pages (ld.so, libc's .bss, the stack's
   * neighbours) are a few hundred KiB: 16 MiB of slack */
  CHECKF(s.nodd <= st.committed + 16 * MiB,
         "%zu MiB of anonymous mappings would be dumped, lithe has %zu MiB committed",
         s.nodd >> 20, st.committed >> 20);
  CHECKF(s.dd >= st.reserved - st.committed,
         "dd mappings %zu MiB do not cover lithe's reserved, uncommitted %zu MiB", s.dd >> 20,
         (st.reserved - st.committed) >> 20);
  CHECKF(s.dd_rw == 0, "%zu KiB of committed (read/write) memory is left out of dumps",
         s.dd_rw >> 10);
  for (size_t i = 0; i < k; i++)
    if (i % 3) free(keep[i]);
  printf("ok\n");
  return 0;
}
