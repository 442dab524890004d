/* sizeclass.c — the small size classes.
 *
 *   class 1..8    16, 32, ..., 128       (16-byte steps: exact for tiny objects)
 *   class 9..40   4 per power of two:   160 192 224 256 | 320 .. 512 | ...
 *                 ... | 20480 24576 28672 32768
 * so a request wastes at most 12.5 % inside its block (plus < 16 bytes for
 * the tiny classes).  size_class() in internal.h maps a size to its class:
 * a table lookup up to 1 KiB, a count-leading-zeros above. */
#include "internal.h"

uint8_t class_lut[LUT_MAX / 16 + 1];
uint32_t class_size[NCLASSES];
uint32_t class_span_bytes[NCLASSES];
uint32_t class_first_span_bytes[NCLASSES];

void sizeclass_init(void) {
  for (unsigned c = 1; c <= 8; c++) class_size[c] = 16 * c;
  for (unsigned k = 7, c = 9; c < NCLASSES; k++)
    for (unsigned j = 1; j <= 4 && c < NCLASSES; j++, c++)
      class_size[c] = (1u << k) + j * (1u << (k - 2));
  for (unsigned c = 1; c < NCLASSES; c++) {
    size_t span = SPAN_SMALL_BYTES; /* >= 4 blocks: the power of two above */
    while (span < 4 * (size_t)class_size[c]) span *= 2;
    class_span_bytes[c] = (uint32_t)span;
    size_t first = align_up(4 * (size_t)class_size[c], PAGE_SIZE);
    if (first < SPAN_FIRST_BYTES) first = SPAN_FIRST_BYTES;
    if (first > class_span_bytes[c]) first = class_span_bytes[c];
    class_first_span_bytes[c] = (uint32_t)first;
    /* block counts fit the remote-free count bits (debug.c) */
    lt_assert_cmp((uint64_t)span / class_size[c], <, (uint64_t)1 << (64 - TF_COUNT_SHIFT));
    lt_assert_cmp(class_size[c], >, class_size[c - 1]);
  }
  lt_assert_cmp((size_t)class_size[NCLASSES - 1], ==, SMALL_MAX);
  /* size 0 gets the 16-byte class: malloc(0) returns a unique pointer */
  for (unsigned i = 0; i <= LUT_MAX / 16; i++) {
    size_t n = i == 0 ? 1 : (size_t)i * 16;
    unsigned c = 1;
    while (class_size[c] < n) c++;
    class_lut[i] = (uint8_t)c;
  }
}
