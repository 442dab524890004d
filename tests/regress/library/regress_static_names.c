/* SPDX-License-Identifier: MIT */
/* regress_static_names: a program whose own globals have the short names of
 * lithe's internals links statically with liblithe.a, and each side keeps
 * its own.  Before src/names.h, liblithe.a defined `os_map`, `heap_collect`,
 * `out_str`, `class_lut`, ... as plain (hidden) globals: this program failed
 * to link ("multiple definition of `os_map'"), and a weak or common
 * definition on either side would have bound one to the other silently.
 * Linked with LINK static only. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the program's own, with lithe's internal short names */
int os_map_calls, heap_collect_calls;
unsigned char class_lut[4] = {7, 7, 7, 7};
size_t limit_bytes = 12345;
void *os_map(size_t n) { (void)n; os_map_calls++; return NULL; }
void heap_collect(void) { heap_collect_calls++; }
const char *out_str(void) { return "the program's out_str"; }

#define CHECK(c, ...) do { if (!(c)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
  printf(__VA_ARGS__); printf("\n"); exit(1); } } while (0)

int main(void) {
  /* lithe maps, collects and prints through its own functions */
  for (size_t n = 16; n <= ((size_t)64 << 20); n <<= 2) {
    char *p = malloc(n);
    CHECK(p != NULL, "malloc(%zu) = NULL", n);
    memset(p, 1, n);
    free(p);
  }
  malloc_trim(0);
  CHECK(os_map_calls == 0, "lithe called the program's os_map %d times", os_map_calls);
  CHECK(heap_collect_calls == 0, "lithe called the program's heap_collect %d times", heap_collect_calls);
  CHECK(class_lut[0] == 7 && class_lut[3] == 7, "the program's class_lut was written: %u %u",
        class_lut[0], class_lut[3]);
  CHECK(limit_bytes == 12345, "the program's limit_bytes is %zu", limit_bytes);
  /* and the program's own calls reach its own definitions */
  os_map(1);
  heap_collect();
  CHECK(os_map_calls == 1 && heap_collect_calls == 1, "own calls: os_map %d heap_collect %d",
        os_map_calls, heap_collect_calls);
  CHECK(strcmp(out_str(), "the program's out_str") == 0, "out_str() = %s", out_str());
  printf("regress_static_names: lithe and the program each kept their own os_map, heap_collect, "
         "out_str, class_lut, limit_bytes\n");
  return 0;
}
