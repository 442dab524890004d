/* SPDX-License-Identifier: MIT */
/* memcheck_target: run by memcheck.sh under valgrind with
 * LD_PRELOAD=liblithe-valgrind.so.  Four known errors, each in a function
 * of its own so the script can find it in memcheck's stacks:
 *   leak_small   100 bytes never freed        -> definitely lost
 *   leak_large   200000 bytes (a page run)    -> definitely lost
 *   uaf_here     reads int 3 of a freed 160-byte block -> Invalid read of
 *                size 4 ... 12 bytes inside a block of size 160 free'd
 *   double_free_here  frees a block twice     -> Invalid free()
 *   uninit_here  branches on a malloc'd byte never written -> Conditional
 *                jump or move depends on uninitialised value(s)
 * and in between clean work (every size class, calloc, realloc up and
 * down, in place and moving, aligned, large, xlarge, blocks freed by
 * another thread) that must add no error: memcheck.sh checks the error
 * count is exactly the five above.  It prints malloc_usable_size(100):
 * lithe's gives its class less 32 (128), valgrind's own malloc 100 -- proof lithe
 * served the blocks. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink; /* keeps the compiler from dropping a block */

__attribute__((noinline)) static void leak_small(void) {
  char *p = malloc(100);
  memset(p, 1, 100);
  sink = p;
  sink = NULL;
}
__attribute__((noinline)) static void leak_large(void) {
  char *p = malloc(200000);
  memset(p, 2, 200000);
  sink = p;
  sink = NULL;
}
__attribute__((noinline)) static int uaf_here(void) {
  int *p = malloc(40 * sizeof(int));
  p[3] = 7;
  sink = p;
  free(p);
  return ((int *volatile *)&sink)[0][3];
}
__attribute__((noinline)) static void double_free_here(void) {
  char *p = malloc(48);
  sink = p;
  free(p);
  free((void *)sink);
  sink = NULL;
}
__attribute__((noinline)) static int uninit_here(void) {
  char *p = malloc(24);
  sink = p;
  int r = 2;
  if (((volatile char *)p)[5] == 42) puts("byte 5 is 42"); /* the branch memcheck reports */
  free(p);
  sink = NULL;
  return r;
}

static void *remote_free(void *arg) {
  void **v = arg;
  for (int i = 0; i < 256; i++) free(v[i]);
  return NULL;
}

/* nothing here may draw a memcheck error */
static unsigned long clean_work(void) {
  unsigned long sum = 0;
  static void *v[256];
  for (size_t n = 1; n <= 40000; n += n / 8 + 1) { /* every class, page runs */
    char *p = malloc(n);
    memset(p, (int)n, n);
    sum += (unsigned char)p[n - 1];
    p = realloc(p, n + n / 2); /* grow: in place or moved, contents kept */
    sum += (unsigned char)p[n - 1];
    p = realloc(p, n / 3 + 1); /* shrink */
    sum += (unsigned char)p[0];
    free(p);
    char *z = calloc(n, 1);
    sum += (unsigned char)z[n / 2];
    free(z);
  }
  for (size_t a = 16; a <= 65536; a *= 4) {
    void *p = NULL;
    if (posix_memalign(&p, a, 1000 + a) != 0 || ((uintptr_t)p & (a - 1))) return 0;
    memset(p, 3, 1000 + a);
    free(p);
  }
  char *x = malloc(20u << 20); /* xlarge: its own mapping */
  memset(x, 4, 20u << 20);
  x = realloc(x, 30u << 20);
  sum += (unsigned char)x[(20u << 20) - 1];
  free(x);
  char *big = calloc(1, 3u << 20);
  sum += (unsigned char)big[12345];
  big = realloc(big, 6u << 20); /* large: resized in place or moved */
  sum += (unsigned char)big[(3u << 20) - 1];
  free(big);
  for (int i = 0; i < 256; i++) {
    v[i] = malloc(16 + (size_t)i * 8);
    memset(v[i], 5, 16 + (size_t)i * 8);
  }
  pthread_t t;
  pthread_create(&t, NULL, remote_free, v);
  pthread_join(t, NULL);
  for (int i = 0; i < 2000; i++) free(malloc(64)); /* blocks the other thread freed, reused */
  return sum;
}

int main(void) {
  void *p = malloc(100);
  printf("malloc_usable_size(100) = %zu\n", malloc_usable_size(p));
  free(p);
  unsigned long s = clean_work();
  leak_small();
  leak_large();
  int u = uaf_here();
  double_free_here();
  int r = uninit_here();
  s += clean_work();
  printf("done %lu %d %d\n", s, u, r);
  return 0;
}
