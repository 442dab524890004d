/* SPDX-License-Identifier: MIT */
/* stress_remote [BLOCKS_PER_PRODUCER]: producer threads only allocate,
 * consumer threads only free (every free is a remote free). The memory of
 * the blocks freed by the consumers must find its way back to the producers:
 * with at most a few MiB live at any moment, the peak RSS stays far below
 * what millions of blocks would take. At the end the producers exit while
 * consumers still hold their blocks, and those are freed after their owner
 * is gone.
 *
 * What the tests check, in detail:
 *
 * `stress_remote`: 2 producer threads only allocate, 2 consumers only free
 * (4M remote frees): peak RSS stays bounded (freed memory is reused by the
 * producers), some blocks freed after their producer exited; committed < 64
 * MiB after `lithe_collect(true)` */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define PAIRS 2
#define RING 4096
#define BATCH 64

typedef struct {
  pthread_mutex_t mu;
  size_t head, tail;
  void *ring[RING];
  int producer_done;
} chan;

static chan chans[PAIRS];
static long per_producer = 2000000;
static atomic_long freed, bytes_total;
static atomic_int producers_exited;

static void *producer(void *arg) {
  chan *c = &chans[(intptr_t)arg];
  uint64_t rng = 555 + (uint64_t)(intptr_t)arg;
  void *batch[BATCH];
  int nb = 0;
  for (long i = 0; i < per_producer; i++) {
    uint64_t r = tu_rand(&rng) % 1000;
    size_t n = r < 900 ? 24 + r % 500 : r < 995 ? 1000 + r * 30 : 70000 + r * 100;
    unsigned char *p = malloc(n);
    CHECK(p != NULL);
    uint64_t hdr[2] = {tu_seed(p, 0), n};
    memcpy(p, hdr, 16);
    p[n - 1] = (unsigned char)n;
    atomic_fetch_add_explicit(&bytes_total, (long)n, memory_order_relaxed);
    batch[nb++] = p;
    if (nb == BATCH || i == per_producer - 1) {
      for (;;) {
        pthread_mutex_lock(&c->mu);
        if (RING - (c->tail - c->head) >= (size_t)nb) {
          for (int k = 0; k < nb; k++) c->ring[c->tail++ % RING] = batch[k];
          pthread_mutex_unlock(&c->mu);
          break;
        }
        pthread_mutex_unlock(&c->mu);
        sched_yield();
      }
      nb = 0;
    }
  }
  pthread_mutex_lock(&c->mu);
  c->producer_done = 1;
  pthread_mutex_unlock(&c->mu);
  atomic_fetch_add(&producers_exited, 1);
  return NULL;
}

static void check_and_free(unsigned char *p) {
  uint64_t hdr[2];
  memcpy(hdr, p, 16);
  CHECKF(hdr[0] == tu_seed(p, 0), "block %p: header overwritten", (void *)p);
  CHECKF(p[hdr[1] - 1] == (unsigned char)hdr[1], "block %p: last byte overwritten", (void *)p);
  free(p);
  atomic_fetch_add_explicit(&freed, 1, memory_order_relaxed);
}

static void *consumer(void *arg) {
  chan *c = &chans[(intptr_t)arg];
  void *got[256];
  void *held[4096]; /* kept until the producers have exited */
  int nheld = 0;
  for (;;) {
    pthread_mutex_lock(&c->mu);
    int n = 0;
    while (n < 256 && c->head < c->tail) got[n++] = c->ring[c->head++ % RING];
    int done = c->producer_done && c->head == c->tail;
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < n; i++) {
      if (nheld < 4096 && ((tu_mix((uintptr_t)got[i]) >> 20) & 1023) == 0) held[nheld++] = got[i];
      else check_and_free(got[i]);
    }
    if (done) break;
    if (n == 0) sched_yield();
  }
  while (atomic_load(&producers_exited) < PAIRS) sched_yield();
  for (int i = 0; i < nheld; i++) check_and_free(held[i]); /* their owner is gone */
  return (void *)(intptr_t)nheld;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) per_producer = atol(argv[1]);
  tu_require_lithe();
  for (int i = 0; i < PAIRS; i++) pthread_mutex_init(&chans[i].mu, NULL);
  long rss0 = tu_status_kb("VmRSS");
  double t0 = tu_now();
  pthread_t pt[PAIRS], ct[PAIRS];
  for (intptr_t i = 0; i < PAIRS; i++) {
    CHECK(pthread_create(&ct[i], NULL, consumer, (void *)i) == 0);
    CHECK(pthread_create(&pt[i], NULL, producer, (void *)i) == 0);
  }
  long held = 0;
  for (int i = 0; i < PAIRS; i++) {
    void *r;
    pthread_join(pt[i], NULL);
    pthread_join(ct[i], &r);
    held += (long)(intptr_t)r;
  }
  double dt = tu_now() - t0;
  long hwm = tu_status_kb("VmHWM"), rss1 = tu_status_kb("VmRSS");
  long total = per_producer * PAIRS;
  printf("%ld blocks (%.2f GiB) allocated by %d producers, freed by %d consumers in %.2f s; %ld "
         "freed after their producer exited\n",
         total, atomic_load(&bytes_total) / 1073741824.0, PAIRS, PAIRS, dt, held);
  printf("VmRSS before %ld KiB, peak %ld KiB, after %ld KiB\n", rss0, hwm, rss1);
  CHECKF(atomic_load(&freed) == total, "freed %ld of %ld", atomic_load(&freed), total);
  /* live at any moment: at most 2 rings + batches + held blocks, a few MiB */
  CHECKF(hwm - rss0 < 128 * 1024, "peak RSS grew by %ld KiB: remote frees not reused",
         hwm - rss0);
#ifdef HAVE_LITHE
  lithe_collect(true);
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("lithe after collect: committed %zu KiB, spans small %zu, abandoned %zu, heaps live %zu\n",
         st.committed >> 10, st.spans_small, st.spans_abandoned, st.heaps_live);
  CHECKF(st.committed < ((size_t)64 << 20), "committed %zu KiB after everything was freed",
         st.committed >> 10);
#endif
  printf("stress_remote: OK\n");
  return 0;
}
