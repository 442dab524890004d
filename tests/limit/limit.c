/* SPDX-License-Identifier: MIT */
/* limit — the memory limit (src/limit.c).
 *
 * (The soft limit's test, limit_cycle, runs bench-limitcycle.)
 *   test-limit hard MB      (LITHE_MEMORY_LIMIT_HARD=1) 1 MiB blocks, then
 *                           100-byte blocks, until malloc returns NULL: errno
 *                           is ENOMEM, what was allocated is <= MB and >= MB/2;
 *                           after freeing half, allocation works again.
 *   test-limit cgroup v1|v2 a cgroup tree under a temporary LITHE_CGROUP_ROOT,
 *                           made from /proc/self/cgroup, limits the process to
 *                           48 MiB (v2 memory.max in its cgroup; v1
 *                           memory.limit_in_bytes of the parent, looser in its
 *                           own): runs "hard 48" with that root and no
 *                           LITHE_MEMORY_LIMIT.
 *   test-limit idle MB      (LITHE_MEMORY_LIMIT=MB m) a thread allocates and
 *                           frees 2 MiB of 32 KiB blocks (its heap keeps
 *                           4 empty spans of 128 KiB for reuse) and goes
 *                           idle; the main thread cycles a working set of
 *                           3/4 MB in page-run sizes: VmRSS stays <= MB, and
 *                           the idle thread's cached spans went back to the
 *                           page heap (lithe_stats spans_small fell by 4 or
 *                           more; the main thread makes no small spans). */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static int hard(long limit_mb) {
  enum { MAX = 1 << 20 };
  static void *big[4096];
  static void *small[MAX];
  size_t nbig = 0, nsmall = 0;
  errno = 0;
  while (nbig < 4096) {
    void *p = malloc(MiB);
    if (!p) break;
    memset(p, 1, MiB);
    big[nbig++] = p;
  }
  int e = errno;
  CHECKF(nbig < 4096 && e == ENOMEM, "1 MiB blocks: %zu allocated, errno %d (want NULL + ENOMEM)", nbig, e);
  errno = 0;
  while (nsmall < MAX) {
    void *p = malloc(100);
    if (!p) break;
    memset(p, 2, 100);
    small[nsmall++] = p;
  }
  e = errno;
  size_t total = nbig * MiB + nsmall * 100;
  long rss = tu_status_kb("VmRSS");
  printf("hard: %zu x 1 MiB + %zu x 100 B = %.1f MiB allocated before ENOMEM (limit %ld MiB), VmRSS %ld kB\n",
         nbig, nsmall, total / (double)MiB, limit_mb, rss);
  CHECKF(nsmall < MAX && e == ENOMEM, "100 B blocks: %zu allocated, errno %d (want NULL + ENOMEM)", nsmall, e);
  CHECKF(total <= (size_t)limit_mb * MiB, "allocated %zu bytes, over the limit", total);
  CHECKF(total >= (size_t)limit_mb * MiB / 2, "allocated only %zu bytes under a %ld MiB limit", total, limit_mb);
  for (size_t i = 0; i < nbig; i += 2) free(big[i]);
  for (size_t i = 0; i < nsmall; i++) free(small[i]);
  size_t again = 0;
  for (size_t i = 0; i < nbig; i += 2, again++) {
    big[i] = malloc(MiB);
    CHECKF(big[i] != NULL, "after freeing half, malloc(1 MiB) #%zu failed", again);
    memset(big[i], 3, MiB);
  }
  for (size_t i = 0; i < nbig; i++) free(big[i]);
  void *p = malloc(100);
  CHECK(p != NULL);
  free(p);
  printf("hard: after freeing half, %zu x 1 MiB allocated again; still running\n", again);
  return 0;
}

static void put_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECKF(f != NULL, "%s: %s", path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

/* mkdir -p */
static void mkdirs(const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
  mkdir(tmp, 0755);
}

static int cgroup(const char *self, const char *version) {
  char root[] = "/tmp/lithe-cgroup.XXXXXX";
  CHECK(mkdtemp(root) != NULL);
  FILE *f = fopen("/proc/self/cgroup", "r");
  CHECK(f != NULL);
  char line[4096], v2path[4096] = "", v1path[4096] = "";
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    if (c2 == c1 + 1) snprintf(v2path, sizeof v2path, "%s", c2 + 1);
    *c2 = 0;
    if (strstr(c1 + 1, "memory")) snprintf(v1path, sizeof v1path, "%s", c2 + 1);
  }
  fclose(f);
  char dir[8192], file[8300];
  if (strcmp(version, "v2") == 0) {
    snprintf(dir, sizeof dir, "%s%s", root, v2path);
    mkdirs(dir);
    snprintf(file, sizeof file, "%s/memory.max", dir);
    put_file(file, "50331648\n"); /* 48 MiB */
    snprintf(file, sizeof file, "%s/memory.max", root);
    if (strcmp(v2path, "/") != 0 && v2path[0]) put_file(file, "max\n");
  } else {
    if (!v1path[0]) snprintf(v1path, sizeof v1path, "/lithe-test");
    /* the parent's limit (48 MiB) is the lower one */
    snprintf(dir, sizeof dir, "%s/memory%s", root, v1path);
    mkdirs(dir);
    snprintf(file, sizeof file, "%s/memory.limit_in_bytes", dir);
    put_file(file, strcmp(v1path, "/") == 0 ? "50331648\n" : "9223372036854771712\n");
    char *slash = strrchr(dir, '/');
    *slash = 0;
    snprintf(file, sizeof file, "%s/memory.limit_in_bytes", dir);
    if (strcmp(v1path, "/") != 0) put_file(file, "50331648\n");
  }
  printf("cgroup %s: v2 path '%s', v1 memory path '%s', fake root %s\n", version, v2path, v1path, root);
  char envroot[4200];
  snprintf(envroot, sizeof envroot, "LITHE_CGROUP_ROOT=%s", root);
  const char *env[] = {envroot, "LITHE_MEMORY_LIMIT", "LITHE_MEMORY_LIMIT_HARD=1", NULL};
  char *argv[] = {(char *)self, "hard", "48", NULL};
  static tu_child r;
  CHECK(tu_run_exec(&r, argv, env, 60) == 0);
  char how[64];
  tu_describe(&r, how, sizeof how);
  printf("%s%s", r.out, r.err);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "hard 48 under the cgroup limit: %s", how);
  return 0;
}

static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int idle_state; /* 1: the thread went idle; 2: it may exit */

static void *idle_thread(void *arg) {
  (void)arg;
  enum { N = 64 }; /* 16 spans of 4 blocks */
  static void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = malloc(32 << 10);
    CHECK(p[i] != NULL);
    memset(p[i], 1, 32 << 10);
  }
  for (int i = 0; i < N; i++) free(p[i]);
  pthread_mutex_lock(&idle_mu);
  idle_state = 1;
  pthread_cond_broadcast(&idle_cv);
  while (idle_state != 2) pthread_cond_wait(&idle_cv, &idle_mu);
  pthread_mutex_unlock(&idle_mu);
  return NULL;
}

static int idle(long limit_mb) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, idle_thread, NULL) == 0);
  pthread_mutex_lock(&idle_mu);
  while (idle_state != 1) pthread_cond_wait(&idle_cv, &idle_mu);
  pthread_mutex_unlock(&idle_mu);
  printf("idle: the thread has freed its blocks and waits\n");
  fflush(stdout);
  lithe_stats_t before, after;
  lithe_stats_get(&before);
  /* 40 KiB and 200 KiB are page runs (above the 32 KiB small sizes) */
  static const size_t sizes[] = {200 << 10, 40 << 10};
  enum { MAXB = 4096 };
  static void *cur[MAXB], *pinned[MAXB];
  size_t npinned = 0, ws = (size_t)limit_mb * MiB / 8 * 7;
  long peak = 0;
  for (int phase = 0; phase < 8; phase++) {
    size_t sz = sizes[phase % 2], n = 0;
    for (size_t total = 0; total < ws && n < MAXB; total += sz, n++) {
      cur[n] = malloc(sz);
      CHECKF(cur[n] != NULL, "phase %d: malloc(%zu) failed", phase, sz);
      memset(cur[n], phase + 1, sz);
      if (n % 16 == 0) {
        long kb = tu_status_kb("VmRSS");
        if (kb > peak) peak = kb;
      }
    }
    for (size_t i = 0; i < npinned; i++) free(pinned[i]);
    npinned = 0;
    for (size_t i = 0; i < n; i++) {
      if (i % 16 == 0) pinned[npinned++] = cur[i];
      else free(cur[i]);
    }
  }
  lithe_stats_get(&after);
  printf("idle: %ld MiB limit, working set %zu MiB: peak VmRSS %ld kB; small spans %zu before, %zu after\n",
         limit_mb, ws / MiB, peak, before.spans_small, after.spans_small);
  for (size_t i = 0; i < npinned; i++) free(pinned[i]);
  pthread_mutex_lock(&idle_mu);
  idle_state = 2;
  pthread_cond_broadcast(&idle_cv);
  pthread_mutex_unlock(&idle_mu);
  CHECK(pthread_join(t, NULL) == 0);
  CHECKF(peak <= limit_mb * 1024, "peak VmRSS %ld kB over the %ld MiB limit", peak, limit_mb);
  CHECKF(after.spans_small + 4 <= before.spans_small,
         "the idle thread's 4 cached spans were not taken back: small spans %zu before, %zu after",
         before.spans_small, after.spans_small);
  return 0;
}

int main(int argc, char **argv) {
  tu_require_lithe();
  if (argc > 2 && strcmp(argv[1], "hard") == 0) return hard(atol(argv[2]));
  if (argc > 2 && strcmp(argv[1], "cgroup") == 0) return cgroup(argv[0], argv[2]);
  if (argc > 2 && strcmp(argv[1], "idle") == 0) return idle(atol(argv[2]));
  fprintf(stderr, "usage: %s hard MB | cgroup v1|v2 | idle MB\n", argv[0]);
  return 2;
}
