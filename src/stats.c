/* SPDX-License-Identifier: MIT */
/* stats.c — process-wide counters, lithe_stats_get, lithe_stats_print and
 * its JSON form, and the report printed at exit with LITHE_SHOW_STATS=1 or
 * =json (tests grep for the text report's "lithe stats" line to
 * prove lithe really served a program). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include "internal.h"

/* ---- the walk ------------------------------------------------------------ */

static void walk_span(const span_t *s, void *arg) {
  heap_walk_t *w = arg;
  switch (s->kind) {
    case SPAN_SMALL: {
      class_stats_t *c = &w->cls[s->cls < NCLASSES ? s->cls : 0];
      /* owner-written fields, read while the owner may run: a snapshot */
      uint32_t used = __atomic_load_n(&s->used, __ATOMIC_RELAXED);
      uint32_t remote = TF_COUNT(atomic_load_explicit(&s->thread_free, memory_order_relaxed));
      uint32_t live = used > remote ? used - remote : 0;
      if (live > s->capacity) live = s->capacity;
      c->spans++;
      c->span_bytes += s->bytes;
      c->blocks_live += live;
      c->blocks_free += s->capacity - live;
      w->small_live_bytes += (size_t)live * s->block_size;
      w->small_free_bytes += (size_t)(s->capacity - live) * s->block_size;
      break;
    }
    case SPAN_LARGE:
      w->large_live++;
      w->large_bytes += s->bytes;
      break;
    case SPAN_CACHED:
      w->large_cached++;
      w->large_cached_bytes += s->bytes;
      break;
    case SPAN_FREE:
      w->free_runs++;
      w->free_bytes += s->bytes;
      w->free_dirty_bytes += s->dirty_n;
      break;
    default:
      break;
  }
}

void heap_walk(heap_walk_t *w) {
  memset(w, 0, sizeof *w);
  if (!atomic_load(&lithe_initialized)) return;
  pages_walk(walk_span, w);
  /* blocks in the heaps' bins count as used by their spans, but are free */
  uint64_t binned[NCLASSES];
  heaps_binned(binned);
  for (unsigned c = 1; c < NCLASSES; c++) {
    uint64_t n = binned[c] < w->cls[c].blocks_live ? binned[c] : w->cls[c].blocks_live;
    w->cls[c].blocks_live -= n;
    w->cls[c].blocks_free += n;
    w->small_live_bytes -= n * class_size[c];
    w->small_free_bytes += n * class_size[c];
  }
}

LITHE_API void lithe_stats_get(lithe_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->reserved = atomic_load(&os_stats.reserved);
  out->committed = atomic_load(&os_stats.committed);
  out->metadata = atomic_load(&os_stats.metadata);
  out->os_calls = atomic_load(&os_stats.os_calls);
  out->purges = atomic_load(&os_stats.purges);
  out->xlarge_live = atomic_load(&stat_xlarge_live);
  out->xlarge_bytes = atomic_load(&stat_xlarge_bytes);
  out->large_live = atomic_load(&stat_large_live);
  out->in_use = atomic_load(&os_stats.in_use);
  out->peak_in_use = atomic_load(&os_stats.peak_in_use);
  out->peak_committed = atomic_load(&os_stats.peak_committed);
  out->peak_reserved = atomic_load(&os_stats.peak_reserved);
  if (!atomic_load(&lithe_initialized)) return;
  pthread_mutex_lock(&pages_lock);
  out->arenas = pages_arena_count();
  out->purged = pages_purged_bytes();
  pthread_mutex_unlock(&pages_lock);
  out->purged += meta_purged_bytes(); /* descriptor pages (meta.c) */
  heaps_stats(&out->heaps_live, &out->heaps_created, &out->spans_small, &out->spans_abandoned);
}

/* ---- the process, from /proc and getrusage -------------------------------
 * Read with open/read/close into stack buffers: nothing allocates or takes
 * a libc lock, so the report works at exit with lithe half torn down. */
typedef struct {
  size_t rss, rss_peak;           /* VmRSS, VmHWM (bytes); 0 if unknown      */
  size_t minflt, majflt;          /* page faults (/proc/self/stat)           */
  uint64_t elapsed_ms;            /* since the process started; 0 if unknown */
  uint64_t user_ms, sys_ms;       /* CPU time (getrusage)                    */
} proc_figures_t;

static size_t read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  return n;
}

static uint64_t parse_u64(const char **p) {
  uint64_t v = 0;
  while (**p == ' ' || **p == '\t') (*p)++;
  while (**p >= '0' && **p <= '9') v = v * 10 + (uint64_t)(*(*p)++ - '0');
  return v;
}

/* "VmRSS:	  1234 kB" -> bytes */
static size_t status_kb(const char *status, const char *key) {
  const char *p = strstr(status, key);
  if (!p) return 0;
  p += strlen(key);
  return (size_t)parse_u64(&p) * 1024;
}

static void proc_figures(proc_figures_t *f) {
  memset(f, 0, sizeof *f);
  char buf[2048];
  if (read_small("/proc/self/status", buf, sizeof buf)) {
    f->rss = status_kb(buf, "VmRSS:");
    f->rss_peak = status_kb(buf, "VmHWM:");
  }
  /* /proc/self/stat: after the name's ')', field 3 (state) on; faults are
   * fields 10 and 12, the start time (clock ticks since boot) field 22 */
  if (read_small("/proc/self/stat", buf, sizeof buf)) {
    const char *p = strrchr(buf, ')');
    uint64_t field[23] = {0};
    if (p) {
      p += 2; /* ") " */
      while (*p && *p != ' ') p++; /* the state letter */
      for (int i = 4; i <= 22 && *p; i++) {
        if (*p == ' ') p++;
        if (*p == '-') p++; /* (priority, nice) */
        field[i] = parse_u64(&p);
        while (*p && *p != ' ') p++;
      }
      f->minflt = field[10];
      f->majflt = field[12];
      long tck = sysconf(_SC_CLK_TCK);
      struct timespec now;
      if (tck > 0 && clock_gettime(CLOCK_BOOTTIME, &now) == 0) {
        uint64_t now_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
        uint64_t start_ms = field[22] * 1000 / (uint64_t)tck;
        f->elapsed_ms = now_ms > start_ms ? now_ms - start_ms : 0;
      }
    }
  }
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    f->user_ms = (uint64_t)ru.ru_utime.tv_sec * 1000 + (uint64_t)ru.ru_utime.tv_usec / 1000;
    f->sys_ms = (uint64_t)ru.ru_stime.tv_sec * 1000 + (uint64_t)ru.ru_stime.tv_usec / 1000;
  }
}

/* The program's name: argv[0] without its directory (/proc/self/cmdline),
 * else /proc/self/comm. */
static void program_name(char *out, size_t cap) {
  char buf[512];
  size_t n = read_small("/proc/self/cmdline", buf, sizeof buf);
  const char *name = buf;
  if (n && buf[0]) {
    for (const char *p = buf; *p; p++)
      if (*p == '/' && p[1]) name = p + 1;
  } else if (read_small("/proc/self/comm", buf, sizeof buf)) {
    char *nl = strchr(buf, '\n');
    if (nl) *nl = '\0';
  }
  size_t i = 0;
  for (; name[i] && i + 1 < cap; i++) out[i] = name[i];
  out[i] = '\0';
  if (!i && cap > 1) { out[0] = '?'; out[1] = '\0'; }
}

/* ---- the text report (lithe_stats_print, LITHE_SHOW_STATS=1) -------------
 * Bytes in human units: "512 B", "1.5 KiB", "40.0 MiB", "128.1 GiB". */
static void fmt_bytes(char *out, uint64_t v) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  unsigned u = 0;
  uint64_t div = 1;
  while (u + 1 < sizeof unit / sizeof unit[0] && v >= div * 1024) { div *= 1024; u++; }
  size_t n;
  if (u == 0) {
    n = fmt_dec(out, v);
  } else {
    uint64_t tenths = (v * 10 + div / 2) / div; /* v < 2^60 here: no overflow past PiB */
    if (v > UINT64_MAX / 10) tenths = v / div * 10;
    n = fmt_dec(out, tenths / 10);
    out[n++] = '.';
    out[n++] = (char)('0' + tenths % 10);
  }
  out[n++] = ' ';
  strcpy(out + n, unit[u]);
}

/* "850 ms", "12.34 s" */
static void fmt_ms(char *out, uint64_t ms) {
  if (ms < 1000) {
    size_t n = fmt_dec(out, ms);
    strcpy(out + n, " ms");
    return;
  }
  size_t n = fmt_dec(out, ms / 1000);
  out[n++] = '.';
  out[n++] = (char)('0' + ms / 100 % 10);
  out[n++] = (char)('0' + ms / 10 % 10);
  strcpy(out + n, " s");
}

static void pad(out_t *o, const char *s, size_t width, bool right) {
  size_t n = strlen(s);
  if (!right) out_str(o, s);
  for (; n < width; n++) out_str(o, " ");
  if (right) out_str(o, s);
}

/* "  name            current      peak   note" (peak "" for none) */
static void row(out_t *o, const char *name, const char *cur, const char *peak, const char *note) {
  out_str(o, "  ");
  pad(o, name, 16, false);
  pad(o, cur, 11, true);
  if (*peak || *note) pad(o, peak, 12, true);
  if (*note) {
    out_str(o, "   ");
    out_str(o, note);
  }
  out_str(o, "\n");
}

static void row_bytes(out_t *o, const char *name, size_t cur, size_t peak, bool has_peak, const char *note) {
  char c[32], p[32] = "";
  fmt_bytes(c, cur);
  if (has_peak) fmt_bytes(p, peak);
  row(o, name, c, p, note);
}

/* a counter: "  name        12   note" */
static void count(out_t *o, const char *name, size_t v, const char *note) {
  char c[24];
  fmt_dec(c, v);
  row(o, name, c, "", note);
}

LITHE_API void lithe_stats_print(int fd) {
  heap_walk_t w;
  heap_walk(&w);
  lithe_stats_t st;
  lithe_stats_get(&st);
  proc_figures_t pf;
  proc_figures(&pf);
  char name[64], a[32], note[160];
  program_name(name, sizeof name);
  out_t o = {.fd = fd};
  out_str(&o, "lithe stats (pid ");
  out_dec(&o, (uint64_t)getpid(), 0);
  out_str(&o, "): ");
  out_str(&o, name);
  out_str(&o, "\n");
  row(&o, "", "current", "peak", "");
  size_t live = w.small_live_bytes + w.large_bytes + st.xlarge_bytes;
  row_bytes(&o, "live blocks", live, 0, false, "what the program holds: small + large + xlarge blocks");
  row_bytes(&o, "in use", st.in_use, st.peak_in_use, true,
            "pages for them: spans, large runs (cached too), xlarge maps");
  row_bytes(&o, "committed", st.committed, st.peak_committed, true, "read/write: what the kernel charges");
  row_bytes(&o, "  purged", st.purged, 0, false, "of it given back to the OS (madvise)");
  row_bytes(&o, "  metadata", st.metadata, 0, false, "of it lithe's own (span descriptors, heaps)");
  row_bytes(&o, "reserved", st.reserved, st.peak_reserved, true, "address space, not charged");
  if (pf.rss || pf.rss_peak)
    row_bytes(&o, "process RSS", pf.rss, pf.rss_peak, true, "resident: VmRSS, VmHWM (all of the program)");
  fmt_dec(a, pf.minflt);
  strcpy(note, "minor; major: ");
  fmt_dec(note + strlen(note), pf.majflt);
  row(&o, "page faults", a, "", note);
  if (pf.elapsed_ms) {
    fmt_ms(a, pf.elapsed_ms);
    row(&o, "elapsed", a, "", "since the process started");
  }
  fmt_ms(a, pf.user_ms + pf.sys_ms);
  strcpy(note, "user ");
  fmt_ms(note + strlen(note), pf.user_ms);
  strcat(note, " + system ");
  fmt_ms(note + strlen(note), pf.sys_ms);
  row(&o, "CPU time", a, "", note);
  fmt_bytes(a, lithe_opt.arena_size);
  strcpy(note, "of ");
  strcat(note, a);
  strcat(note, " address space each");
  count(&o, "arenas", st.arenas, note);
  count(&o, "large live", st.large_live, "objects in page runs (up to 1 MiB)");
  fmt_bytes(a, st.xlarge_bytes);
  strcpy(note, "objects in mappings of their own, ");
  strcat(note, a);
  count(&o, "xlarge live", st.xlarge_live, note);
  count(&o, "heaps live", st.heaps_live, "thread heaps in use");
  count(&o, "heaps created", st.heaps_created, "thread heaps ever set up");
  count(&o, "spans abandoned", st.spans_abandoned, "left by exited threads, not yet adopted");
  count(&o, "os calls", st.os_calls, "mmap, mprotect, madvise, munmap, mremap");
  count(&o, "purges", st.purges, "madvise(DONTNEED) calls");
  /* last, its number last on the line: tests read it with awk's $NF */
  count(&o, "small spans", st.spans_small, "");
  out_flush(&o);
}

/* ---- JSON (lithe_stats_print_json, LITHE_SHOW_STATS=json) ----------------
 * Written with write(2) from a stack buffer (out_t): nothing allocates, so
 * it is safe at exit and from a signal-free context with lithe half torn
 * down.
 * The fields are documented one by one in docs/stats.md. */
/* "key": v, with a comma before it unless it is the first of its object */
static void j_field(out_t *o, const char *key, size_t v, bool first) {
  out_str(o, first ? "\"" : ", \"");
  out_str(o, key);
  out_str(o, "\": ");
  out_dec(o, v, 0);
}

LITHE_API void lithe_stats_print_json(int fd) {
  heap_walk_t w;
  heap_walk(&w); /* before the counters: both then describe the same moment */
  lithe_stats_t st;
  lithe_stats_get(&st);
  proc_figures_t pf;
  proc_figures(&pf);
  char name[64];
  program_name(name, sizeof name);
  out_t o = {.fd = fd};
  out_str(&o, "{\"version\": \"");
  out_str(&o, lithe_version() + 6); /* past "lithe " */
  out_str(&o, "\"");
  j_field(&o, "pid", (size_t)getpid(), false);
  out_str(&o, ", \"program\": \"");
  for (char *c = name; *c; c++)
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = '?'; /* no escapes needed */
  out_str(&o, name);
  out_str(&o, "\"");
  out_str(&o, ",\n \"totals\": {");
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
  j_field(&o, "in_use", st.in_use, false);
  j_field(&o, "peak_in_use", st.peak_in_use, false);
  j_field(&o, "peak_committed", st.peak_committed, false);
  j_field(&o, "peak_reserved", st.peak_reserved, false);
  out_str(&o, "},\n \"process\": {");
  j_field(&o, "rss", pf.rss, true);
  j_field(&o, "peak_rss", pf.rss_peak, false);
  j_field(&o, "minor_faults", pf.minflt, false);
  j_field(&o, "major_faults", pf.majflt, false);
  j_field(&o, "elapsed_ms", pf.elapsed_ms, false);
  j_field(&o, "user_ms", pf.user_ms, false);
  j_field(&o, "sys_ms", pf.sys_ms, false);
  out_str(&o, "},\n \"pages\": {");
  j_field(&o, "small_live_bytes", w.small_live_bytes, true);
  j_field(&o, "small_free_bytes", w.small_free_bytes, false);
  j_field(&o, "large_live", w.large_live, false);
  j_field(&o, "large_bytes", w.large_bytes, false);
  j_field(&o, "large_cached", w.large_cached, false);
  j_field(&o, "large_cached_bytes", w.large_cached_bytes, false);
  j_field(&o, "free_runs", w.free_runs, false);
  j_field(&o, "free_bytes", w.free_bytes, false);
  j_field(&o, "free_dirty_bytes", w.free_dirty_bytes, false);
  out_str(&o, "},\n \"classes\": [");
  bool first = true;
  for (unsigned c = 1; c < NCLASSES; c++) {
    const class_stats_t *k = &w.cls[c];
    if (!k->spans) continue;
    out_str(&o, first ? "\n  {" : ",\n  {");
    first = false;
    j_field(&o, "class", c, true);
    j_field(&o, "size", class_size[c], false);
    j_field(&o, "spans", k->spans, false);
    j_field(&o, "span_bytes", k->span_bytes, false);
    j_field(&o, "blocks_live", k->blocks_live, false);
    j_field(&o, "blocks_free", k->blocks_free, false);
    j_field(&o, "bytes_live", k->blocks_live * class_size[c], false);
    out_str(&o, "}");
  }
  out_str(&o, "]}\n");
  out_flush(&o);
}

/* The report at exit goes to a copy of stderr taken when the library is
 * loaded: programs such as coreutils close stderr in an atexit handler,
 * which runs before this destructor (`LITHE_SHOW_STATS=1 ls` printed
 * nothing).  The copy is used only if it is still the same file then. */
static int report_fd = -1;
static struct stat report_st;

/* LITHE_STATS_PID=N (set by `lithe stats` without --children): only
 * process N reports at exit; its children, which inherit the variable,
 * stay silent.  0 or unset: every process that has LITHE_SHOW_STATS. */
static pid_t report_pid;

__attribute__((constructor)) static void stats_at_load(void) {
  lithe_process_init(); /* reads the options */
  if (!lithe_opt.show_stats) return;
  size_t pid = 0;
  if (option_size("LITHE_STATS_PID", &pid, 0, INT_MAX, "0")) report_pid = (pid_t)pid;
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
  if (report_pid > 0 && report_pid != getpid()) return;
  if (lithe_opt.show_stats == STATS_JSON) lithe_stats_print_json(report_target());
  else if (lithe_opt.show_stats) lithe_stats_print(report_target());
}

#define STR_(x) #x
#define STR(x) STR_(x)
LITHE_API const char *lithe_version(void) {
  return "lithe " STR(LITHE_VERSION_MAJOR) "." STR(LITHE_VERSION_MINOR) "." STR(LITHE_VERSION_PATCH);
}
