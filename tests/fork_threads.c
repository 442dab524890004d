/* fork_threads [FORKS]: 4 threads allocate and free without pause while the
 * main thread forks 50 times. Each child allocates and frees some megabytes
 * in several sizes, frees blocks the parent allocated before the fork, runs
 * a thread of its own that allocates, and exits 0. A child that deadlocks
 * (an allocator lock held across fork) is killed after a timeout and fails
 * the test. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#define NT 4
static atomic_int stop;
static atomic_int paused; /* while a child runs, so it gets the CPU */
static atomic_long thread_ops;

static void *churn(void *arg) {
  uint64_t rng = 1000 + (uint64_t)(intptr_t)arg;
  enum { S = 512 };
  void *ps[S] = {0};
  size_t ns[S] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    if (atomic_load_explicit(&paused, memory_order_relaxed)) {
      usleep(200);
      continue;
    }
    int i = (int)(tu_rand(&rng) % S);
    if (ps[i]) {
      CHECKF(tu_check(ps[i], ns[i], tu_seed(ps[i], ns[i])) < 0, "parent thread: block corrupted");
      free(ps[i]);
      ps[i] = NULL;
    } else {
      uint64_t r = tu_rand(&rng) % 1000;
      ns[i] = r < 900 ? 1 + r % 512 : r < 995 ? 1000 + r * 60 : (size_t)(1 + r % 3) << 20;
      ps[i] = malloc(ns[i]);
      CHECK(ps[i] != NULL);
      tu_fill(ps[i], ns[i], tu_seed(ps[i], ns[i]));
    }
    atomic_fetch_add_explicit(&thread_ops, 1, memory_order_relaxed);
  }
  for (int i = 0; i < S; i++) free(ps[i]);
  return NULL;
}

static void *child_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++) {
    size_t n = 1 + (size_t)(i * 131) % 20000;
    char *p = malloc(n);
    if (!p) _exit(11);
    memset(p, i, n);
    free(p);
  }
  return (void *)1;
}

/* blocks the parent allocates before each fork; the child frees them */
#define NINH 64
static void *inherited[NINH];
static size_t inherited_n[NINH];

static void child_work(void) {
  alarm(30); /* a deadlocked child dies instead of hanging */
  for (int i = 0; i < NINH; i++) {
    if (tu_check(inherited[i], inherited_n[i], tu_seed(inherited[i], inherited_n[i])) >= 0)
      _exit(12);
    free(inherited[i]);
  }
  static const size_t sizes[] = {16, 100, 1000, 5000, 40000, 200000, 1 << 20, 2 << 20};
  void *ps[64];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 64; i++) {
      size_t n = sizes[i % 8];
      ps[i] = i % 4 == 3 ? calloc(1, n) : malloc(n);
      if (!ps[i]) _exit(13);
      tu_fill(ps[i], n, tu_seed(ps[i], n));
    }
    for (int i = 0; i < 64; i++) {
      size_t n = sizes[i % 8];
      if (tu_check(ps[i], n, tu_seed(ps[i], n)) >= 0) _exit(14);
      ps[i] = realloc(ps[i], n / 2 + 1);
      if (!ps[i]) _exit(15);
      free(ps[i]);
    }
  }
  char *x = malloc((size_t)70 << 20); /* one xlarge: touch its first and last pages */
  if (!x) _exit(16);
  memset(x, 1, 1 << 16);
  memset(x + ((size_t)70 << 20) - (1 << 16), 2, 1 << 16);
  free(x);
  pthread_t t;
  void *ret = NULL;
  if (pthread_create(&t, NULL, child_thread, NULL) != 0) _exit(17);
  pthread_join(t, &ret);
  if (ret != (void *)1) _exit(18);
  exit(0); /* atexit handlers and stdio too */
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int forks = argc > 1 ? atoi(argv[1]) : 50;
  tu_require_lithe();
  alarm(240); /* the whole test, as a last resort */

  pthread_t th[NT];
  for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, churn, (void *)(intptr_t)i) == 0);
  uint64_t rng = 4242;
  double t0 = tu_now(), slowest = 0;
  for (int f = 0; f < forks; f++) {
    for (int i = 0; i < NINH; i++) {
      inherited_n[i] = 1 + (size_t)(tu_rand(&rng) % (i < 4 ? 2000000 : 3000));
      inherited[i] = malloc(inherited_n[i]);
      CHECK(inherited[i] != NULL);
      tu_fill(inherited[i], inherited_n[i], tu_seed(inherited[i], inherited_n[i]));
    }
    usleep((useconds_t)(tu_rand(&rng) % 3000)); /* land the fork at a random point */
    double tf = tu_now();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) child_work();
    atomic_store(&paused, 1);
    int status = 0;
    pid_t w;
    double deadline = tu_now() + 40;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && tu_now() < deadline) usleep(2000);
    if (w == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("fork %d: child %d still running after 40 s: deadlock after fork", f, (int)pid);
    }
    CHECK(w == pid);
    atomic_store(&paused, 0);
    double took = tu_now() - tf;
    if (took > slowest) slowest = took;
    if (WIFSIGNALED(status))
      FAIL("fork %d: child killed by signal %d (%s)%s", f, WTERMSIG(status),
           strsignal(WTERMSIG(status)),
           WTERMSIG(status) == SIGALRM ? ": deadlocked in the child" : "");
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork %d: child exited %d", f,
           WEXITSTATUS(status));
    for (int i = 0; i < NINH; i++) { /* the parent's copies are intact too */
      CHECK(tu_check(inherited[i], inherited_n[i], tu_seed(inherited[i], inherited_n[i])) < 0);
      free(inherited[i]);
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  printf("forks: %d children exited 0 in %.2f s (slowest %.3f s); threads did %ld ops meanwhile\n",
         forks, tu_now() - t0, slowest, atomic_load(&thread_ops));
  CHECK(atomic_load(&thread_ops) > forks);
  printf("fork_threads: OK\n");
  return 0;
}
