/* SPDX-License-Identifier: MIT */
/* thread_churn [THREADS]: 100,000 short-lived threads, 8 at a time. Each
 * allocates and frees a few blocks of mixed sizes and leaves one block for
 * the main thread to free after it has exited. Memory must stay bounded:
 * VmData growth and lithe's committed bytes stay under 64 MiB. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>

#define WAVE 8
static const long LIMIT_KB = 64 * 1024;

typedef struct {
  int id;
  void *left; /* a block this thread leaves for the main thread to free */
  size_t left_n;
} job;

static void *work(void *arg) {
  job *j = arg;
  static const size_t sizes[] = {8, 24, 64, 100, 256, 1000, 3000, 8192, 40000, 100};
  enum { NS = sizeof sizes / sizeof *sizes };
  void *ps[6];
  size_t ns[6];
  for (int i = 0; i < 6; i++) {
    ns[i] = sizes[(j->id * 7 + i * 3) % NS] + (size_t)(j->id % 13);
    if (i == 0 && j->id % 64 == 0) ns[i] = 300000 + (size_t)j->id % 4096; /* now and then large */
    ps[i] = i % 3 == 2 ? calloc(1, ns[i]) : malloc(ns[i]);
    CHECK(ps[i] != NULL);
    tu_fill(ps[i], ns[i], tu_seed(ps[i], ns[i]));
  }
  for (int i = 0; i < 6; i++) {
    CHECKF(tu_check(ps[i], ns[i], tu_seed(ps[i], ns[i])) < 0, "thread %d: block %p corrupted",
           j->id, ps[i]);
    if (i == 5) {
      j->left = ps[i];
      j->left_n = ns[i];
    } else {
      free(ps[i]);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  long total = argc > 1 ? atol(argv[1]) : 100000;
  CHECK(total >= WAVE);
  tu_require_lithe();

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024); /* keep thread stacks out of the figures */

  pthread_t th[WAVE];
  job jobs[WAVE];
  long done = 0;
  long data0 = 0, rss0 = 0;
  double t0 = tu_now();
  while (done < total) {
    for (int i = 0; i < WAVE; i++) {
      jobs[i].id = (int)(done + i);
      jobs[i].left = NULL;
      int rc = pthread_create(&th[i], &attr, work, &jobs[i]);
      CHECKF(rc == 0, "pthread_create: %s (after %ld threads)", strerror(rc), done + i);
    }
    for (int i = 0; i < WAVE; i++) {
      pthread_join(th[i], NULL);
      CHECK(jobs[i].left != NULL);
      CHECKF(tu_check(jobs[i].left, jobs[i].left_n, tu_seed(jobs[i].left, jobs[i].left_n)) < 0,
             "block left by thread %d corrupted after it exited", jobs[i].id);
      free(jobs[i].left); /* freed after its thread is gone */
    }
    done += WAVE;
    if (done == 10 * WAVE) { /* baseline once the first waves settled */
      data0 = tu_status_kb("VmData");
      rss0 = tu_status_kb("VmRSS");
    }
    if (done % 20000 == 0)
      printf("%ld threads, %.1f s, VmData %ld KiB, VmRSS %ld KiB\n", done, tu_now() - t0,
             tu_status_kb("VmData"), tu_status_kb("VmRSS"));
  }
  double dt = tu_now() - t0;
  long data1 = tu_status_kb("VmData"), rss1 = tu_status_kb("VmRSS");
  printf("threads: %ld in %.1f s (%.0f/s)\n", done, dt, done / dt);
  printf("VmData: %ld KiB after 80 threads -> %ld KiB at the end (growth %ld KiB, limit %ld)\n",
         data0, data1, data1 - data0, LIMIT_KB);
  printf("VmRSS:  %ld KiB -> %ld KiB\n", rss0, rss1);
  CHECKF(data1 - data0 < LIMIT_KB, "VmData grew by %ld KiB", data1 - data0);
  CHECKF(rss1 - rss0 < LIMIT_KB, "VmRSS grew by %ld KiB", rss1 - rss0);
#ifdef HAVE_LITHE
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("lithe: committed %zu KiB, metadata %zu KiB, heaps live %zu / created %zu, spans "
         "abandoned %zu, arenas %zu\n",
         st.committed >> 10, st.metadata >> 10, st.heaps_live, st.heaps_created,
         st.spans_abandoned, st.arenas);
  CHECKF(st.committed < (size_t)LIMIT_KB * 1024, "lithe committed %zu KiB", st.committed >> 10);
  CHECKF(st.heaps_live < 64, "heaps_live %zu with no thread but main alive", st.heaps_live);
#endif
  CHECKF(dt < 120, "too slow: %.1f s", dt);
  printf("thread_churn: OK\n");
  return 0;
}
