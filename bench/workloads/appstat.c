/* SPDX-License-Identifier: MIT */
/* libbench-appstat.so: preloaded by bench-app after the allocator under test
 * (LD_PRELOAD="<allocator> libbench-appstat.so") into every process of a
 * real application (g++'s driver, cc1plus and as; python3; sqlite3; z3;
 * redis-server). At the process's exit it measures what the workload
 * programs measure in themselves (docs/benchmarks.md, "Ground rules"):
 *
 *   peak-kB  VmHWM - RssFile - RssShmem: the anonymous high-water mark
 *   end-kB   RssAnon after the allocator's own forcing release
 *            (tools/memend.h: lithe_collect, mi_collect, mallctl purge,
 *            MallocExtension_ReleaseFreeMemory, malloc_trim)
 *
 * and appends one line to the file named by BENCH_APPSTAT_OUT:
 *
 *   pid <TAB> comm <TAB> peak-kB <TAB> end-kB <TAB> malloc's file <TAB> release call
 *
 * It defines no allocation function and allocates nothing itself after the
 * constructor (which resolves malloc's library and the release call: a failed
 * dlsym allocates its error string, so that happens before the program runs).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memend.h"
#include "procstatus.h"

/* A non-PIE program that calls malloc (Debian's python3) exports a
 * canonical PLT entry for it, and dlsym(RTLD_DEFAULT, "malloc") returns that
 * stub in the program itself. Its calls go to the first definition in the
 * search order after it: find that object (the preloaded allocator, or libc)
 * and take malloc's file and the release call from it instead. */
static struct link_map *map_of(void *addr, Dl_info *di) {
  struct link_map *map = NULL;
  if (!addr || !dladdr1(addr, di, (void **)&map, RTLD_DL_LINKMAP)) return NULL;
  return map;
}

static void appstat_origin(void) {
  void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  struct link_map *head = NULL;
  if (!self || dlinfo(self, RTLD_DI_LINKMAP, &head) != 0 || !head) return;
  Dl_info di;
  if (map_of(dlsym(RTLD_DEFAULT, "malloc"), &di) != head) return; /* not the program's stub */
  for (struct link_map *l = head->l_next; l; l = l->l_next) {
    if (!l->l_name || !l->l_name[0]) continue;
    void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    if (map_of(dlsym(h, "malloc"), &di) != l || !di.dli_fname) continue;
    /* the first object after the program that defines malloc */
    snprintf(memend_g.malloc_from, sizeof memend_g.malloc_from, "%s", di.dli_fname);
    memend_g.fbase = di.dli_fbase;
    memend_g.fn = NULL;
    memend_g.which = -1;
    for (int i = 0; i < (int)(sizeof memend_calls / sizeof memend_calls[0]); i++) {
      Dl_info gi;
      void *g = dlsym(h, memend_calls[i].sym);
      if (map_of(g, &gi) == l) {
        memend_g.fn = g;
        memend_g.which = i;
        break;
      }
    }
    return;
  }
}

__attribute__((constructor)) static void appstat_init(void) {
  if (!getenv("BENCH_APPSTAT_OUT")) return;
  memend_init();
  appstat_origin();
}

__attribute__((destructor)) static void appstat_fini(void) {
  const char *out = getenv("BENCH_APPSTAT_OUT");
  if (!out || !*out) return;
  char buf[8192];
  long hwm = -1, file = 0, shmem = 0, end = -1;
  if (procstatus_read(buf, sizeof buf)) {
    hwm = procstatus_kb(buf, "VmHWM");
    file = procstatus_kb(buf, "RssFile");
    shmem = procstatus_kb(buf, "RssShmem");
  }
  long peak = hwm;
  if (peak >= 0 && file > 0) peak -= file;
  if (peak >= 0 && shmem > 0) peak -= shmem;
  const char *call = memend_release();
  if (procstatus_read(buf, sizeof buf)) end = procstatus_kb(buf, "RssAnon");
  char comm[64] = "?";
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, comm, sizeof comm - 1);
    comm[n > 0 ? n : 0] = 0;
    comm[strcspn(comm, "\n\t")] = 0;
    close(fd);
  }
  char line[1024];
  int n = snprintf(line, sizeof line, "%ld\t%s\t%ld\t%ld\t%s\t%s\n", (long)getpid(), comm, peak,
                   end, memend_malloc_from(), call);
  if (n <= 0) return;
  if (n >= (int)sizeof line) n = (int)sizeof line - 1;
  fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line, (size_t)n); /* one write < PIPE_BUF: not interleaved */
  (void)w;
  close(fd);
}
