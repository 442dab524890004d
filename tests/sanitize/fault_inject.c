/* SPDX-License-Identifier: MIT */
/* fault_inject (Debug build, liblithe.a): every OS call and every metadata
 * allocation a workload makes is made to fail, one at a time, and lithe
 * must survive each: NULL + ENOMEM from the call that needed the memory
 * (or a purge that is simply retried later), no crash, no assertion, a
 * heap that passes lithe_verify() and works afterwards, nothing leaked.
 *
 *   fault_inject            the sweep: runs itself as a child with
 *                           LITHE_FAULT_OS=N for N = 1, 2, ... until a child
 *                           reaches no Nth call, then the same with
 *                           LITHE_FAULT_META=N; prints the counts
 *   fault_inject child      the workload once (what each child runs)
 *
 * The workload: small, large, xlarge and aligned blocks, calloc, a realloc
 * chain small -> large -> xlarge -> bigger (mremap) -> small, two threads
 * freeing each other's blocks and exiting (their spans abandoned), and
 * lithe_collect / malloc_trim; every block patterned and checked. */
#define LITHE_DEBUG 1 /* lithe_verify(): this test links the Debug liblithe.a */
#include "testutil.h"
#include "internal.h"

#include <malloc.h>
#include <pthread.h>

static int nfailed; /* allocations that returned NULL (with ENOMEM) */

/* big blocks are patterned at both ends only (16 KiB each): the sweep runs
 * the workload hundreds of times */
#define EDGE ((size_t)16 << 10)
static void fill(char *p, size_t n, uint64_t seed) {
  if (n <= 2 * EDGE) { tu_fill(p, n, seed); return; }
  tu_fill(p, EDGE, seed);
  tu_fill(p + n - EDGE, EDGE, seed + 1);
}
static long check(const char *p, size_t n, uint64_t seed) {
  if (n <= 2 * EDGE) return tu_check(p, n, seed);
  long bad = tu_check(p, EDGE, seed);
  if (bad >= 0) return bad;
  bad = tu_check(p + n - EDGE, EDGE, seed + 1);
  return bad < 0 ? -1 : (long)(n - EDGE) + bad;
}

#define MAXB 512
typedef struct { char *p; size_t n; } blk_t;

static char *get(size_t n, size_t align, bool zero) {
  void *p = NULL;
  errno = 0;
  if (align) {
    int rc = posix_memalign(&p, align, n);
    if (rc) { CHECKF(rc == ENOMEM, "posix_memalign(%zu, %zu) = %d", align, n, rc); p = NULL; }
  } else {
    p = zero ? calloc(1, n) : malloc(n);
  }
  if (!p) {
    if (!align) CHECKF(errno == ENOMEM, "allocation of %zu returned NULL with errno %d", n, errno);
    nfailed++;
    return NULL;
  }
  if (align) CHECKF(((uintptr_t)p & (align - 1)) == 0, "%p not aligned to %zu", p, align);
  if (zero) CHECKF(tu_nonzero(p, n) < 0, "calloc(%zu) not zero", n);
  fill(p, n, tu_seed(p, n));
  return p;
}

static void put_back(blk_t *b) {
  if (!b->p) return;
  CHECKF(check(b->p, b->n, tu_seed(b->p, b->n)) < 0, "block %p (%zu) corrupted", b->p, b->n);
  free(b->p);
  b->p = NULL;
}

typedef struct { blk_t mine[64], theirs[64]; int id; } thr_t;
static thr_t thr[2];
static pthread_barrier_t bar;

static void *worker(void *arg) {
  thr_t *t = arg;
  for (int i = 0; i < 64; i++) {
    size_t n = (size_t)(i % 8 == 7 ? 40000 : 16 + i * 24);
    t->mine[i] = (blk_t){get(n, 0, false), n};
  }
  pthread_barrier_wait(&bar);
  /* free half of the other thread's blocks (remote frees) */
  thr_t *o = &thr[1 - t->id];
  for (int i = 0; i < 64; i += 2) put_back(&o->mine[i]);
  pthread_barrier_wait(&bar);
  return NULL;
}

static void workload(void) {
  static blk_t b[MAXB];
  int k = 0;
  static const size_t sizes[] = {1, 16, 100, 1000, 5000, 20000, 40000, 300000, 3u << 20, 20u << 20};
  for (int r = 0; r < 3; r++)
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
      b[k] = (blk_t){get(sizes[i], 0, r == 1), sizes[i]};
      k++;
    }
  static const size_t aligns[] = {64, 4096, 65536, 2u << 20};
  for (size_t i = 0; i < 4; i++) {
    b[k] = (blk_t){get(3000 + i, aligns[i], false), 3000 + i};
    k++;
  }
  /* realloc chain: small -> large -> xlarge -> bigger xlarge -> small */
  static const size_t chain[] = {100, 50000, 400000, 18u << 20, 40u << 20, 24u << 20, 200};
  size_t n = chain[0];
  char *p = get(n, 0, false);
  for (size_t i = 1; p && i < sizeof chain / sizeof *chain; i++) {
    errno = 0;
    char *q = realloc(p, chain[i]);
    if (!q) {
      CHECKF(errno == ENOMEM, "realloc to %zu: NULL with errno %d", chain[i], errno);
      nfailed++;
      break; /* p is untouched */
    }
    size_t keep = n < chain[i] ? n : chain[i];
    if (keep > EDGE) keep = EDGE; /* the head, patterned as a whole */
    CHECKF(tu_check(q, keep, tu_seed(p, n)) < 0, "realloc %zu -> %zu lost contents", n, chain[i]);
    p = q;
    n = chain[i];
    fill(p, n, tu_seed(p, n));
  }
  if (p) b[k++] = (blk_t){p, n};
  /* two threads */
  pthread_barrier_init(&bar, NULL, 2);
  pthread_t th[2];
  int started = 0;
  for (int i = 0; i < 2; i++) thr[i].id = i;
  if (pthread_create(&th[0], NULL, worker, &thr[0]) == 0) {
    if (pthread_create(&th[1], NULL, worker, &thr[1]) == 0) started = 2;
    else { pthread_cancel(th[0]); pthread_join(th[0], NULL); memset(thr, 0, sizeof thr); }
  }
  if (started) {
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 64; i++) put_back(&thr[t].mine[i]); /* blocks of exited threads */
  }
  /* free every other block, collect, reallocate */
  for (int i = 0; i < k; i += 2) put_back(&b[i]);
  lithe_collect(false);
  for (int i = 0; i < k; i += 2) b[i] = (blk_t){get(sizes[i % 10], 0, false), sizes[i % 10]};
  lithe_verify();
  for (int i = 0; i < k; i++) put_back(&b[i]);
  lithe_collect(true);
  malloc_trim(0);
  lithe_verify();
  lithe_stats_t st;
  lithe_stats_get(&st);
  CHECKF(st.large_live == 0 && st.xlarge_live == 0, "after freeing all: large_live %zu xlarge_live %zu",
         st.large_live, st.xlarge_live);
  /* the allocator still works: every kind of block again (the fault was one call) */
  for (size_t i = 0; i < 10; i++) {
    char *q = get(sizes[i], 0, false);
    if (!q) q = get(sizes[i], 0, false); /* the fault may be this very call */
    CHECKF(q != NULL, "malloc(%zu) fails twice: more than one call failed", sizes[i]);
    blk_t x = {q, sizes[i]};
    put_back(&x);
  }
  lithe_collect(true);
  lithe_verify();
  lithe_stats_get(&st);
  printf("OK failed_allocations=%d reserved=%zu committed=%zu metadata=%zu\n", nfailed, st.reserved,
         st.committed, st.metadata);
}

typedef struct { long calls, injected, survived, null_results; } sweep_t;

static void parse(const char *out, size_t *reserved, size_t *committed, int *failed) {
  const char *o = strstr(out, "OK ");
  CHECK(o && sscanf(o, "OK failed_allocations=%d reserved=%zu committed=%zu", failed, reserved,
                    committed) == 3);
}

static sweep_t sweep(char *self, const char *var, const char *const *cfg, size_t base_res,
                     size_t base_com) {
  sweep_t r = {0, 0, 0, 0};
  for (long n = 1; n <= 5000; n++) {
    char env[64];
    snprintf(env, sizeof env, "%s=%ld", var, n);
    const char *envv[] = {env, cfg[0], cfg[1], NULL};
    char *argv[] = {self, (char *)"child", NULL};
    static tu_child c;
    CHECK(tu_run_exec(&c, argv, envv, 60) == 0);
    char how[64];
    tu_describe(&c, how, sizeof how);
    bool injected = strstr(c.err, "lithe: warning: fault injection: ") != NULL;
    if (!injected) { /* the workload makes fewer than n such calls */
      CHECKF(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "%s: %s\n%s%s", env, how, c.out, c.err);
      r.calls = n - 1;
      break;
    }
    r.injected++;
    CHECKF(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
           "%s: the child did not survive (%s)\nstdout:\n%s\nstderr:\n%s", env, how, c.out, c.err);
    size_t res, com;
    int failed;
    parse(c.out, &res, &com, &failed);
    /* nothing leaked: within one arena's reservation and 4 MiB of commit of
     * the fault-free run (a failure may move where things land) */
    CHECKF(res <= base_res + ARENA_DEFAULT && com <= base_com + 4 * MiB,
           "%s: reserved %zu committed %zu after freeing all, fault-free run %zu / %zu", env, res,
           com, base_res, base_com);
    if (failed) r.null_results++;
    r.survived++;
  }
  CHECKF(r.calls > 0, "%s: the sweep did not end (over 5000 calls?)", var);
  return r;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    workload();
    return 0;
  }
  tu_require_lithe();
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(len > 0);
  self[len] = 0;
  /* two configurations: the defaults, and small arenas (4 MiB: more
   * arenas, large_max 1 MiB) with pages purged as soon as they are free
   * (more madvise) */
  static const char *const cfgs[2][3] = {
      {"LITHE_ARENA_SIZE", "LITHE_PURGE_DELAY_MS", NULL},
      {"LITHE_ARENA_SIZE=4m", "LITHE_PURGE_DELAY_MS=0", NULL}};
  long total_calls = 0, total_survived = 0;
  for (int k = 0; k < 2; k++) {
    const char *const *cfg = cfgs[k];
    /* the fault-free run: its figures are the baseline */
    static tu_child c;
    char *args[] = {self, (char *)"child", NULL};
    const char *none[] = {"LITHE_FAULT_OS", "LITHE_FAULT_META", cfg[0], cfg[1], NULL};
    CHECK(tu_run_exec(&c, args, none, 60) == 0);
    CHECKF(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "fault-free run failed:\n%s%s", c.out,
           c.err);
    size_t res, com;
    int failed;
    parse(c.out, &res, &com, &failed);
    CHECKF(failed == 0, "the fault-free run had %d failed allocations", failed);
    printf("[%s %s] fault-free run: %s", cfg[0], cfg[1], strstr(c.out, "OK "));
    sweep_t os = sweep(self, "LITHE_FAULT_OS", cfg, res, com);
    printf("  LITHE_FAULT_OS: %ld mmap/mprotect/madvise/mremap calls, each failed once: %ld failed, "
           "%ld survived (%ld runs saw NULL + ENOMEM; the other failures were absorbed: a purge "
           "left for later, a commit retried smaller, a fallback)\n",
           os.calls, os.injected, os.survived, os.null_results);
    sweep_t meta = sweep(self, "LITHE_FAULT_META", cfg, res, com);
    printf("  LITHE_FAULT_META: %ld metadata allocations, each failed once: %ld failed, %ld "
           "survived (%ld runs saw NULL + ENOMEM)\n",
           meta.calls, meta.injected, meta.survived, meta.null_results);
    total_calls += os.injected + meta.injected;
    total_survived += os.survived + meta.survived;
  }
  printf("total: %ld calls failed, %ld survived\n", total_calls, total_survived);
  return 0;
}
