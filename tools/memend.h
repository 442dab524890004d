/* SPDX-License-Identifier: MIT */
/* memend.h: how every benchmark process (bench-mallocbench, lithe-replay,
 * the other bench-* programs) finds out which allocator it runs on and how
 * it measures memory at end, the same way for every allocator.
 *
 *  - memend_init(): looks up, with dlsym, where `malloc` resolved (dladdr
 *    gives the object's file name) and the allocator's own forcing release
 *    call, taken only from that same object:
 *        lithe      lithe_collect(true)
 *        mimalloc   mi_collect(true)
 *        jemalloc   mallctl("arena.4096.purge")   4096 = MALLCTL_ARENAS_ALL
 *        tcmalloc   MallocExtension_ReleaseFreeMemory()
 *        glibc      malloc_trim(0)
 *    (WebKit's MallocBench does the same before its end sample: its Linux
 *    mbscavenge calls malloc_trim(0) for the system allocator.) Taking the
 *    call from malloc's own object matters: a preloaded jemalloc also sees
 *    glibc's malloc_trim, which would trim a heap nobody uses.
 *    Call it before the work: a failed dlsym allocates its error string.
 *  - memend_release(): makes that call; returns its name for the report.
 *  - memend_pause(): the pause before the "unassisted" sample, longer than
 *    lithe's purge delay (LITHE_PURGE_DELAY_MS, default 1000 ms), so a
 *    decay that runs by itself has had its chance; nothing is called.
 *
 * Header-only (static functions) so that the workload programs and the
 * replayer, built separately, share one definition. Nothing here mallocs.
 */
#ifndef LITHE_MEMEND_H
#define LITHE_MEMEND_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* lithe's default purge delay (src/options.c) plus 100 ms of margin */
#define MEMEND_DEFAULT_PAUSE_MS 1100

typedef struct {
  int done;
  char malloc_from[512]; /* file name of the object malloc resolved to */
  void *fbase;           /* its load address */
  void *fn;              /* the release function, or NULL */
  int which;             /* index into memend_calls */
} memend_state;

static memend_state memend_g;

static const struct {
  const char *sym, *label;
} memend_calls[] = {
    {"lithe_collect", "lithe_collect(true)"},
    {"mi_collect", "mi_collect(true)"},
    {"mallctl", "mallctl(\"arena.4096.purge\")"},
    {"MallocExtension_ReleaseFreeMemory", "MallocExtension_ReleaseFreeMemory()"},
    {"malloc_trim", "malloc_trim(0)"},
};

static inline void memend_init(void) {
  if (memend_g.done) return;
  memend_g.done = 1;
  memend_g.which = -1;
  void *m = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info di;
  if (!m || !dladdr(m, &di) || !di.dli_fname) {
    snprintf(memend_g.malloc_from, sizeof memend_g.malloc_from, "?");
    return;
  }
  /* the main program's own name is "" in dladdr: malloc defined in it */
  snprintf(memend_g.malloc_from, sizeof memend_g.malloc_from, "%s",
           di.dli_fname[0] ? di.dli_fname : "(the program itself)");
  memend_g.fbase = di.dli_fbase;
  for (int i = 0; i < (int)(sizeof memend_calls / sizeof memend_calls[0]); i++) {
    void *f = dlsym(RTLD_DEFAULT, memend_calls[i].sym);
    Dl_info fi;
    if (f && dladdr(f, &fi) && fi.dli_fbase == memend_g.fbase) {
      memend_g.fn = f;
      memend_g.which = i;
      return;
    }
  }
}

/* where malloc resolved: "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" */
static inline const char *memend_malloc_from(void) {
  memend_init();
  return memend_g.malloc_from;
}

static inline const char *memend_release(void) {
  memend_init();
  if (!memend_g.fn) return "none (malloc's library exports no known release call)";
  switch (memend_g.which) {
  case 0:
  case 1: ((void (*)(bool))memend_g.fn)(true); break;
  case 2:
    if (((int (*)(const char *, void *, size_t *, void *, size_t))memend_g.fn)(
            "arena.4096.purge", NULL, NULL, NULL, 0) != 0)
      return "mallctl(\"arena.4096.purge\") failed";
    break;
  case 3: ((void (*)(void))memend_g.fn)(); break;
  case 4: ((int (*)(size_t))memend_g.fn)(0); break;
  }
  return memend_calls[memend_g.which].label;
}

/* the pause of the unassisted sample: --pause-ms if given (>= 0), else
 * BENCH_PAUSE_MS if set (lithe-bench sets 0 after the first round, so the
 * 1.1 s is paid once per benchmark and allocator), else
 * LITHE_PURGE_DELAY_MS + 100 when that is set and >= 0, else 1100 ms.
 * 0 = no pause and no unassisted figure. */
static inline long memend_pause_ms(long given) {
  if (given >= 0) return given;
  const char *b = getenv("BENCH_PAUSE_MS");
  if (b && *b) return strtol(b, NULL, 10);
  const char *v = getenv("LITHE_PURGE_DELAY_MS");
  if (v && *v) {
    long d = strtol(v, NULL, 10);
    if (d >= 0) return d + 100;
  }
  return MEMEND_DEFAULT_PAUSE_MS;
}

static inline void memend_pause(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The "# scavenge:" and "# malloc:" lines; `field` receives the
 * " KB unassisted-end-kB" part of the Benchmark line ("" without a pause). */
static inline void memend_print(const char *call, long pause, long unassisted_kb, char *field,
                                size_t n) {
  if (pause > 0)
    printf("# scavenge: %s before end-kB; unassisted-end-kB after a %ld ms pause, no call\n", call,
           pause);
  else printf("# scavenge: %s before end-kB; no pause, no unassisted figure\n", call);
  printf("# malloc: %s\n", memend_malloc_from());
  field[0] = 0;
  if (pause > 0) snprintf(field, n, " %ld unassisted-end-kB", unassisted_kb);
}

#endif
