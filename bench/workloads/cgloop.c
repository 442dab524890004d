/* SPDX-License-Identifier: MIT */
/* bench-cgloop MODE ITERS [SIZE [ns]]: the loop that callgrind-fastpath.sh and
 * fastpath-sweep.sh count.
 *
 *   MODE a: ITERS times { p = malloc(SIZE); free(p); }
 *   MODE b: ITERS/100 times { 100 x malloc(SIZE); 100 x free (same order) }
 *   MODE r: ITERS/100 rounds of a two-thread ping-pong: the main thread
 *           mallocs 100 blocks; a second thread (with a heap of its own)
 *           frees them (remote frees), mallocs 100 (its allocator may hand
 *           the same blocks back) and hands those over; the main thread
 *           frees them.  So ITERS remote frees and ITERS others, with
 *           2 x ITERS mallocs (the figure per "pair" is per round / 100).
 *
 * SIZE defaults to 64 bytes.  With "ns" it prints the nanoseconds per pair
 * (monotonic clock around the loop), for machines without valgrind.
 *
 * ITERS is the number of malloc+free pairs in both modes (for b it must be a
 * multiple of 100). Built with -fno-builtin-malloc/-free, and every pointer
 * goes through a volatile sink, so the compiler keeps every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

static void *volatile g_sink;
static void *g_batch[100];
static pthread_barrier_t g_bar;
static long g_rounds;
static size_t g_size;

static void *ping_pong_peer(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) { /* a heap of its own, where it has one */
    g_sink = malloc(g_size);
    free(g_sink);
  }
  for (long r = 0; r < g_rounds; r++) {
    pthread_barrier_wait(&g_bar);
    for (int i = 0; i < 100; i++) free(g_batch[i]);
    for (int i = 0; i < 100; i++) g_sink = g_batch[i] = malloc(g_size);
    pthread_barrier_wait(&g_bar);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5 || (strcmp(argv[1], "a") && strcmp(argv[1], "b") && strcmp(argv[1], "r")) ||
      (argc == 5 && strcmp(argv[4], "ns"))) {
    fputs("usage: bench-cgloop a|b|r ITERS [SIZE [ns]]\n", stderr);
    return 2;
  }
  long iters = atol(argv[2]);
  size_t size = argc >= 4 ? (size_t)atol(argv[3]) : 64;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (argv[1][0] == 'a') {
    for (long i = 0; i < iters; i++) {
      void *p = malloc(size);
      g_sink = p;
      free(p);
    }
  } else if (argv[1][0] == 'r') {
    if (iters % 100) {
      fputs("bench-cgloop: ITERS must be a multiple of 100 in mode r\n", stderr);
      return 2;
    }
    g_rounds = iters / 100;
    g_size = size;
    pthread_t peer;
    pthread_barrier_init(&g_bar, NULL, 2);
    if (pthread_create(&peer, NULL, ping_pong_peer, NULL) != 0) {
      fputs("bench-cgloop: pthread_create failed\n", stderr);
      return 1;
    }
    for (long r = 0; r < g_rounds; r++) {
      for (int i = 0; i < 100; i++) g_sink = g_batch[i] = malloc(size);
      pthread_barrier_wait(&g_bar);
      pthread_barrier_wait(&g_bar);
      for (int i = 0; i < 100; i++) free(g_batch[i]);
    }
    pthread_join(peer, NULL);
  } else {
    if (iters % 100) {
      fputs("bench-cgloop: ITERS must be a multiple of 100 in mode b\n", stderr);
      return 2;
    }
    for (long r = 0; r < iters / 100; r++) {
      for (int i = 0; i < 100; i++) g_sink = g_batch[i] = malloc(size);
      for (int i = 0; i < 100; i++) free(g_batch[i]);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (argc == 5)
    printf("%.2f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                         (double)(iters ? iters : 1));
  return 0;
}
