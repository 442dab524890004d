/* SPDX-License-Identifier: MIT */
/* fork_threads [FORKS]: 4 threads allocate and free without pause while the
 * main thread forks 50 times. Each child allocates and frees some megabytes
 * in several sizes, frees blocks the parent allocated before the fork and
 * blocks of a thread that does not exist in the child, runs a thread of its
 * own that allocates, and exits 0. Every 5th fork is made by a second thread. A child that deadlocks
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

/* blocks of a helper thread that is alive at the fork but absent in the
 * child (unless the helper is the one that forks) */
#define NORPH 32
static void *orphan[NORPH];
static size_t orphan_n[NORPH];
static pthread_barrier_t hbar;
static int fork_in_helper;
static volatile pid_t helper_pid;
static void child_work(void);

static void *helper(void *arg) {
  uint64_t rng = 99 + (uint64_t)(intptr_t)arg;
  for (int i = 0; i < NORPH; i++) {
    orphan_n[i] = 1 + (size_t)(tu_rand(&rng) % (i < 2 ? 500000 : 2000));
    orphan[i] = malloc(orphan_n[i]);
    CHECK(orphan[i] != NULL);
    tu_fill(orphan[i], orphan_n[i], tu_seed(orphan[i], orphan_n[i]));
  }
  pthread_barrier_wait(&hbar); /* ready: main forks now (or we do) */
  if (fork_in_helper) {
    pid_t pid = fork();
    if (pid == 0) child_work();
    helper_pid = pid;
  }
  pthread_barrier_wait(&hbar);
  return NULL;
}

static void child_work(void) {
  alarm(30); /* a deadlocked child dies instead of hanging */
  for (int i = 0; i < NORPH; i++) {
    if (tu_check(orphan[i], orphan_n[i], tu_seed(orphan[i], orphan_n[i])) >= 0) _exit(19);
    free(orphan[i]);
  }
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

/* What a child that did not finish is doing, before it is killed: its
 * state (R: running, a loop; S: asleep, a lock), where the kernel has it,
 * and, where gdb is installed, every thread's stack.  A hang came once in
 * a few thousand forks of the TSan build (child still running after 40 s,
 * before its alarm(30) was set, so inside fork's child handlers), and no
 * run of hundreds on a developer's machine caught it: the CI log is where
 * it will be seen next. */
static void describe_hung(pid_t pid) {
  static const char *const files[] = {"stat", "wchan", "syscall"};
  for (int i = 0; i < 3; i++) {
    char path[64], buf[512] = {0};
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, files[i]);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    printf("hung child %d: %s: %s\n", (int)pid, files[i], n ? buf : "(unreadable)");
  }
  char cmd[160];
  snprintf(cmd, sizeof cmd,
           "command -v gdb >/dev/null && timeout 60 gdb -p %d -batch -ex 'thread apply all bt 30' 2>&1 | "
           "grep -v '^\\[' | head -150",
           (int)pid);
  fflush(stdout);
  if (system(cmd) != 0) printf("hung child %d: no stack (gdb not installed or failed)\n", (int)pid);
  fflush(stdout);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int forks = argc > 1 ? atoi(argv[1]) : 50;
  tu_require_lithe();
  alarm(240); /* the whole test, as a last resort */

  pthread_t th[NT];
  for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, churn, (void *)(intptr_t)i) == 0);
  uint64_t rng = 4242;
  int from_thread = 0;
  pthread_barrier_init(&hbar, NULL, 2);
  double t0 = tu_now(), slowest = 0;
  for (int f = 0; f < forks; f++) {
    for (int i = 0; i < NINH; i++) {
      inherited_n[i] = 1 + (size_t)(tu_rand(&rng) % (i < 4 ? 2000000 : 3000));
      inherited[i] = malloc(inherited_n[i]);
      CHECK(inherited[i] != NULL);
      tu_fill(inherited[i], inherited_n[i], tu_seed(inherited[i], inherited_n[i]));
    }
    fork_in_helper = f % 5 == 4; /* every 5th fork is made by a second thread */
    pthread_t ht;
    CHECK(pthread_create(&ht, NULL, helper, (void *)(intptr_t)f) == 0);
    pthread_barrier_wait(&hbar);
    usleep((useconds_t)(tu_rand(&rng) % 3000)); /* land the fork at a random point */
    double tf = tu_now();
    pid_t pid;
    if (fork_in_helper) {
      pthread_barrier_wait(&hbar);
      pid = helper_pid;
      from_thread++;
    } else {
      pid = fork();
      if (pid == 0) child_work();
      pthread_barrier_wait(&hbar);
    }
    CHECK(pid > 0);
    atomic_store(&paused, 1);
    pthread_join(ht, NULL); /* in the parent the helper's blocks outlive it */
    int status = 0;
    pid_t w;
    double deadline = tu_now() + 40;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && tu_now() < deadline) usleep(2000);
    if (w == 0) {
      describe_hung(pid);
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
    for (int i = 0; i < NORPH; i++) {
      CHECK(tu_check(orphan[i], orphan_n[i], tu_seed(orphan[i], orphan_n[i])) < 0);
      free(orphan[i]);
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  printf("forks: %d children (%d forked by a second thread) exited 0 in %.2f s (slowest %.3f s); "
         "threads did %ld ops meanwhile\n",
         forks, from_thread, tu_now() - t0, slowest, atomic_load(&thread_ops));
  CHECK(atomic_load(&thread_ops) > forks);
  printf("fork_threads: OK\n");
  return 0;
}
