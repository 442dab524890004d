/* stats.c — process-wide counters, lithe_stats_get, and the report printed
 * at exit with LITHE_SHOW_STATS=1 (tests grep for its "lithe stats" line to
 * prove lithe really served a program). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

LITHE_API void lithe_stats_get(lithe_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->reserved = atomic_load(&os_stats.reserved);
  out->committed = atomic_load(&os_stats.committed);
  out->metadata = atomic_load(&os_stats.metadata);
  out->os_calls = atomic_load(&os_stats.os_calls);
  out->purges = atomic_load(&os_stats.purges);
  out->xlarge_live = atomic_load(&xlarge_live);
  out->xlarge_bytes = atomic_load(&xlarge_bytes);
  out->large_live = atomic_load(&large_live);
  if (!atomic_load(&lithe_initialized)) return;
  pthread_mutex_lock(&pages_lock);
  out->arenas = pages_arena_count();
  out->purged = pages_purged_bytes();
  pthread_mutex_unlock(&pages_lock);
  heaps_stats(&out->heaps_live, &out->heaps_created, &out->spans_small, &out->spans_abandoned);
}

static void put(int fd, const char *name, size_t v) {
  char line[96], num[24];
  size_t n = strlen(name);
  memcpy(line, name, n);
  size_t k = fmt_dec(num, v);
  memcpy(line + n, num, k);
  line[n + k] = '\n';
  (void)!write(fd, line, n + k + 1);
}

LITHE_API void lithe_stats_print(int fd) {
  lithe_stats_t st;
  lithe_stats_get(&st);
  char head[64] = "lithe stats (pid ";
  size_t n = strlen(head);
  n += fmt_dec(head + n, (uint64_t)getpid());
  memcpy(head + n, "):\n", 4);
  (void)!write(fd, head, n + 3);
  put(fd, "  reserved bytes       ", st.reserved);
  put(fd, "  committed bytes      ", st.committed);
  put(fd, "  purged bytes         ", st.purged);
  put(fd, "  metadata bytes       ", st.metadata);
  put(fd, "  arenas               ", st.arenas);
  put(fd, "  large live           ", st.large_live);
  put(fd, "  xlarge live          ", st.xlarge_live);
  put(fd, "  xlarge bytes         ", st.xlarge_bytes);
  put(fd, "  small spans          ", st.spans_small);
  put(fd, "  heaps live           ", st.heaps_live);
  put(fd, "  heaps created        ", st.heaps_created);
  put(fd, "  spans abandoned      ", st.spans_abandoned);
  put(fd, "  os calls             ", st.os_calls);
  put(fd, "  purges               ", st.purges);
}

/* The report at exit goes to a copy of stderr taken when the library is
 * loaded: programs such as coreutils close stderr in an atexit handler,
 * which runs before this destructor (`LITHE_SHOW_STATS=1 ls` printed
 * nothing).  The copy is used only if it is still the same file then. */
static int report_fd = -1;
static struct stat report_st;

__attribute__((constructor)) static void stats_at_load(void) {
  lithe_process_init(); /* reads the options */
  if (!lithe_opt.show_stats) return;
  report_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 64);
  if (report_fd >= 0 && fstat(report_fd, &report_st) != 0) {
    close(report_fd);
    report_fd = -1;
  }
}

static int report_target(void) {
  struct stat st;
  if (report_fd >= 0 && fstat(report_fd, &st) == 0 && st.st_dev == report_st.st_dev &&
      st.st_ino == report_st.st_ino)
    return report_fd;
  return STDERR_FILENO;
}

__attribute__((destructor)) static void stats_at_exit(void) {
  if (lithe_opt.show_stats) lithe_stats_print(report_target());
}

#define STR_(x) #x
#define STR(x) STR_(x)
LITHE_API const char *lithe_version(void) {
  return "lithe " STR(LITHE_VERSION_MAJOR) "." STR(LITHE_VERSION_MINOR) "." STR(LITHE_VERSION_PATCH);
}
