/* SPDX-License-Identifier: MIT */
/* regress_xlarge_realloc_race — an xlarge realloc that moves (mremap) must
 * not clear the pagemap entry of another thread's new block.
 *
 * Before the fix large_realloc cleared the entry of the old address *after*
 * mremap had freed the old range; another thread's xlarge mmap could land
 * there in between and have its own entry wiped, so its later free / realloc
 * was reported as a bad pointer ("lithe: ... not allocated by lithe").
 *
 * 2 threads for ~2 s: malloc(17 MiB) x2 (the neighbour forces mremap to
 * move), realloc one to 40 MiB, free both. Run in a child (this program
 * re-executed with LITHE_ON_ERROR=ignore): the test fails if the child's
 * stderr carries any "lithe:" report or the child does not exit 0. */
#include "testutil.h"
#include <pthread.h>


static double secs = 2.0;
static volatile int stop;

static void *grower(void *arg) {
  long n = 0;
  (void)arg;
  while (!stop) {
    char *p = malloc(17 * MiB);
    char *big = malloc(17 * MiB); /* neighbour: mremap has to move p */
    if (!p || !big) {
      fprintf(stderr, "malloc(17 MiB) failed: %s\n", strerror(errno));
      exit(3);
    }
    p[0] = 1;
    big[0] = 2;
    char *q = realloc(p, 40 * MiB);
    if (!q) {
      fprintf(stderr, "realloc(40 MiB) failed: %s\n", strerror(errno));
      exit(3);
    }
    if (q[0] != 1 || big[0] != 2) {
      fprintf(stderr, "contents lost across realloc\n");
      exit(4);
    }
    q[40 * MiB - 1] = 3;
    free(q);
    free(big);
    n++;
  }
  return (void *)n;
}

static int child(void) {
  pthread_t t[2];
  void *r;
  long total = 0;
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, grower, NULL) == 0);
  struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
  nanosleep(&ts, NULL);
  stop = 1;
  for (int i = 0; i < 2; i++) {
    CHECK(pthread_join(t[i], &r) == 0);
    total += (long)r;
  }
  printf("child: 2 threads, %ld rounds of malloc x2 / realloc 17->40 MiB / free\n", total);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2) secs = atof(argv[2]);
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  tu_require_lithe();
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(len > 0);
  self[len] = 0;
  char secs_s[32];
  snprintf(secs_s, sizeof secs_s, "%g", secs);
  char *cargv[] = {self, (char *)"child", secs_s, NULL};
  const char *env[] = {"LITHE_ON_ERROR=ignore", NULL};
  static tu_child r; /* 128 KiB of buffers: not on the stack */
  CHECK(tu_run_exec(&r, cargv, env, 60) == 0);
  char how[128];
  tu_describe(&r, how, sizeof how);
  printf("child (LITHE_ON_ERROR=ignore): %s\n%s", how, r.out);
  if (r.errlen) fprintf(stderr, "child's stderr:\n%s\n", r.err);
  CHECKF(strstr(r.err, "lithe:") == NULL, "lithe reported an error in the child (see above)");
  CHECKF(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "child: %s", how);
  printf("no lithe report, child exited 0\n");
  return 0;
}
