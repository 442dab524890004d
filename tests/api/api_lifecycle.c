/* SPDX-License-Identifier: MIT */
/* api_lifecycle: allocation at the edges of a process's and a thread's life:
 * in a constructor before main, through dlopen/dlsym/dlerror (which allocate
 * inside libc), in pthread key destructors that run while the thread is being
 * torn down (before or after lithe's own), in a block handed from such a
 * destructor to main, and in atexit handlers after main returned. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>

static char *ctor_block;
static size_t ctor_usable;
static volatile int main_done;

__attribute__((constructor)) static void early(void) {
  ctor_block = malloc(1000);
  if (!ctor_block) abort();
  memset(ctor_block, 0x42, 1000);
  ctor_usable = malloc_usable_size(ctor_block);
  char *s = strdup("made before main");
  if (!s) abort();
  free(s);
}

/* ---- thread teardown ---------------------------------------------------- */
#define NKEYS 8
static pthread_key_t keys[NKEYS];
static pthread_mutex_t handed_mu = PTHREAD_MUTEX_INITIALIZER;
static void *handed[4096];
static int nhanded;
static int destructor_runs;

static void key_destructor(void *v) {
  /* free what the thread left, then allocate again during teardown */
  free(v);
  for (int i = 0; i < 20; i++) {
    void *p = malloc(16 + (size_t)i * 100);
    if (!p) abort();
    memset(p, i, 16);
    free(p);
  }
  char *keep = calloc(1, 300);
  if (!keep) abort();
  memset(keep, 0x77, 300);
  pthread_mutex_lock(&handed_mu);
  if (nhanded < 4096) handed[nhanded++] = keep;
  else free(keep);
  destructor_runs++;
  pthread_mutex_unlock(&handed_mu);
}

static void *thread_fn(void *arg) {
  (void)arg;
  for (int k = 0; k < NKEYS; k++) {
    void *v = malloc(64 + (size_t)k * 1000);
    CHECK(v != NULL);
    pthread_setspecific(keys[k], v);
  }
  void *big = malloc(300000);
  CHECK(big != NULL);
  free(big);
  return NULL;
}

static void threads_teardown(void) {
  /* keys made both before and after the allocator's own (created lazily at
   * the first allocation of a thread), so destructors run on both sides */
  for (int k = 0; k < NKEYS / 2; k++) CHECK(pthread_key_create(&keys[k], key_destructor) == 0);
  pthread_t t0;
  CHECK(pthread_create(&t0, NULL, thread_fn, NULL) == 0);
  pthread_join(t0, NULL);
  for (int k = NKEYS / 2; k < NKEYS; k++)
    CHECK(pthread_key_create(&keys[k], key_destructor) == 0);
  for (int round = 0; round < 50; round++) {
    pthread_t th[8];
    for (int i = 0; i < 8; i++) CHECK(pthread_create(&th[i], NULL, thread_fn, NULL) == 0);
    for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  }
  pthread_mutex_lock(&handed_mu);
  int n = nhanded;
  for (int i = 0; i < n; i++) {
    unsigned char *p = handed[i];
    for (int j = 0; j < 300; j++)
      CHECKF(p[j] == 0x77, "block from a key destructor changed at %d", j);
    free(p);
  }
  nhanded = 0;
  pthread_mutex_unlock(&handed_mu);
  printf("pthread key destructors: %d runs allocating during thread exit, %d blocks handed to "
         "main and freed there\n",
         destructor_runs, n);
  CHECK(destructor_runs >= 400);
}

/* ---- dlopen ------------------------------------------------------------- */
static void dl_churn(void) {
  int ok = 0;
  for (int i = 0; i < 200; i++) {
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECKF(h != NULL, "dlopen libm: %s", dlerror());
    double (*c)(double) = (double (*)(double))dlsym(h, "cos");
    CHECK(c != NULL && c(0.0) == 1.0);
    CHECK(dlsym(h, "no_such_symbol_here") == NULL);
    const char *e = dlerror(); /* allocates its message */
    CHECK(e != NULL);
    CHECK(dlopen("libno-such-library.so.0", RTLD_NOW) == NULL);
    CHECK(dlerror() != NULL);
    dlclose(h);
    ok++;
  }
  printf("dlopen/dlsym/dlerror/dlclose: %d rounds\n", ok);
}

/* ---- exit --------------------------------------------------------------- */
static void at_exit_alloc(void) {
  if (!main_done) return; /* main failed: say nothing */
  void *ps[100];
  for (int i = 0; i < 100; i++) {
    ps[i] = malloc(1 + (size_t)i * 997);
    if (!ps[i]) _exit(3);
    memset(ps[i], 1, 1 + (size_t)i * 997);
  }
  for (int i = 0; i < 100; i++) free(ps[i]);
  char *r = realloc(NULL, 10);
  r = realloc(r, 100000);
  if (!r) _exit(4);
  free(r);
  printf("atexit allocations: OK\n");
  fflush(stdout);
}

static int child_main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  CHECK(ctor_block != NULL && ctor_usable >= 1000);
  CHECK(malloc_usable_size(ctor_block) == ctor_usable);
  for (int i = 0; i < 1000; i++) CHECK(ctor_block[i] == 0x42);
  free(ctor_block);
  printf("block from a constructor (before main): usable %zu, freed in main\n", ctor_usable);
  CHECK(atexit(at_exit_alloc) == 0);
  dl_churn();
  threads_teardown();
  printf("api_lifecycle: main OK\n");
  main_done = 1;
  return 0;
}

/* The checks run in a child (this program again), so that what happens
 * after main returns is checked too: exit status 0 and the atexit line. */
int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--child")) return child_main();
  free(ctor_block);
  static tu_child r;
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(sl > 0);
  self[sl] = 0;
  char *args[] = {self, "--child", NULL};
  CHECK(tu_run_exec(&r, args, NULL, 100) == 0);
  char how[128];
  tu_describe(&r, how, sizeof how);
  fputs(r.out, stdout);
  fputs(r.err, stderr);
  printf("child: %s\n", how);
  CHECKF(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "child: %s", how);
  CHECK(strstr(r.out, "api_lifecycle: main OK") != NULL);
  CHECKF(strstr(r.out, "atexit allocations: OK") != NULL, "no allocation after main returned");
  printf("api_lifecycle: OK\n");
  return 0;
}
