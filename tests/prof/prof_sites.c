/* SPDX-License-Identifier: MIT */
/* prof_sites — allocation sites with known byte shares, for the heap
 * profile and leak report checks of pprof.sh and leaks.sh.
 *
 *   prof_sites shares   100 MB allocated by three functions, 60 / 30 / 10 %
 *                       of the bytes (600, 300 and 100 bytes a call), and at
 *                       exit 8 MB still live in the same shares
 *   prof_sites leak     leaky_function leaves 100 blocks of 1000 bytes; the
 *                       rest (other sizes, other functions) is freed
 *   prof_sites thread_leak  a thread's first and only allocation, in
 *                       thread_first_leak, is left (the leak report used to
 *                       miss a thread's first block: it made the heap)
 * Built with -rdynamic so dladdr (the leak report) names the functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#define ROUNDS 100000 /* x (600 + 300 + 100) bytes = 100 MB */
#define KEEP 8000     /* blocks of each site live at exit: 8 MB */

static void *keep[3][KEEP];

/* memset after malloc: the call is not a tail call, so the site's own
 * frame is on the stack */
__attribute__((noinline)) void *site_sixty(size_t n) { char *p = malloc(n); memset(p, 1, n); return p; }
__attribute__((noinline)) void *site_thirty(size_t n) { char *p = malloc(n); memset(p, 2, n); return p; }
__attribute__((noinline)) void *site_ten(size_t n) { char *p = malloc(n); memset(p, 3, n); return p; }

static int shares(void) {
  for (int i = 0; i < ROUNDS; i++) {
    void *a = site_sixty(600), *b = site_thirty(300), *c = site_ten(100);
    int k = i % KEEP;
    free(keep[0][k]); keep[0][k] = a;
    free(keep[1][k]); keep[1][k] = b;
    free(keep[2][k]); keep[2][k] = c;
  }
  printf("shares: %d rounds, %d blocks of each site live\n", ROUNDS, KEEP);
  return 0;
}

static void *leaked[100];
__attribute__((noinline)) void leaky_function(int i) {
  leaked[i] = malloc(1000);
  memset(leaked[i], 4, 1000);
  leaked[i] = NULL; /* forgotten */
}
__attribute__((noinline)) void tidy_function(int i) {
  void *p = malloc(5000 + (size_t)i);
  memset(p, 5, 5000);
  free(p);
}

static int leak(void) {
  for (int i = 0; i < 100; i++) {
    leaky_function(i);
    tidy_function(i);
  }
  void *big = malloc(1 << 20); /* large and freed */
  free(big);
  printf("leak: 100 blocks of 1000 bytes left by leaky_function\n");
  return 0;
}

__attribute__((noinline)) void *thread_first_leak(void *arg) {
  char *p = malloc(1000);
  memset(p, 6, 1000);
  leaked[0] = p;
  leaked[0] = NULL; /* forgotten */
  return arg;
}

static int thread_leak(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, thread_first_leak, NULL) != 0) return 1;
  pthread_join(t, NULL);
  printf("thread_leak: a thread left its first block\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "shares") == 0) return shares();
  if (argc > 1 && strcmp(argv[1], "leak") == 0) return leak();
  if (argc > 1 && strcmp(argv[1], "thread_leak") == 0) return thread_leak();
  fprintf(stderr, "usage: %s shares|leak|thread_leak\n", argv[0]);
  return 2;
}
