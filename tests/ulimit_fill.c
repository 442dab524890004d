/* ulimit_fill N — malloc blocks of N bytes until malloc returns NULL,
 * touching each, and print the KiB handed out.  Linked with no allocator
 * of lithe's: regress_ulimit_v runs it under RLIMIT_AS with glibc, and with
 * lithe through LD_PRELOAD, and compares the two. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 0, total = 0;
  if (n == 0) {
    fprintf(stderr, "usage: %s BLOCK_BYTES\n", argv[0]);
    return 2;
  }
  for (char *p; (p = malloc(n)) != NULL; total += n) memset(p, 1, n < 4096 ? n : 4096);
  printf("%zu\n", total >> 10);
  return 0;
}
