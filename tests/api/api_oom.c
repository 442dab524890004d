/* SPDX-License-Identifier: MIT */
/* api_oom: when the kernel refuses memory (RLIMIT_AS in a child), malloc,
 * calloc, realloc, posix_memalign and new arenas fail cleanly with NULL /
 * ENOMEM — no crash, no abort — and once memory is freed, allocation works
 * again. Small, large and xlarge sizes, on the main thread and on a second
 * one. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>

#define MAXP 1000000
static void *ps[MAXP];

static size_t fill_until_null(size_t n, size_t *count, int *err) {
  size_t total = 0;
  *count = 0;
  for (;;) {
    if (*count >= MAXP) FAIL("never ran out of memory with %zu-byte blocks", n);
    errno = 0;
    void *p = malloc(n);
    if (!p) {
      *err = errno;
      return total;
    }
    memset(p, 0x3a, n < 4096 ? n : 4096); /* touch it */
    ps[(*count)++] = p;
    total += n;
  }
}

static void free_all(size_t count) {
  for (size_t i = 0; i < count; i++) free(ps[i]);
}

static void exhaust(size_t n, const char *what) {
  size_t count;
  int err = 0;
  size_t got = fill_until_null(n, &count, &err);
  CHECKF(err == ENOMEM, "%s: malloc returned NULL with errno %d, not ENOMEM", what, err);
  /* every other entry point fails cleanly too, while memory is exhausted */
  errno = 0;
  void *q = calloc(1, n);
  if (q) free(q); /* may fit in a hole; if not, ENOMEM */
  else CHECKF(errno == ENOMEM, "%s: calloc errno %d", what, errno);
  void *a = NULL;
  int rc = posix_memalign(&a, 4096, n * 4);
  if (rc == 0) free(a);
  else CHECKF(rc == ENOMEM, "%s: posix_memalign = %d", what, rc);
  if (count > 0) { /* realloc a block far bigger: fails and keeps the block */
    errno = 0;
    void *r = realloc(ps[0], (size_t)256 << 20);
    if (r) ps[0] = r;
    else CHECKF(errno == ENOMEM && ((unsigned char *)ps[0])[0] == 0x3a, "%s: realloc", what);
  }
  free_all(count);
  /* memory came back: the same again works */
  size_t count2;
  size_t got2 = fill_until_null(n, &count2, &err);
  printf("%s: %zu blocks (%zu MiB) before ENOMEM; after freeing them, %zu blocks (%zu MiB)\n",
         what, count, got >> 20, count2, got2 >> 20);
  CHECKF(got2 >= got / 2, "%s: only %zu MiB could be allocated again (first time %zu MiB)", what,
         got2 >> 20, got >> 20);
  free_all(count2);
}

static void *second_thread(void *arg) {
  (void)arg;
  exhaust(100000, "large 100000 B on a second thread");
  return NULL;
}

static void limited_child(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) free(malloc(100)); /* initialised before the limit */
  long vm = tu_status_kb("VmSize");
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)vm * 1024 + ((rlim_t)384 << 20);
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
  printf("RLIMIT_AS: VmSize %ld KiB + 384 MiB\n", vm);
  exhaust((size_t)80 << 20, "xlarge 80 MiB");
  exhaust((size_t)1 << 20, "large 1 MiB");
  exhaust(2000, "small 2000 B");
  exhaust(512, "small 512 B");
  fflush(stdout);
}

static void limited_thread_child(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) free(malloc(100));
  long vm = tu_status_kb("VmSize");
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)vm * 1024 + ((rlim_t)256 << 20) + ((rlim_t)16 << 20);
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
  /* the new thread's stack counts against the limit: make it small */
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 1 << 20);
  pthread_t t;
  CHECK(pthread_create(&t, &at, second_thread, NULL) == 0);
  pthread_join(t, NULL);
  fflush(stdout);
}

static void run(void (*fn)(void *), const char *name) {
  tu_run_fn_ok(fn, NULL, 100, name, " (allocation under a memory limit must fail cleanly)");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  run(limited_child, "main thread under RLIMIT_AS");
  run(limited_thread_child, "second thread under RLIMIT_AS");
  printf("api_oom: OK\n");
  return 0;
}
