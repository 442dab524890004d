/* SPDX-License-Identifier: MIT */
/* thread_churn_remote [THREADS]: short-lived threads (8 at a time) each
 * allocate enough blocks to fill whole spans, hand every block to two
 * long-lived freer threads and exit at once, so the remote frees race with
 * their owner's exit (and with the adoption of its abandoned spans by the
 * next threads). Every block is checked before it is freed; all are freed;
 * memory stays bounded.
 *
 * What the tests check, in detail:
 *
 * `thread_churn_remote`: 40,000 short-lived threads each fill spans with
 * 1200 blocks, hand all of them to 2 freer threads and exit at once: remote
 * frees race the owner's exit and span adoption; all checked and freed,
 * memory bounded */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define WAVE 8
#define PER_THREAD 1200
#define QCAP (1 << 16)

static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;
static void *queue[QCAP];
static size_t qhead, qtail;
static int producers_done;
static atomic_long n_alloc, n_free;

static void push_all(void **ps, int n) {
  pthread_mutex_lock(&qmu);
  for (int i = 0; i < n;) {
    if (qtail - qhead < QCAP) {
      queue[qtail++ % QCAP] = ps[i++];
    } else {
      pthread_cond_broadcast(&qcv);
      pthread_mutex_unlock(&qmu);
      sched_yield();
      pthread_mutex_lock(&qmu);
    }
  }
  pthread_cond_broadcast(&qcv);
  pthread_mutex_unlock(&qmu);
}

static void *short_lived(void *arg) {
  int id = (int)(intptr_t)arg;
  void *ps[PER_THREAD];
  /* mostly one small class (whole spans fill up), some others */
  for (int i = 0; i < PER_THREAD; i++) {
    size_t n = i % 8 == 7 ? 16 + (size_t)((id + i) % 2000) : 48;
    unsigned char *p = malloc(n);
    CHECK(p != NULL);
    uint64_t s = tu_seed(p, 0);
    memcpy(p, &s, 8);
    p[n - 1] = (unsigned char)(n & 0xff);
    p[8] = (unsigned char)(n >> 8); /* n < 4096: two bytes */
    p[9] = (unsigned char)n;
    ps[i] = p;
  }
  atomic_fetch_add_explicit(&n_alloc, PER_THREAD, memory_order_relaxed);
  push_all(ps, PER_THREAD);
  return NULL; /* exit while the freers work on our blocks */
}

static void *freer(void *arg) {
  (void)arg;
  void *got[512];
  for (;;) {
    pthread_mutex_lock(&qmu);
    while (qhead == qtail && !producers_done) pthread_cond_wait(&qcv, &qmu);
    int n = 0;
    while (n < 512 && qhead < qtail) got[n++] = queue[qhead++ % QCAP];
    int done = producers_done && qhead == qtail;
    pthread_mutex_unlock(&qmu);
    for (int i = 0; i < n; i++) {
      unsigned char *p = got[i];
      uint64_t s;
      memcpy(&s, p, 8);
      CHECKF(s == tu_seed(p, 0), "block %p overwritten (handed out twice?)", (void *)p);
      size_t sz = ((size_t)p[8] << 8) | p[9];
      CHECKF(sz >= 16 && p[sz - 1] == (unsigned char)(sz & 0xff), "block %p tail overwritten",
             (void *)p);
      free(p);
    }
    atomic_fetch_add_explicit(&n_free, n, memory_order_relaxed);
    if (done && n == 0) return NULL;
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  long total = argc > 1 ? atol(argv[1]) : 20000;
  tu_require_lithe();
  pthread_t fr[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&fr[i], NULL, freer, NULL) == 0);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  long data0 = 0;
  double t0 = tu_now();
  for (long done = 0; done < total; done += WAVE) {
    pthread_t th[WAVE];
    for (int i = 0; i < WAVE; i++)
      CHECK(pthread_create(&th[i], &attr, short_lived, (void *)(intptr_t)(done + i)) == 0);
    for (int i = 0; i < WAVE; i++) pthread_join(th[i], NULL);
    if (done == 40 * WAVE) data0 = tu_status_kb("VmData");
  }
  pthread_mutex_lock(&qmu);
  producers_done = 1;
  pthread_cond_broadcast(&qcv);
  pthread_mutex_unlock(&qmu);
  for (int i = 0; i < 2; i++) pthread_join(fr[i], NULL);
  double dt = tu_now() - t0;
  long data1 = tu_status_kb("VmData");
  printf("%ld threads x %d blocks, all freed by 2 other threads racing the owners' exit, in "
         "%.1f s\n",
         total, PER_THREAD, dt);
  printf("allocated %ld, freed %ld; VmData %ld -> %ld KiB\n", atomic_load(&n_alloc),
         atomic_load(&n_free), data0, data1);
  CHECK(atomic_load(&n_alloc) == atomic_load(&n_free));
  CHECKF(data1 - data0 < 64 * 1024, "VmData grew by %ld KiB", data1 - data0);
#ifdef HAVE_LITHE
  lithe_collect(true);
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("lithe after collect: committed %zu KiB, spans small %zu, abandoned %zu, heaps live %zu\n",
         st.committed >> 10, st.spans_small, st.spans_abandoned, st.heaps_live);
  CHECKF(st.committed < ((size_t)64 << 20), "committed %zu KiB", st.committed >> 10);
#endif
  printf("thread_churn_remote: OK\n");
  return 0;
}
