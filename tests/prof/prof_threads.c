/* SPDX-License-Identifier: MIT */
/* prof_threads — heap profiling while threads allocate and the process
 * forks (run with LITHE_PROF=1 LITHE_PROF_SAMPLE=16k LITHE_PROF_PREFIX=DIR/p).
 *
 * 4 threads each allocate 64 MiB in blocks of 64 B .. 32 KiB (freed by a
 * neighbour thread half of the time, so samples are freed remotely) while
 * main forks 20 children; each child allocates 8 MiB, dumps with
 * lithe_prof_dump(NULL), starts a thread, and exits (writing its exit
 * profile).  Then main dumps to DIR/main.heap and checks: the file has the
 * heap_v2 header, stack lines and MAPPED_LIBRARIES; the bytes allocated,
 * scaled as google-pprof scales them, are within 10 % of the 256 MiB the
 * threads allocated (plus what main allocated); every child wrote both of
 * its files.  A deadlocked child or parent fails by SIGALRM. */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lithe.h"
#include "profile_parse.h"

#define THREADS 4
#define PER_THREAD ((size_t)64 << 20)
#define FORKS 20

static _Atomic(void *) mailbox[THREADS][64];
static _Atomic size_t done_threads;

/* One call site per size: google-pprof scales a stack's line by its mean
 * size, exact when all its blocks have one size. */
__attribute__((noinline)) static void *alloc64(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) static void *alloc512(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) static void *alloc4k(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) static void *alloc32k(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
static void *(*const alloc_fn[4])(size_t) = {alloc64, alloc512, alloc4k, alloc32k};

static void *worker(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  uint64_t rng = 0x1234 + id;
  size_t total = 0;
  unsigned k = 0;
  while (total < PER_THREAD) {
    unsigned band = (unsigned)(tu_rand(&rng) % 4);
    size_t n = (size_t)64 << (3 * band);
    char *p = alloc_fn[band](n);
    CHECK(p != NULL);
    p[0] = 1; p[n - 1] = 2;
    total += n;
    if (tu_rand(&rng) & 1) {
      void *old = atomic_exchange(&mailbox[(id + 1) % THREADS][k++ % 64], p);
      free(old);
    } else {
      free(p);
    }
    void *mine = atomic_exchange(&mailbox[id][tu_rand(&rng) % 64], NULL);
    free(mine);
  }
  atomic_fetch_add(&done_threads, 1);
  return NULL;
}

static void *child_thread(void *arg) { return malloc((size_t)(uintptr_t)arg); }

static void child(void) {
  alarm(20);
  void *keep[128];
  for (int i = 0; i < 128; i++) { keep[i] = malloc(64 << 10); memset(keep[i], 7, 64 << 10); }
  if (lithe_prof_dump(NULL) != 0) _exit(3);
  pthread_t t;
  void *r;
  if (pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)1000) || pthread_join(t, &r)) _exit(4);
  free(r);
  for (int i = 0; i < 128; i++) free(keep[i]);
  exit(0); /* not _exit: the at-exit profile is written */
}

int main(int argc, char **argv) {
  tu_require_lithe();
  const char *dir = argc > 1 ? argv[1] : NULL;
  CHECKF(dir != NULL, "usage: %s DIR (and LITHE_PROF_PREFIX=DIR/p)", argv[0]);
  alarm(100);
  pthread_t t[THREADS];
  for (unsigned i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
  pid_t kids[FORKS];
  for (int i = 0; i < FORKS; i++) {
    kids[i] = fork();
    CHECK(kids[i] >= 0);
    if (kids[i] == 0) child();
    usleep(2000);
  }
  for (int i = 0; i < FORKS; i++) {
    int st;
    CHECK(waitpid(kids[i], &st, 0) == kids[i]);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status 0x%x", (int)kids[i], st);
  }
  for (unsigned i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
  for (unsigned i = 0; i < THREADS; i++)
    for (int k = 0; k < 64; k++) free(atomic_exchange(&mailbox[i][k], NULL));

  char path[4096];
  snprintf(path, sizeof path, "%s/main.heap", dir);
  CHECKF(lithe_prof_dump(path) == 0, "lithe_prof_dump(%s): %s", path, strerror(errno));
  double est;
  int maps;
  int stacks = parse(path, &est, &maps);
  double want = (double)THREADS * PER_THREAD;
  printf("main profile: %d stacks, allocated %.1f MiB estimated, %.1f MiB by the threads\n", stacks,
         est / 1048576, want / 1048576);
  CHECKF(maps, "no MAPPED_LIBRARIES section");
  CHECKF(stacks >= 4, "only %d stacks", stacks);
  CHECKF(est > 0.9 * want && est < 1.1 * want + (32 << 20), "estimate %.0f, want %.0f", est, want);

  /* each child: PREFIX.<pid>.0.heap (lithe_prof_dump(NULL)) and PREFIX.<pid>.heap */
  for (int i = 0; i < FORKS; i++) {
    int m;
    double e;
    snprintf(path, sizeof path, "%s/p.%d.0.heap", dir, (int)kids[i]);
    parse(path, &e, &m);
    CHECKF(m, "%s: no MAPPED_LIBRARIES", path);
    snprintf(path, sizeof path, "%s/p.%d.heap", dir, (int)kids[i]);
    parse(path, &e, &m);
    CHECKF(m, "%s: no MAPPED_LIBRARIES", path);
  }
  printf("%d children wrote their profiles (on demand and at exit)\n", FORKS);
  printf("prof_threads: OK\n");
  return 0;
}
