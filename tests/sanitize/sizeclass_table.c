/* SPDX-License-Identifier: MIT */
/* sizeclass_table: a white-box proof of the small size-class table, linked
 * with liblithe.a so it calls lithe's own internal functions.
 *
 *  1. every size 1..SMALL_MAX maps to the smallest class that holds it
 *     through both parts of class_lut that malloc_inline indexes:
 *     size_class() (class_lut[lut_index(n)], the 16-byte steps, its
 *     index above FINE_MAX) and class_lut[n] (up to FINE_MAX), and
 *     malloc(n) really hands out a block of that class's size;
 *  2. the division magic span_init_small sets is exact: for every class and
 *     both its span sizes (first span, later spans), small_block_start(s,
 *     off) is true exactly at the multiples of the block size, for every
 *     offset inside the span (brute force);
 *  3. the worst-case internal rounding and the tail waste of each class,
 *     measured, must equal the table in src/sizeclass.c's header comment
 *     (argument 1: that file), so the comment stays true.  With --print it
 *     writes the table to paste there;
 *  4. no class's (later) span ends an OS page or more after its last block;
 *  5. from 1 to 8 KiB a power of two plus a header up to an eighth of it
 *     gets the class an eighth above it (sqlite's 1032 and 4368 B get 1152
 *     and 4608 B). */
#include "testutil.h"
#include "internal.h"
#include "fastpath.h"

#include <malloc.h>

typedef struct {
  unsigned cls;
  uint32_t size;
  size_t worst_n;             /* request with the most rounding            */
  double worst_block_pct;     /* (size - n) / size at worst_n              */
  double worst_request_pct;   /* (size - n) / n at worst_n                 */
  uint32_t span, first;       /* span bytes (later spans, first span)      */
  double tail_pct, first_tail_pct; /* unusable span end, % of the span     */
} row_t;

static row_t rows[NCLASSES];

static void check_mapping(void) {
  unsigned prev = 0;
  for (size_t n = 1; n <= SMALL_MAX; n++) {
    unsigned c = size_class(n);
    CHECKF(c >= 1 && c < NCLASSES, "size %zu -> class %u (out of 1..%d)", n, c, NCLASSES - 1);
    CHECKF(class_size[c] >= n, "size %zu -> class %u of %u bytes: too small", n, c, class_size[c]);
    CHECKF(c == 1 || class_size[c - 1] < n,
           "size %zu -> class %u (%u B), but class %u (%u B) fits", n, c, class_size[c], c - 1,
           class_size[c - 1]);
    CHECKF(c >= prev, "size %zu -> class %u after class %u: not monotonic", n, c, prev);
    if (n <= FINE_MAX) { /* the part by the size (c came from the other) */
      unsigned f = class_lut[n];
      CHECKF(f == c, "size %zu: fast-path table (by size) says class %u, size_class %u", n, f, c);
    }
    prev = c;
  }
  /* end to end: malloc(n)'s usable size is its class's size */
  for (size_t n = 1; n <= SMALL_MAX; n++) {
    void *p = malloc(n);
    CHECKF(p != NULL, "malloc(%zu)", n);
    size_t u = malloc_usable_size(p);
    CHECKF(u == class_size[size_class(n)], "malloc(%zu): usable %zu, class size %u", n, u,
           class_size[size_class(n)]);
    free(p);
  }
  printf("mapping: sizes 1..%zu each map to the smallest class that holds them (%d classes)\n",
         (size_t)SMALL_MAX, NCLASSES - 1);
}

static void check_magic(void) {
  static span_t s;
  char *base = (char *)((uintptr_t)1 << 40); /* any page-aligned address: no memory is touched */
  uint64_t checked = 0;
  for (unsigned c = 1; c < NCLASSES; c++) {
    uint32_t sizes[2] = {class_first_span_bytes[c], class_span_bytes[c]};
    for (int k = 0; k < 2; k++) {
      memset(&s, 0, sizeof s);
      s.start = base;
      s.bytes = sizes[k];
      span_init_small(&s, c);
      CHECKF(s.block_size == class_size[c], "class %u: block size %u", c, s.block_size);
      CHECKF(s.capacity == sizes[k] / class_size[c], "class %u span %u: capacity %u", c, sizes[k],
             s.capacity);
      for (size_t off = 0; off < s.bytes; off++) {
        bool want = off % class_size[c] == 0;
        if (small_block_start(&s, off) != want)
          FAIL("class %u (%u B), span %zu B, magic 0x%" PRIx64 ": offset %zu says %s block start",
               c, class_size[c], s.bytes, s.div_magic, off, want ? "not a" : "a");
      }
      checked += s.bytes;
      /* free()'s carved test, with none, one, and every block carved:
       * true exactly at the carved block starts, for every offset of the
       * span, the span's length on either side of it, and offsets as far
       * as 2^48 both ways (a pagemap entry may name a span elsewhere) */
      uint32_t carve[3] = {0, 1, s.capacity};
      for (int j = 0; j < 3; j++) {
        span_set_carved_lim(&s, (uint64_t)carve[j] * block_step(&s));
        size_t lim = (size_t)carve[j] * class_size[c];
        for (int64_t off = -(int64_t)s.bytes; off < 2 * (int64_t)s.bytes; off++) {
          bool want = off >= 0 && (size_t)off < lim && off % class_size[c] == 0;
          if (small_carved_start(&s, (size_t)off) != want)
            FAIL("class %u (%u B), %u blocks carved: offset %" PRId64 " says %s carved block start", c,
                 class_size[c], carve[j], off, want ? "not a" : "a");
        }
        /* far offsets: every block start and its neighbours at strides
         * through +-2^48 (x the stride and a prime, so all residues occur) */
        for (uint64_t k = 1; k < ((uint64_t)1 << 48) / class_size[c]; k = k * 3 + 7)
          for (int64_t d = -2; d <= 2; d++)
            for (int sign = -1; sign <= 1; sign += 2) {
              int64_t off = sign * (int64_t)(k * class_size[c]) + d;
              bool want = off >= 0 && (size_t)off < lim && off % class_size[c] == 0;
              if (small_carved_start(&s, (size_t)off) != want)
                FAIL("class %u (%u B), %u blocks carved: offset %" PRId64 " says %s carved block start",
                     c, class_size[c], carve[j], off, want ? "not a" : "a");
            }
        /* and 20,000 pseudo-random offsets within +-2^48 */
        uint64_t x = 0x9e3779b97f4a7c15u ^ c;
        for (int i = 0; i < 20000; i++) {
          x = x * 6364136223846793005u + 1442695040888963407u;
          int64_t off = (int64_t)(x >> 15) - ((int64_t)1 << 48);
          if (i & 1) off -= off % class_size[c]; /* half of them block starts */
          bool want = off >= 0 && (size_t)off < lim && off % class_size[c] == 0;
          if (small_carved_start(&s, (size_t)off) != want)
            FAIL("class %u (%u B), %u blocks carved: offset %" PRId64 " says %s carved block start", c,
                 class_size[c], carve[j], off, want ? "not a" : "a");
        }
      }
    }
  }
  printf("division magic: exact at all %" PRIu64 " offsets of every class's two span sizes,"
         " and free()'s carved test with 0, 1 and all blocks carved, offsets -span .. 2 span"
         " and sampled to +-2^48\n", checked);
}

static void measure(void) {
  for (unsigned c = 1; c < NCLASSES; c++) {
    row_t *r = &rows[c];
    r->cls = c;
    r->size = class_size[c];
    /* the smallest request of the class rounds the most */
    size_t n = (size_t)class_size[c - 1] + 1;
    if (c == 1) n = 1;
    r->worst_n = n;
    r->worst_block_pct = 100.0 * (double)(r->size - n) / r->size;
    r->worst_request_pct = 100.0 * (double)(r->size - n) / (double)n;
    r->span = class_span_bytes[c];
    r->first = class_first_span_bytes[c];
    r->tail_pct = 100.0 * (double)(r->span % r->size) / r->span;
    r->first_tail_pct = 100.0 * (double)(r->first % r->size) / r->first;
  }
}

static int format_row(char *buf, size_t cap, const row_t *r) {
  return snprintf(buf, cap, " *   %2u %6u %6zu %5.1f %7.1f %7u %5.2f %7u %5.2f", r->cls, r->size,
                  r->worst_n, r->worst_block_pct, r->worst_request_pct, r->span, r->tail_pct,
                  r->first, r->first_tail_pct);
}

#define HEADER " *  cls   size  worst block% request%   span tail%   first tail%"

static void print_table(FILE *f) {
  char line[160];
  fprintf(f, "%s\n", HEADER);
  for (unsigned c = 1; c < NCLASSES; c++) {
    format_row(line, sizeof line, &rows[c]);
    fprintf(f, "%s\n", line);
  }
}

/* the table in sizeclass.c's comment must be exactly the measured one */
static void check_comment(const char *path) {
  FILE *f = fopen(path, "r");
  CHECKF(f != NULL, "open %s: %s", path, strerror(errno));
  char line[256];
  unsigned c = 0;
  bool in = false;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!in) {
      if (strcmp(line, HEADER) == 0) in = true, c = 1;
      continue;
    }
    if (c >= NCLASSES) break;
    char want[160];
    format_row(want, sizeof want, &rows[c]);
    CHECKF(strcmp(line, want) == 0,
           "%s: class %u's row is\n%s\nmeasured:\n%s\n(run test-sizeclass_table --print and "
           "paste the table into the comment)", path, c, line, want);
    c++;
  }
  fclose(f);
  CHECKF(in, "%s has no measured table (header line \"%s\")", path, HEADER);
  CHECKF(c == NCLASSES, "%s: table has %u rows, want %d", path, c - 1, NCLASSES - 1);
  printf("%s: its table is the measured one\n", path);
}

int main(int argc, char **argv) {
  tu_require_lithe();
  lithe_process_init();
  bool print = argc > 1 && strcmp(argv[1], "--print") == 0;
  check_mapping();
  check_magic();
  measure();
  double wb = 0, wr = 0, wt = 0;
  size_t wbn = 0, wrn = 0;
  unsigned wtc = 0;
  for (unsigned c = 9; c < NCLASSES; c++) { /* above the 16-byte steps */
    if (rows[c].worst_block_pct > wb) wb = rows[c].worst_block_pct, wbn = rows[c].worst_n;
    if (rows[c].worst_request_pct > wr) wr = rows[c].worst_request_pct, wrn = rows[c].worst_n;
  }
  for (unsigned c = 1; c < NCLASSES; c++)
    if (rows[c].tail_pct > wt) wt = rows[c].tail_pct, wtc = c;
  printf("classes above 128 B: worst rounding %.1f %% of the block (size %zu), %.1f %% of the "
         "request (size %zu); worst tail %.2f %% of a span (class %u, %u B)\n",
         wb, wbn, wr, wrn, wt, wtc, class_size[wtc]);
  print_table(stdout);
  if (print) return 0;
  /* no later span ends in an OS page that no block reaches: that page is
   * never touched until the span's pages are carved again in another
   * order, and faults in then (regress_span_tail) */
  for (unsigned c = 1; c < NCLASSES; c++)
    CHECKF(class_span_bytes[c] % class_size[c] < OS_PAGE_MIN,
           "class %u (%u B): its %u-byte span ends %u B after its last block: an OS page that no block "
           "reaches (sizeclass.c, span_fitted)", c, class_size[c], class_span_bytes[c],
           class_span_bytes[c] % class_size[c]);
  /* a power of two plus a header, from 1 to 8 KiB: rounded by less than an
   * eighth of the power (sqlite asks for 1032 and 4368 B: with only the
   * quarters, blocks of 1280 and 5120 B) */
  for (unsigned k = CLASS_EIGHTH_LO; k <= CLASS_EIGHTH_HI; k++)
    for (size_t n = ((size_t)1 << k) + 1; n <= ((size_t)1 << k) + ((size_t)1 << (k - 3)); n++) {
      size_t got = class_size[size_class(n)], want = ((size_t)1 << k) + ((size_t)1 << (k - 3));
      CHECKF(got == want, "size %zu (2^%u + %zu) -> class of %zu B, want %zu", n, k, n - ((size_t)1 << k), got,
             want);
    }
  CHECKF(class_size[size_class(1032)] == 1152 && class_size[size_class(4368)] == 4608,
         "sqlite's 1032 and 4368 B requests get blocks of %u and %u B", class_size[size_class(1032)],
         class_size[size_class(4368)]);
  if (argc > 1) check_comment(argv[1]);
  return 0;
}
