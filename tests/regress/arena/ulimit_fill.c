/* SPDX-License-Identifier: MIT */
/* ulimit_fill N — malloc blocks of N bytes until malloc returns NULL,
 * touching each, and print the KiB handed out.  Linked with no allocator
 * of lithe's: regress_ulimit_v runs it under RLIMIT_AS with glibc, and with
 * lithe through LD_PRELOAD, and compares the two.  With lithe, a second
 * line gives the system calls lithe made for FAIL_TRIES more mallocs of
 * N bytes after the first NULL, and how many of them failed; a third,
 * whether a malloc succeeds once the program has unmapped OWN_BYTES of
 * its own (mapped before the fill, with glibc too): lithe cannot see
 * that munmap, and must still find the room. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lithe.h"

#define FAIL_TRIES 100
#define OWN_BYTES ((size_t)1 << 20)

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 0, total = 0;
  if (n == 0) {
    fprintf(stderr, "usage: %s BLOCK_BYTES\n", argv[0]);
    return 2;
  }
  void *own = mmap(NULL, OWN_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (own == MAP_FAILED) {
    perror("mmap");
    return 2;
  }
  for (char *p; (p = malloc(n)) != NULL; total += n) memset(p, 1, n < 4096 ? n : 4096);
  printf("%zu\n", total >> 10);
  void (*get)(lithe_stats_t *) = (void (*)(lithe_stats_t *))dlsym(RTLD_DEFAULT, "lithe_stats_get");
  if (get) {
    lithe_stats_t before, after;
    int fails = 0;
    get(&before);
    for (int i = 0; i < FAIL_TRIES; i++) fails += malloc(n) == NULL;
    get(&after);
    printf("os calls %zu for %d mallocs, %d failing\n", after.os_calls - before.os_calls, FAIL_TRIES, fails);
    munmap(own, OWN_BYTES);
    printf("after unmapping %zu KiB of its own: malloc %s\n", OWN_BYTES >> 10, malloc(n) ? "ok" : "NULL");
  }
  return 0;
}
