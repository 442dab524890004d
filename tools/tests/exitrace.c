/* SPDX-License-Identifier: MIT */
/* Exits (exit() or, with an argument, _exit()) while four threads keep
 * allocating and freeing, also each other's blocks. The tracer must still
 * write a complete, valid trace. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *shared[1024];
static void *worker(void *a) {
  unsigned x = (unsigned)(size_t)a;
  for (;;) {
    x = x * 1103515245u + 12345u;
    void *p = malloc(16 + x % 500);
    void *old = __atomic_exchange_n(&shared[(x >> 8) % 1024], p, __ATOMIC_ACQ_REL);
    free(old);
  }
  return NULL;
}
int main(int argc, char **argv) {
  (void)argv;
  pthread_t t;
  for (size_t i = 0; i < 4; i++) pthread_create(&t, NULL, worker, (void *)i);
  usleep(100000);
  if (argc > 1) _exit(0);
  exit(0);
}
