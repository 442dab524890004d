/* stats.c — process-wide counters, lithe_stats_get, lithe_stats_print and
 * its JSON form, and the report printed at exit with LITHE_SHOW_STATS=1 or
 * =json (tests grep for the text report's "lithe stats" line to
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

/* ---- JSON (lithe_stats_print_json, LITHE_SHOW_STATS=json) ----------------
 * Written with write(2) from a stack buffer: nothing allocates, so it is
 * safe at exit and from a signal-free context with lithe half torn down.
 * The fields are documented one by one in docs/stats.md. */
typedef struct jout_s {
  int fd;
  size_t len;
  char buf[2048];
} jout_t;

static void j_flush(jout_t *o) {
  for (size_t off = 0; off < o->len;) {
    ssize_t w = write(o->fd, o->buf + off, o->len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  o->len = 0;
}
static void j_str(jout_t *o, const char *str) {
  for (; *str; str++) {
    if (o->len == sizeof o->buf) j_flush(o);
    o->buf[o->len++] = *str;
  }
}
static void j_num(jout_t *o, size_t v) {
  char num[24];
  fmt_dec(num, v);
  j_str(o, num);
}
/* "key": v, with a comma before it unless it is the first of its object */
static void j_field(jout_t *o, const char *key, size_t v, bool first) {
  j_str(o, first ? "\"" : ", \"");
  j_str(o, key);
  j_str(o, "\": ");
  j_num(o, v);
}

LITHE_API void lithe_stats_print_json(int fd) {
  heap_walk_t w;
  heap_walk(&w); /* before the counters: both then describe the same moment */
  lithe_stats_t st;
  lithe_stats_get(&st);
  jout_t o;
  o.fd = fd;
  o.len = 0;
  j_str(&o, "{\"version\": \"");
  j_str(&o, lithe_version() + 6); /* past "lithe " */
  j_str(&o, "\"");
  j_field(&o, "pid", (size_t)getpid(), false);
  j_str(&o, ",\n \"totals\": {");
  j_field(&o, "reserved", st.reserved, true);
  j_field(&o, "committed", st.committed, false);
  j_field(&o, "purged", st.purged, false);
  j_field(&o, "metadata", st.metadata, false);
  j_field(&o, "arenas", st.arenas, false);
  j_field(&o, "xlarge_live", st.xlarge_live, false);
  j_field(&o, "xlarge_bytes", st.xlarge_bytes, false);
  j_field(&o, "large_live", st.large_live, false);
  j_field(&o, "spans_small", st.spans_small, false);
  j_field(&o, "spans_abandoned", st.spans_abandoned, false);
  j_field(&o, "heaps_live", st.heaps_live, false);
  j_field(&o, "heaps_created", st.heaps_created, false);
  j_field(&o, "os_calls", st.os_calls, false);
  j_field(&o, "purges", st.purges, false);
  j_str(&o, "},\n \"pages\": {");
  j_field(&o, "small_live_bytes", w.small_live_bytes, true);
  j_field(&o, "small_free_bytes", w.small_free_bytes, false);
  j_field(&o, "large_live", w.large_live, false);
  j_field(&o, "large_bytes", w.large_bytes, false);
  j_field(&o, "free_runs", w.free_runs, false);
  j_field(&o, "free_bytes", w.free_bytes, false);
  j_field(&o, "free_dirty_bytes", w.free_dirty_bytes, false);
  j_str(&o, "},\n \"classes\": [");
  bool first = true;
  for (unsigned c = 1; c < NCLASSES; c++) {
    const class_stats_t *k = &w.cls[c];
    if (!k->spans) continue;
    j_str(&o, first ? "\n  {" : ",\n  {");
    first = false;
    j_field(&o, "class", c, true);
    j_field(&o, "size", class_size[c], false);
    j_field(&o, "spans", k->spans, false);
    j_field(&o, "span_bytes", k->span_bytes, false);
    j_field(&o, "blocks_live", k->blocks_live, false);
    j_field(&o, "blocks_free", k->blocks_free, false);
    j_field(&o, "bytes_live", k->blocks_live * class_size[c], false);
    j_str(&o, "}");
  }
  j_str(&o, "]}\n");
  j_flush(&o);
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
  if (lithe_opt.show_stats == STATS_JSON) lithe_stats_print_json(report_target());
  else if (lithe_opt.show_stats) lithe_stats_print(report_target());
}

#define STR_(x) #x
#define STR(x) STR_(x)
LITHE_API const char *lithe_version(void) {
  return "lithe " STR(LITHE_VERSION_MAJOR) "." STR(LITHE_VERSION_MINOR) "." STR(LITHE_VERSION_PATCH);
}
