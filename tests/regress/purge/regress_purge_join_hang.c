/* SPDX-License-Identifier: MIT */
/* regress_purge_join_hang — no free() starts, joins or waits for a thread.
 *
 * glibc frees a joined thread's dynamic TLS blocks with its stack-cache
 * lock held (pthread_join -> __nptl_free_stacks -> _dl_deallocate_tls ->
 * free).  lithe started its purge thread from free() once 1 MiB of freed
 * pages waited, and pthread_create takes that same lock: the joining
 * thread waited on itself, with every signal blocked (only SIGKILL ended
 * it).  malloc_trim(0) joined the purge thread while a free() under the
 * glibc lock waited for lithe's lock, and LITHE_PROF's sampled TLS vectors
 * (page-run blocks) hung without any dlopen.  Now the thread, when asked
 * for (LITHE_PURGE_THREAD=1), starts when the library loads and is only
 * signalled from allocation calls.
 *
 * Each case runs in a child with a time limit (a hang is a failure, not a
 * stalled CI): 64 threads touch 48 KiB of a dlopen'ed library's TLS and are
 * joined, 20 rounds; the same with a thread calling malloc_trim(0) in a
 * loop; the same under LITHE_PROF=1 LITHE_PROF_SAMPLE=4k without the
 * library; and a stress of 3 s where joins of such threads race frees of
 * large blocks, malloc_trim and fork.  Each case with the purge thread off
 * (the default) and on.
 *
 * What the tests check, in detail:
 *
 * `regress_purge_join_hang`: no `free()` starts or joins a thread: children
 * (60 s limit each, a hang fails) where 64 threads touch 48 KiB of a
 * dlopen'ed library's dynamic TLS and are joined (glibc frees it under its
 * stack-cache lock), 20 rounds; the same with a thread in `malloc_trim(0)`;
 * `LITHE_PROF=1 LITHE_PROF_SAMPLE=4k` without the library; 3 s of such
 * joins racing large frees, trims and forks; each with the purge thread off
 * and on (hung at b49eda9 in the first case) */
#include "testutil.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <malloc.h>
#include <sys/wait.h>

static char *(*tls_touch)(int);
static _Atomic int stop;

static void *toucher(void *arg) {
  if (tls_touch) tls_touch((int)(intptr_t)arg);
  void *p = malloc(200); /* (a TLS vector sampled by the profiler, too) */
  free(p);
  return NULL;
}

static void join_rounds(int rounds) {
  for (int r = 0; r < rounds; r++) {
    pthread_t t[64];
    for (int i = 0; i < 64; i++) CHECK(pthread_create(&t[i], NULL, toucher, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 64; i++) CHECK(pthread_join(t[i], NULL) == 0);
  }
}

static void *trimmer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) malloc_trim(0);
  return NULL;
}

static void *freer(void *arg) {
  (void)arg;
  void *b[16] = {0};
  for (unsigned i = 0; !atomic_load(&stop); i++) {
    free(b[i % 16]);
    b[i % 16] = malloc((size_t)(64 + i % 7 * 100) * 1024); /* page runs, some xlarge */
    if (b[i % 16]) memset(b[i % 16], 1, 4096);
  }
  for (int i = 0; i < 16; i++) free(b[i]);
  return NULL;
}

static void *forker(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      void *p = malloc(MiB);
      free(p);
      _exit(p ? 0 : 1);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tu_sleep_ms(20);
  }
  return NULL;
}

static void load_lib(void) {
  void *h = dlopen(TLS_DYN_LIB_PATH, RTLD_NOW);
  CHECKF(h != NULL, "dlopen: %s", dlerror());
  tls_touch = (char *(*)(int))dlsym(h, "tls_dyn_touch");
  CHECK(tls_touch != NULL);
}

static int child(const char *mode) {
  pthread_t a[3];
  int n = 0;
  if (strcmp(mode, "prof")) load_lib();
  if (!strcmp(mode, "trim")) CHECK(pthread_create(&a[n++], NULL, trimmer, NULL) == 0);
  if (!strcmp(mode, "stress")) {
    CHECK(pthread_create(&a[n++], NULL, trimmer, NULL) == 0);
    CHECK(pthread_create(&a[n++], NULL, freer, NULL) == 0);
    CHECK(pthread_create(&a[n++], NULL, forker, NULL) == 0);
    for (double end = tu_now() + 3; tu_now() < end;) join_rounds(1);
  } else {
    join_rounds(20);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < n; i++) CHECK(pthread_join(a[i], NULL) == 0);
  printf("%s: ok\n", mode);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) return child(argv[1]);
  tu_require_lithe();
  static const char *modes[] = {"dlopen", "trim", "prof", "stress"};
  static const char *threads[] = {"LITHE_PURGE_THREAD", "LITHE_PURGE_THREAD=1"};
  static tu_child r;
  int failed = 0;
  for (int m = 0; m < 4; m++)
    for (int t = 0; t < 2; t++) {
      const char *env[] = {threads[t], "LITHE_PURGE_DELAY_MS=300",
                           m == 2 ? "LITHE_PROF=1" : "LITHE_PROF",
                           "LITHE_PROF_SAMPLE=4k", "LITHE_PROF_PREFIX=/tmp/lithe-regress-join", NULL};
      char *argv2[] = {argv[0], (char *)modes[m], NULL};
      CHECK(tu_run_exec(&r, argv2, env, 60) == 0);
      char how[64];
      tu_describe(&r, how, sizeof how);
      bool ok = !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
      printf("%-7s %-22s %s%s", modes[m], threads[t], how, ok ? "\n" : ": FAILED\n");
      if (!ok) {
        fputs(r.out, stdout);
        fputs(r.err, stdout);
        failed++;
      }
    }
  CHECKF(failed == 0, "%d of 8 cases hung or failed (a hang: a thread started or joined inside free)", failed);
  printf("regress_purge_join_hang: 8 cases, no hang\n");
  return 0;
}
