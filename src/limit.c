/* SPDX-License-Identifier: MIT */
/* limit.c — a memory limit lithe keeps by itself.
 *
 * The limit is LITHE_MEMORY_LIMIT=N[k|m|g], or else the memory limit of
 * the process's cgroup (v2 memory.max, v1 memory.limit_in_bytes, the
 * lowest along the path from the process's cgroup up to the root, read
 * under LITHE_CGROUP_ROOT, default /sys/fs/cgroup).  LITHE_MEMORY_LIMIT=0
 * means none, even in a limited cgroup.
 *
 * What lithe counts is what it holds from the kernel that may be resident:
 * pages handed out, free pages not yet purged, xlarge mappings, metadata
 * (pages_usage_bytes, under the page-heap lock).  From 90 % of the limit
 * on ("pressure"), the free pages over that are purged at once instead of
 * after LITHE_PURGE_DELAY_MS (pages.c, pressure_keep; but fresh pages
 * first take the resident pages of free runs they hold, and a freed
 * xlarge mapping's pages become a free run: pages_fill, pages_adopt, moved
 * with mremap rather than purged and faulted in again), threads stop
 * caching empty spans, and, once each time the pressure starts, what
 * other threads hold goes back: the spans of exited threads whose blocks
 * are all free and every thread's cached empty spans (collect_others),
 * and every thread empties its bins at its next slow path.  With
 * LITHE_MEMORY_LIMIT_HARD=1 an allocation that would take the count past
 * the limit runs one full collection (every free page purged, other
 * threads' caches back) and, if it still does not fit, fails with NULL
 * and ENOMEM instead of leaving the process to the OOM killer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

size_t limit_bytes;          /* 0: no limit */
size_t limit_pressure_at;    /* 90 % of it; 0: never */
bool limit_hard;
/* What the limit takes back from the heaps above the page heap (their
 * caches, the abandoned heaps): heaps_reclaim, registered by heap_key_init
 * before the first allocation.  A hook because the page heap, below the
 * heaps, is where the limit is found near (one of two upward calls: see
 * the overview in alloc.c). */
static void no_reclaim(void) {}
void (*limit_reclaim)(void) = no_reclaim;
_Atomic bool limit_pressure;
static _Atomic bool pressure_collected;

/* Bytes in a cgroup limit file: a number, or "max" / a huge v1 value for
 * none (0). */
static size_t read_limit_file(const char *path) {
  char buf[64];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  if (buf[0] < '0' || buf[0] > '9') return 0; /* "max" */
  unsigned long long v = strtoull(buf, NULL, 10);
  return v >= (1ull << 62) ? 0 : (size_t)v; /* v1 "unlimited" is ~2^63 */
}

static size_t min_limit(size_t a, size_t b) { return !a ? b : !b ? a : a < b ? a : b; }

/* The lowest limit in root/sub/<cgroup path and its ancestors>/file. */
static size_t limit_along(const char *root, const char *sub, const char *cg, size_t cglen,
                          const char *file) {
  char path[1024];
  size_t best = 0, rl = strlen(root), sl = strlen(sub), fl = strlen(file);
  if (rl + sl + cglen + fl + 2 >= sizeof path) return 0;
  for (;;) {
    size_t len = 0;
    memcpy(path + len, root, rl); len += rl;
    memcpy(path + len, sub, sl); len += sl;
    memcpy(path + len, cg, cglen); len += cglen;
    if (len == 0 || path[len - 1] != '/') path[len++] = '/';
    memcpy(path + len, file, fl + 1);
    best = min_limit(best, read_limit_file(path));
    while (cglen > 0 && cg[cglen - 1] == '/') cglen--;
    if (cglen == 0) return best;
    while (cglen > 0 && cg[cglen - 1] != '/') cglen--; /* parent */
  }
}

static size_t cgroup_limit(const char *root) {
  char buf[4096];
  int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  size_t best = 0;
  /* lines "ID:CONTROLLERS:PATH": v2 is "0::PATH", v1 names "memory" */
  for (char *line = buf; *line;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char *c1 = memchr(line, ':', len);
    char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
    if (c2) {
      const char *ctl = c1 + 1, *cg = c2 + 1;
      size_t ctllen = (size_t)(c2 - ctl), cglen = len - (size_t)(cg - line);
      if (ctllen == 0)
        best = min_limit(best, limit_along(root, "", cg, cglen, "memory.max"));
      for (const char *p = ctl; p < c2;) { /* v1: "memory" among the controllers */
        const char *q = memchr(p, ',', (size_t)(c2 - p));
        if (!q) q = c2;
        if (q - p == 6 && memcmp(p, "memory", 6) == 0)
          best = min_limit(best, limit_along(root, "/memory", cg, cglen, "memory.limit_in_bytes"));
        p = q + 1;
      }
    }
    if (!end) break;
    line = end + 1;
  }
  return best;
}

void limit_init(void) {
  const char *root = option_get("LITHE_CGROUP_ROOT");
  if (root && !*root) option_refuse("LITHE_CGROUP_ROOT", root, "empty", "/sys/fs/cgroup");
  if (!root || !*root) root = "/sys/fs/cgroup";
  /* 0: no limit; below a page a limit would refuse everything, and its
   * 90 % pressure mark would round to 0 (none) */
  size_t n = 0;
  bool set = option_size("LITHE_MEMORY_LIMIT", &n, 0, SIZE_MAX, "the cgroup's limit");
  if (set && n && n < os_page_size()) {
    option_refuse("LITHE_MEMORY_LIMIT", option_get("LITHE_MEMORY_LIMIT"), "below one page", "the cgroup's limit");
    set = false;
  }
  limit_bytes = set ? n : cgroup_limit(root);
  bool hard = false;
  option_bool("LITHE_MEMORY_LIMIT_HARD", &hard);
  limit_hard = limit_bytes && hard;
  limit_pressure_at = limit_bytes / 10 * 9;
  lt_assert_cmp(limit_pressure_at, <=, limit_bytes); /* 0 both without a limit */
  if (lithe_opt.verbose && limit_bytes) lithe_warn("memory limit, bytes", limit_bytes);
}


/* Called by pages.c after it set limit_pressure (no lock held): the first
 * time in each pressure period, collect what other threads hold. */
void limit_pressure_collect(void) {
  if (!atomic_load_explicit(&limit_pressure, memory_order_relaxed)) {
    if (atomic_load_explicit(&pressure_collected, memory_order_relaxed))
      atomic_store_explicit(&pressure_collected, false, memory_order_relaxed);
    return;
  }
  if (atomic_exchange_explicit(&pressure_collected, true, memory_order_relaxed)) return;
  limit_reclaim();
}


