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
  if (!atomic_load(&lithe_initialized)) return;
  pthread_mutex_lock(&pages_lock);
  out->arenas = pages_arena_count();
  out->purged = pages_purged_bytes();
  pthread_mutex_unlock(&pages_lock);
  out->purged += meta_purged_bytes(); /* descriptor pages (meta.c) */
  heaps_stats(&out->heaps_live, &out->heaps_created, &out->spans_small, &out->spans_abandoned);
}

static void put(out_t *o, const char *name, size_t v) {
  out_str(o, name);
  out_dec(o, v, 0);
  out_str(o, "\n");
}

LITHE_API void lithe_stats_print(int fd) {
  lithe_stats_t st;
  lithe_stats_get(&st);
  out_t o = {.fd = fd};
  out_str(&o, "lithe stats (pid ");
  out_dec(&o, (uint64_t)getpid(), 0);
  out_str(&o, "):\n");
  put(&o, "  reserved bytes       ", st.reserved);
  put(&o, "  committed bytes      ", st.committed);
  put(&o, "  purged bytes         ", st.purged);
  put(&o, "  metadata bytes       ", st.metadata);
  put(&o, "  arenas               ", st.arenas);
  put(&o, "  large live           ", st.large_live);
  put(&o, "  xlarge live          ", st.xlarge_live);
  put(&o, "  xlarge bytes         ", st.xlarge_bytes);
  put(&o, "  small spans          ", st.spans_small);
  put(&o, "  heaps live           ", st.heaps_live);
  put(&o, "  heaps created        ", st.heaps_created);
  put(&o, "  spans abandoned      ", st.spans_abandoned);
  put(&o, "  os calls             ", st.os_calls);
  put(&o, "  purges               ", st.purges);
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
  out_t o = {.fd = fd};
  out_str(&o, "{\"version\": \"");
  out_str(&o, lithe_version() + 6); /* past "lithe " */
  out_str(&o, "\"");
  j_field(&o, "pid", (size_t)getpid(), false);
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
