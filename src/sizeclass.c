/* SPDX-License-Identifier: MIT */
/* sizeclass.c — the small size classes.
 *
 *   class 1..8    16, 32, ..., 128       (16-byte steps: exact for tiny objects)
 *   class 9..44   4 per power of two:    160 192 224 256 | 320 .. 512 | ...
 *                 ... | 20480 24576 28672 32768, and from 1 to 8 KiB one
 *                 more an eighth above the power: 1152, 2304, 4608, 9216
 *                 (internal.h, CLASS_EIGHTH_LO: a power of two plus a header)
 * size_class() in internal.h maps a size to its class with one table lookup
 * (class_lut, a constant: 16-byte steps up to SMALL_MAX).
 *
 * Measured (tests/sanitize/sizeclass_table.c proves the mapping and the
 * division magic, and fails unless this table is what it measures; rerun
 * it with --print after changing the classes): "worst" is the request that
 * rounds up the most (one byte above the class below), "block%" that
 * rounding as a share of the block, "request%" as a share of the request;
 * "tail%" is the end of a span no block fits in, for later spans ("span")
 * and a heap's first span of the class ("first").  Above 128 B a request
 * loses at most 20.0 % of its block (25.0 % over its size; 16385 -> 20480),
 * a power of two plus up to an eighth of it from 1 to 8 KiB at most 11.1 %
 * (12.5 %; 8193 -> 9216); the 16-byte classes lose < 16 bytes.  Tails
 * reach 2.34 % of a span (2560 B; span_fitted below keeps them under an OS
 * page) and 16.7 % of a first span (5120 B).
 *  cls   size  worst block% request%   span tail%   first tail%
 *    1     16      1  93.8  1500.0   65536  0.00   16384  0.00
 *    2     32     17  46.9    88.2   65536  0.00   16384  0.00
 *    3     48     33  31.2    45.5   65536  0.02   16384  0.10
 *    4     64     49  23.4    30.6   65536  0.00   16384  0.00
 *    5     80     65  18.8    23.1   65536  0.02   16384  0.39
 *    6     96     81  15.6    18.5   65536  0.10   16384  0.39
 *    7    112     97  13.4    15.5   65536  0.02   16384  0.20
 *    8    128    113  11.7    13.3   65536  0.00   16384  0.00
 *    9    160    129  19.4    24.0   65536  0.15   16384  0.39
 *   10    192    161  16.1    19.3   65536  0.10   16384  0.39
 *   11    224    193  13.8    16.1   65536  0.20   16384  0.20
 *   12    256    225  12.1    13.8   65536  0.00   16384  0.00
 *   13    320    257  19.7    24.5   65536  0.39   16384  0.39
 *   14    384    321  16.4    19.6   65536  0.39   16384  1.56
 *   15    448    385  14.1    16.4   65536  0.20   16384  1.56
 *   16    512    449  12.3    14.0   65536  0.00   16384  0.00
 *   17    640    513  19.8    24.8   65536  0.39   16384  2.34
 *   18    768    641  16.5    19.8   65536  0.39   16384  1.56
 *   19    896    769  14.2    16.5   65536  0.20   16384  1.56
 *   20   1024    897  12.4    14.2   65536  0.00   16384  0.00
 *   21   1152   1025  11.0    12.4   65536  1.56   16384  1.56
 *   22   1280   1153   9.9    11.0   65536  0.39   16384  6.25
 *   23   1536   1281  16.6    19.9   65536  1.56   16384  6.25
 *   24   1792   1537  14.2    16.6   65536  1.56   16384  1.56
 *   25   2048   1793  12.5    14.2   65536  0.00   16384  0.00
 *   26   2304   2049  11.1    12.4   65536  1.56   16384  1.56
 *   27   2560   2305  10.0    11.1   65536  2.34   16384  6.25
 *   28   3072   2561  16.6    20.0   65536  1.56   16384  6.25
 *   29   3584   3073  14.3    16.6   65536  1.56   16384 12.50
 *   30   4096   3585  12.5    14.3   65536  0.00   16384  0.00
 *   31   4608   4097  11.1    12.5   65536  1.56   24576  6.25
 *   32   5120   4609  10.0    11.1   81920  0.00   24576 16.67
 *   33   6144   5121  16.7    20.0   73728  0.00   24576  0.00
 *   34   7168   6145  14.3    16.6   65536  1.56   32768 12.50
 *   35   8192   7169  12.5    14.3   65536  0.00   32768  0.00
 *   36   9216   8193  11.1    12.5   65536  1.56   40960 10.00
 *   37  10240   9217  10.0    11.1   81920  0.00   40960  0.00
 *   38  12288  10241  16.7    20.0   73728  0.00   49152  0.00
 *   39  14336  12289  14.3    16.7   57344  0.00   57344  0.00
 *   40  16384  14337  12.5    14.3   65536  0.00   65536  0.00
 *   41  20480  16385  20.0    25.0  122880  0.00   81920  0.00
 *   42  24576  20481  16.7    20.0  122880  0.00   98304  0.00
 *   43  28672  24577  14.3    16.7  114688  0.00  114688  0.00
 *   44  32768  28673  12.5    14.3  131072  0.00  131072  0.00
 */
#include "internal.h"

/* class_lut is a constant, computed by the compiler: it lies in .rodata,
 * pages of the library file shared by every process, and costs no
 * anonymous memory (the 2 KiB table filled at start-up took a page of
 * each process's RssAnon, the figure the suite's end memory counts).
 * Entry n of the first part serves the size n (n <= FINE_MAX); entry i of
 * the second (from LUT_COARSE on) the sizes 16 i - 15 .. 16 i.  Size 0
 * has the 16-byte class in both, so malloc(0) returns a unique pointer.
 * Up to 128 B the class is ceil(n / 16); above, with k = floor(log2(n -
 * 1)), the size lies in (2^k, 2^(k+1)], whose 4 classes step by 2^(k-2):
 * class LUT_BASE(k) + ceil((n - 2^k) / 2^(k-2)) - 1, where LUT_BASE(k) =
 * 9 + 4 (k - 7) + the eighths below 2^k; for a power with an eighth, the
 * first class is 2^k + 2^(k-3) and the quarters come one after.
 * sizeclass_init
 * checks every entry against class_size (Debug), and
 * tests/sanitize/sizeclass_table.c every size through both parts. */
/* (k of 128 at most for the sizes the first case takes: the second is not
 * evaluated for them, but a negative shift count there draws a warning) */
#define LUT_K(n)     (31 - __builtin_clz(((n) > 128u ? (unsigned)(n) : 129u) - 1u))
/* in (2^k, 2^(k+1)]: the first class, whether it has the eighth, and the
 * quarter (1..4) that holds n */
#define LUT_BASE(k)   (9u + 4u * ((k) - 7u) + CLASS_EIGHTHS_BELOW(k))
#define LUT_EIGHTH(k) ((k) >= CLASS_EIGHTH_LO && (k) <= CLASS_EIGHTH_HI)
#define LUT_Q(n, k)   (((n) - (1u << (k)) + (1u << ((k) - 2)) - 1u) >> ((k) - 2))
#define LUT_CLASS(n) ((n) <= 128u ? ((n) ? ((n) + 15u) / 16u : 1u) \
                      : LUT_BASE(LUT_K(n)) + (LUT_EIGHTH(LUT_K(n)) \
                        ? ((n) - (1u << LUT_K(n)) > (1u << (LUT_K(n) - 3)) ? LUT_Q(n, LUT_K(n)) : 0u) \
                        : LUT_Q(n, LUT_K(n)) - 1u))
/* entry i of a part of step s: the class of the size s i */
#define LUT_E(s, i)     (uint8_t)LUT_CLASS((unsigned)(i) * (s))
#define LUT_E4(s, i)    LUT_E(s, i), LUT_E(s, (i) + 1), LUT_E(s, (i) + 2), LUT_E(s, (i) + 3)
#define LUT_E16(s, i)   LUT_E4(s, i), LUT_E4(s, (i) + 4), LUT_E4(s, (i) + 8), LUT_E4(s, (i) + 12)
#define LUT_E64(s, i)   LUT_E16(s, i), LUT_E16(s, (i) + 16), LUT_E16(s, (i) + 32), LUT_E16(s, (i) + 48)
#define LUT_E256(s, i)  LUT_E64(s, i), LUT_E64(s, (i) + 64), LUT_E64(s, (i) + 128), LUT_E64(s, (i) + 192)
#define LUT_E1024(s, i) LUT_E256(s, i), LUT_E256(s, (i) + 256), LUT_E256(s, (i) + 512), LUT_E256(s, (i) + 768)
const uint8_t class_lut[LUT_ENTRIES] = {
#if FINE_SHIFT == 10 /* by the size */
    LUT_E1024(1u, 0), LUT_E(1u, 1024),
#elif FINE_SHIFT == 11
    LUT_E1024(1u, 0), LUT_E1024(1u, 1024), LUT_E(1u, 2048),
#elif FINE_SHIFT == 12
    LUT_E1024(1u, 0), LUT_E1024(1u, 1024), LUT_E1024(1u, 2048), LUT_E1024(1u, 3072), LUT_E(1u, 4096),
#else
#error "class_lut's first part is spelled out for FINE_SHIFT 10..12"
#endif
#if SMALL_SHIFT == 13
    LUT_E256(16u, 0), LUT_E256(16u, 256), LUT_E(16u, 512)
#elif SMALL_SHIFT == 14
    LUT_E1024(16u, 0), LUT_E(16u, 1024)
#elif SMALL_SHIFT == 15
    LUT_E1024(16u, 0), LUT_E1024(16u, 1024), LUT_E(16u, 2048)
#elif SMALL_SHIFT == 16
    LUT_E1024(16u, 0), LUT_E1024(16u, 1024), LUT_E1024(16u, 2048), LUT_E1024(16u, 3072), LUT_E(16u, 4096)
#elif SMALL_SHIFT == 17
    LUT_E1024(16u, 0), LUT_E1024(16u, 1024), LUT_E1024(16u, 2048), LUT_E1024(16u, 3072),
    LUT_E1024(16u, 4096), LUT_E1024(16u, 5120), LUT_E1024(16u, 6144), LUT_E1024(16u, 7168), LUT_E(16u, 8192)
#else
#error "class_lut is spelled out for SMALL_SHIFT 13..17"
#endif
};
uint32_t class_size[NCLASSES];
uint32_t class_span_bytes[NCLASSES];
uint32_t class_first_span_bytes[NCLASSES];

/* A span whose end leaves an OS page or more that no block reaches: the
 * page is never touched, so it stays out of the resident set while the
 * spans keep their places; but once they are freed and their pages carved
 * again in another order (a program's next round, another class), blocks
 * land on it and it faults in.  bench-mallocbench medium (1 GiB of 1-8
 * KiB blocks, freed, then again): 64 KiB spans of 5120 and 6144 B each
 * ended in 4 KiB that held no block, and the timed run faulted 4,091
 * times against tcmalloc's 434.  Such a class gets the multiple of
 * lcm(size, PAGE_SIZE) nearest its power of two instead (the smaller on a
 * tie): its blocks fill the span exactly, so no byte of it is wasted once
 * it is reused.  (A span with a tail under an OS page, 56 KiB of 11 blocks
 * of 5120 B, would leave that tail in a touched page: medium's first run
 * faulted 2.5k times more.)  A heap's first span of a class keeps its
 * size: one page a class and heap may go untouched there, and fitted,
 * 7168 B's would commit 56 KiB, not 32. */
static size_t span_fitted(size_t size, size_t span) {
  if (span % size < OS_PAGE_MIN) return span;
  size_t a = size, b = PAGE_SIZE; /* their gcd, then the lcm */
  while (b) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  size_t lcm = size / a * PAGE_SIZE;
  size_t lo = span / lcm * lcm, hi = lo + lcm;
  return lo >= 4 * size && span - lo <= hi - span ? lo : hi;
}

void sizeclass_init(void) {
  for (unsigned c = 1; c <= 8; c++) class_size[c] = 16 * c;
  for (unsigned k = 7, c = 9; c < NCLASSES; k++) {
    if (k >= CLASS_EIGHTH_LO && k <= CLASS_EIGHTH_HI) class_size[c++] = (1u << k) + (1u << (k - 3));
    for (unsigned j = 1; j <= 4 && c < NCLASSES; j++, c++) class_size[c] = (1u << k) + j * (1u << (k - 2));
  }
  for (unsigned c = 1; c < NCLASSES; c++) {
    size_t span = SPAN_SMALL_BYTES; /* >= 4 blocks: the power of two above */
    while (span < 4 * (size_t)class_size[c]) span *= 2;
    span = span_fitted(class_size[c], span);
    class_span_bytes[c] = (uint32_t)span;
    /* whole lithe pages, and no OS page past the last block */
    lt_assert_cmp(span % PAGE_SIZE, ==, (size_t)0);
    lt_assert_cmp(span % class_size[c], <, OS_PAGE_MIN);
    size_t first = align_up(4 * (size_t)class_size[c], PAGE_SIZE);
    if (first < SPAN_FIRST_BYTES) first = SPAN_FIRST_BYTES;
    if (first > span) first = span;
    class_first_span_bytes[c] = (uint32_t)first;
    /* block counts fit the remote-free count bits (debug.c) */
    lt_assert_cmp((uint64_t)span / class_size[c], <, (uint64_t)1 << (64 - TF_COUNT_SHIFT));
    lt_assert_cmp(class_size[c], >, class_size[c - 1]);
  }
  lt_assert_cmp((size_t)class_size[NCLASSES - 1], ==, SMALL_MAX);
  _Static_assert(NCLASSES <= 256, "class_lut holds uint8_t classes");
  _Static_assert(CLASS_EIGHTH_HI < CLASS_EIGHTH_LO || (CLASS_EIGHTH_LO >= 7 && CLASS_EIGHTH_HI < SMALL_SHIFT),
                 "the eighths lie above 128 B and below SMALL_MAX (multiples of 16 B)");
  /* class_lut (constant) agrees with class_size: each entry's class is
   * the smallest that holds its size (1 byte for size 0) */
  for (unsigned i = 0; i < LUT_ENTRIES; i++) {
    size_t n = i < LUT_COARSE ? i : (size_t)(i - LUT_COARSE) * 16;
    if (n == 0) n = 1;
    unsigned c = class_lut[i];
    lt_assert_v(c >= 1 && c < NCLASSES && class_size[c] >= n && class_size[c - 1] < n, i);
    (void)n;
    (void)c;
  }
}
