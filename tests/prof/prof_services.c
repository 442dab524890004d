/* SPDX-License-Identifier: MIT */
/* prof_services — a service's profiles: dumps on an interval of bytes, on
 * a time interval and on a signal; the exit profile when SIGTERM ends it;
 * LITHE_PROF=1 with LITHE_LEAKS=1.  Run under LD_PRELOAD by services.sh
 * and leaks_pprof.sh.  Built as a PIE without -rdynamic (no dynamic
 * symbols for dladdr): google-pprof must name its static functions from
 * the symbol table.
 *   prof_services volume MIB   allocate and free MIB MiB in 4 KiB blocks
 *   prof_services time MS      allocate and free 4 KiB blocks for MS ms
 *   prof_services signal       SIGUSR2 by raise(), then by a child's kill,
 *                              each followed by 4 MiB of allocations
 *   prof_services term         keep 100 blocks, then raise(SIGTERM)
 *   prof_services term_own     the same with the program's own SIGTERM
 *                              handler, which exits 3
 *   prof_services leak         leaky_static leaves 100 blocks of 1000 B */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static void *volatile sink;

static __attribute__((noinline)) void churn(size_t bytes) {
  for (size_t done = 0; done < bytes; done += 4096) {
    char *p = malloc(4096);
    p[0] = 1;
    sink = p;
    free(p);
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *kept[100];
static __attribute__((noinline)) void keep_some(void) {
  for (int i = 0; i < 100; i++) {
    kept[i] = malloc(1000);
    memset(kept[i], 1, 1000);
  }
}

static __attribute__((noinline)) void leaky_static(int i) {
  char *p = malloc(1000);
  memset(p, 4, 1000);
  sink = p; /* forgotten at the next call */
  (void)i;
}

static void own_term(int sig) {
  (void)sig;
  static const char msg[] = "prof_services: own SIGTERM handler\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(4);
  _exit(3);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "volume") && argc > 2) {
    churn((size_t)atol(argv[2]) << 20);
  } else if (!strcmp(mode, "time") && argc > 2) {
    double end = now_ms() + atof(argv[2]);
    while (now_ms() < end) churn(256 << 10);
  } else if (!strcmp(mode, "signal")) {
    raise(SIGUSR2);
    churn(4 << 20);
    pid_t c = fork();
    if (c == 0) {
      kill(getppid(), SIGUSR2);
      _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    churn(4 << 20);
  } else if (!strcmp(mode, "term") || !strcmp(mode, "term_own")) {
    if (!strcmp(mode, "term_own")) signal(SIGTERM, own_term);
    keep_some();
    churn(1 << 20);
    raise(SIGTERM);
    return 2; /* not reached: SIGTERM ends the process */
  } else if (!strcmp(mode, "leak")) {
    for (int i = 0; i < 100; i++) {
      leaky_static(i);
      free(malloc(5000)); /* freed: not a leak */
    }
  } else {
    fprintf(stderr, "usage: %s volume MIB | time MS | signal | term | term_own | leak\n", argv[0]);
    return 2;
  }
  printf("prof_services %s: done\n", mode);
  return 0;
}
