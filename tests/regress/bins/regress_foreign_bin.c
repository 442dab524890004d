/* SPDX-License-Identifier: MIT */
/* regress_foreign_bin CASE — a block freed by a thread that does not own
 * it goes on the freeing thread's bin (heap.c, heap_free_remote), where
 * that thread's next malloc of the size reuses it.  The double-free scan
 * must find it there: before it looked only at the span's lists and the
 * owner's bin, so a second free of such a block was taken, and the block
 * handed out twice.  Each case runs in a child (this program re-executed
 * with "child CASE"), which prints "ADDR <p>" and commits the double free;
 * the test wants SIGABRT and a report naming lithe, free, the address and
 * "double free":
 *
 *   same_thread   thread B frees A's block p, then another block of the
 *                 size (so p is not at its bin's head), then p again
 *   owner         B frees A's block p; then A, p's owner, frees p
 *   third_thread  B frees A's block p; then thread C frees p
 *
 * CASE "reuse" is no misuse: B frees A's block and B's next malloc of the
 * size must return that block (the reason blocks go to B's bin). */
#include "testutil.h"
#include <pthread.h>

static void *volatile sink;
static void *volatile other;
static pthread_barrier_t bar;
static const char *g_case;

static void announce(const void *p) {
  printf("ADDR %p\n", p);
  fflush(stdout);
}

/* A thread's first few allocations come from a shared heap (heap.c,
 * HEAPLESS_ALLOCS): enough of them that the thread has a heap of its own,
 * and a bin of the size in use. */
static void own_heap(void) {
  for (int i = 0; i < 64; i++) free(malloc(100));
}

/* A: owns the block; frees it again in case "owner" */
static void *thread_a(void *arg) {
  (void)arg;
  own_heap();
  sink = malloc(100);
  other = malloc(100);
  CHECK(sink && other);
  pthread_barrier_wait(&bar); /* B frees the block */
  pthread_barrier_wait(&bar);
  if (!strcmp(g_case, "owner")) {
    announce(sink);
    free(sink);
  }
  pthread_barrier_wait(&bar);
  return NULL;
}

/* B: frees A's block first; its bin of the size is in use (B malloced it) */
static void *thread_b(void *arg) {
  (void)arg;
  own_heap(); /* B's heap and its bin of the class are set up */
  pthread_barrier_wait(&bar);
  if (!strcmp(g_case, "reuse")) {
    void *p = sink;
    free(p);
    void *q = malloc(100);
    printf("reuse: freed %p, malloc gave %p\n", p, q);
    fflush(stdout);
    CHECKF(q == p, "B's malloc after freeing A's block %p gave %p", p, q);
    free(q);
    free(other);
  } else {
    free(sink);
    if (!strcmp(g_case, "same_thread")) {
      free(other); /* now sink is not at the head of B's bin */
      announce(sink);
      free(sink);
    }
  }
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  return NULL;
}

static int child(const char *name) {
  g_case = name;
  pthread_t a, b;
  pthread_barrier_init(&bar, NULL, 3);
  CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
  CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar); /* B has freed */
  if (!strcmp(name, "third_thread")) { /* the main thread is C */
    free(malloc(100));
    announce(sink);
    free(sink);
  }
  pthread_barrier_wait(&bar);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  if (!strcmp(name, "reuse")) {
    printf("REUSED\n");
    return 0;
  }
  printf("after: no report\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  CHECK(argc > 1);
  tu_require_lithe();
  static tu_child r;
  char how[64];
  tu_run_self_child(&r, argv[1], how, sizeof how);
  if (!strcmp(argv[1], "reuse")) {
    CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && strstr(r.out, "REUSED"),
           "the reuse case failed (%s)", how);
    return 0;
  }
  tu_expect_report(&r, how, "free", "double free");
  return 0;
}
