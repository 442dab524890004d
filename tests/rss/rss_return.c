/* SPDX-License-Identifier: MIT */
/* rss_return: 4 threads allocate 1 GiB together in mixed sizes (small,
 * large, some >= 64 MiB), touch it, free it (half of it freed by another
 * thread than the one that allocated it) and exit. Then lithe_collect(true)
 * must bring VmRSS back within 8 MiB of where it was before the test; a
 * second round does the same with malloc_trim(0). */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>

#define NT 4
#define PER_THREAD ((size_t)256 << 20)
#define MAXBLK (1 << 20)
static const long SLACK_KB = 8 * 1024;

typedef struct {
  int id;
  void **ps;  /* bookkeeping lives in mmap'd memory, not in the allocator */
  size_t *ns;
  size_t count;
} tstate;

static tstate ts[NT];
static pthread_barrier_t bar;

static void *map_array(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(p != MAP_FAILED);
  return p;
}

static void free_half(tstate *t, int parity) {
  for (size_t i = (size_t)parity; i < t->count; i += 2) {
    CHECKF(tu_check(t->ps[i], 64 < t->ns[i] ? 64 : t->ns[i], tu_seed(t->ps[i], t->ns[i])) < 0,
           "block %p corrupted", t->ps[i]);
    free(t->ps[i]);
  }
}

static void *worker(void *arg) {
  tstate *t = arg;
  uint64_t rng = 77 + (uint64_t)t->id;
  size_t bytes = 0;
  t->count = 0;
  /* one xlarge block of 72..80 MiB, then large 64 KiB..4 MiB, then small */
  size_t budget_x = ((size_t)72 << 20) + (tu_rand(&rng) % (8u << 20));
  size_t budget_l = budget_x + PER_THREAD * 3 / 10;
  while (bytes < PER_THREAD) {
    size_t n;
    if (bytes == 0) n = budget_x;
    else if (bytes < budget_l) n = ((size_t)64 << 10) + tu_rand(&rng) % ((size_t)4 << 20);
    else n = 16 + tu_rand(&rng) % 1500;
    char *p = tu_rand(&rng) % 8 == 0 ? calloc(1, n) : malloc(n);
    CHECKF(p != NULL, "malloc(%zu) failed after %zu MiB", n, bytes >> 20);
    memset(p, 0x5c, n); /* touch every page */
    tu_fill(p, 64 < n ? 64 : n, tu_seed(p, n));
    CHECK(t->count < MAXBLK);
    t->ps[t->count] = p;
    t->ns[t->count] = n;
    t->count++;
    bytes += n;
  }
  pthread_barrier_wait(&bar);
  free_half(t, 0);                       /* own blocks          */
  free_half(&ts[(t->id + 1) % NT], 1);   /* a neighbour's blocks */
  return NULL;
}

static void round_trip(long base_kb, const char *how) {
  long peak = 0;
  pthread_barrier_init(&bar, NULL, NT);
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) {
    ts[i].id = i;
    CHECK(pthread_create(&th[i], NULL, worker, &ts[i]) == 0);
  }
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  size_t blocks = 0;
  for (int i = 0; i < NT; i++) {
    blocks += ts[i].count;
    /* drop the bookkeeping pages so they do not count in VmRSS */
    madvise(ts[i].ps, MAXBLK * sizeof(void *), MADV_DONTNEED);
    madvise(ts[i].ns, MAXBLK * sizeof(size_t), MADV_DONTNEED);
  }
  peak = tu_status_kb("VmHWM");
  long before = tu_status_kb("VmRSS");
#ifdef HAVE_LITHE
  if (!strcmp(how, "lithe_collect(true)")) lithe_collect(true);
  else malloc_trim(0);
#else
  malloc_trim(0);
#endif
  long after = tu_status_kb("VmRSS");
  printf("%s: 1 GiB in %zu blocks on %d threads; VmHWM %ld KiB; VmRSS before the test %ld "
         "KiB, after the frees %ld KiB, after %s %ld KiB (limit %ld)\n",
         how, blocks, NT, peak, base_kb, before, how, after, base_kb + SLACK_KB);
#ifdef HAVE_LITHE
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("  lithe: committed %zu KiB, purged %zu KiB, metadata %zu KiB, large live %zu, xlarge "
         "live %zu, spans abandoned %zu\n",
         st.committed >> 10, st.purged >> 10, st.metadata >> 10, st.large_live, st.xlarge_live,
         st.spans_abandoned);
#endif
  if (after - base_kb > SLACK_KB) tu_print_rss_map(1024);
  CHECKF(after - base_kb <= SLACK_KB,
         "after %s VmRSS is %ld KiB above the %ld KiB before the test (limit %ld KiB)", how,
         after - base_kb, base_kb, SLACK_KB);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tu_require_lithe();
  for (int i = 0; i < NT; i++) {
    ts[i].ps = map_array(MAXBLK * sizeof(void *));
    ts[i].ns = map_array(MAXBLK * sizeof(size_t));
  }
  long base = tu_status_kb("VmRSS");
  printf("VmRSS before the test: %ld KiB\n", base);
#ifdef HAVE_LITHE
  round_trip(base, "lithe_collect(true)");
#endif
  round_trip(base, "malloc_trim(0)");
  printf("rss_return: OK\n");
  return 0;
}
