/* SPDX-License-Identifier: MIT */
/* regress_xlarge_calloc — calloc must zero a reused block.
 *
 * Freed xlarge mappings (above 16 MiB) are kept for reuse, dirty: a calloc
 * that is served from one must clear it, whether the cached mapping fits
 * as it is, is shrunk to the request, or is grown to it.  Also checks that
 * lithe_collect(true) gives the cached mappings back (xlarge bytes and
 * committed memory fall to where they were). */
#include "testutil.h"


static size_t first_nonzero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096 - 1)
    if (p[i]) return i;
  return p[n - 1] ? n - 1 : (size_t)-1;
}

int main(void) {
  tu_require_lithe();
  static const size_t sizes[][2] = {{20, 20}, {24, 20}, {20, 26}, {30, 17}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t a = sizes[k][0] * MiB, b = sizes[k][1] * MiB;
    unsigned char *p = malloc(a);
    CHECK(p != NULL);
    memset(p, 0xab, a);
    free(p);
    unsigned char *q = calloc(1, b);
    CHECK(q != NULL);
    size_t at = first_nonzero(q, b);
    CHECKF(at == (size_t)-1, "calloc(%zu MiB) after free(%zu MiB of 0xab): byte %zu is 0x%02x",
           sizes[k][1], sizes[k][0], at, at == (size_t)-1 ? 0 : q[at]);
    free(q);
  }
#ifdef HAVE_LITHE
  lithe_collect(true);
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("after lithe_collect(true): xlarge live %zu, xlarge bytes %zu, committed %zu KiB\n",
         st.xlarge_live, st.xlarge_bytes, st.committed >> 10);
  CHECKF(st.xlarge_live == 0 && st.xlarge_bytes == 0, "xlarge live %zu, bytes %zu",
         st.xlarge_live, st.xlarge_bytes);
  CHECKF(st.committed < 16 * MiB, "committed %zu KiB after lithe_collect(true): cached mappings kept",
         st.committed >> 10);
#endif
  printf("regress_xlarge_calloc: OK\n");
  return 0;
}
