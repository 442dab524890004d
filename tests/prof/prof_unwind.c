/* SPDX-License-Identifier: MIT */
/* prof_unwind — the cached unwinder of prof.c records the stacks libgcc
 * records.  Run with LITHE_PROF=1 LITHE_PROF_SAMPLE=1 (every allocation
 * sampled) and LITHE_PROF_UNWIND=check: each stack is taken both ways and
 * lithe aborts with both printed when they differ; at exit it says how
 * many were checked and how many the cached unwinder left to libgcc.
 * The frames cover what the rules distinguish: frames without a frame
 * pointer (rsp-based CFA), frames with one (a variable-length array makes
 * GCC keep rbp), a recursion deeper than the 64 frames kept, a frame over
 * the 1 MiB a cached rule holds, a thread (the stack ends in clone3), and
 * a signal handler (its frame is a signal frame: libgcc's), then a stack
 * cached before is walked again.
 *
 * What the tests check, in detail:
 *
 * `prof_unwind`: every sampled stack (`LITHE_PROF_SAMPLE=1`) of rsp- and
 * rbp-based frames, an 80-deep recursion, a 2 MiB frame, a thread and a
 * signal handler taken by the cached unwinder and by libgcc and compared
 * (`LITHE_PROF_UNWIND=check` aborts on a difference): at least 400 the same
 * and the 2 frames it cannot describe left to libgcc; by default (no
 * libgcc_s) those stacks are cut there and the rest walked */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

__attribute__((noinline)) static void use(void *p) {
  sink = p;
  free(p);
}

/* rbp-based: the VLA's size is known only at run time */
__attribute__((noinline)) static void with_vla(size_t n) {
  char buf[n];
  memset(buf, 1, n);
  use(malloc(64 + (size_t)buf[n / 2]));
}

__attribute__((noinline)) static int recurse(int depth) {
  if (depth == 0) {
    with_vla(40);
    use(malloc(100));
    return 1;
  }
  /* the VLA every third level: rsp- and rbp-based frames mixed */
  if (depth % 3 == 0) {
    char buf[depth + 16];
    memset(buf, 0, sizeof buf);
    return recurse(depth - 1) + buf[depth];
  }
  return recurse(depth - 1) + 1;
}

/* a frame of 2 MiB: its rule is not cached (the stack is libgcc's) */
__attribute__((noinline)) static void big_frame(void) {
  volatile char big[2 << 20];
  big[0] = 1;
  big[sizeof big - 1] = 1;
  use(malloc(200));
}

static void on_signal(int sig) {
  (void)sig;
  use(malloc(300)); /* raise() delivers it here, outside malloc */
}

static void *thread_main(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) recurse(i % 10);
  return NULL;
}

int main(void) {
  for (int round = 0; round < 2; round++) { /* the second: the rules cached */
    for (int d = 0; d < 80; d += 7) recurse(d);
    big_frame();
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0) return 1;
    pthread_join(t, NULL);
  }
  printf("prof_unwind: done\n");
  return 0;
}
