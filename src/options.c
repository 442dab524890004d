/* SPDX-License-Identifier: MIT */
/* options.c — options from the environment, and how lithe speaks: misuse
 * reports, fatal errors and the buffered writer (out_t) the longer
 * reports use.  Nothing here allocates: messages are formatted into stack
 * buffers and written with write(2). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

options_t lithe_opt = {
  .arena_size = ARENA_DEFAULT,
  .purge_delay_ms = 1000, /* like jemalloc's decay and Go's scavenger: reuse
                             before giving back: a page fault costs
                             13-16 us per 4 KiB page on the machines
                             lithe is measured on */
  .purge_thread = PURGE_THREAD_AUTO, /* purge.c: with the program's first thread */
  .on_error_ignore = false,
  .show_stats = 0,
  .verbose = false,
};

/* Every option, in the order LITHE_VERBOSE prints them; the bits of
 * from_env and refused_mask follow it.  docs/options.md lists each with
 * its default, range and reason (the options_doc test keeps the two
 * equal). */
enum {
  OPT_ARENA_SIZE, OPT_PURGE_DELAY, OPT_PURGE_THREAD, OPT_HUGEPAGES, OPT_ON_ERROR, OPT_SHOW_STATS,
  OPT_VERBOSE, OPT_OWN, /* the options above are this file's; those below are read by */
  OPT_PROF = OPT_OWN,   /* the profiler and the memory limit, at their own set-up */
  OPT_PROF_SAMPLE, OPT_PROF_PREFIX, OPT_PROF_PEAK, OPT_PROF_UNWIND, OPT_PROF_INTERVAL, OPT_PROF_TIME,
  OPT_PROF_SIGNAL, OPT_LEAKS, OPT_MEMORY_LIMIT,
  OPT_MEMORY_LIMIT_HARD, OPT_CGROUP_ROOT, OPT_STATS_PID, OPT_COUNT
};
static const char *const option_names[OPT_COUNT] = {
    "LITHE_ARENA_SIZE", "LITHE_PURGE_DELAY_MS", "LITHE_PURGE_THREAD", "LITHE_HUGEPAGES",
    "LITHE_ON_ERROR", "LITHE_SHOW_STATS", "LITHE_VERBOSE", "LITHE_PROF", "LITHE_PROF_SAMPLE",
    "LITHE_PROF_PREFIX", "LITHE_PROF_PEAK", "LITHE_PROF_UNWIND", "LITHE_PROF_INTERVAL", "LITHE_PROF_TIME",
    "LITHE_PROF_SIGNAL", "LITHE_LEAKS",
    "LITHE_MEMORY_LIMIT", "LITHE_MEMORY_LIMIT_HARD", "LITHE_CGROUP_ROOT", "LITHE_STATS_PID"};
/* the defaults of the options read elsewhere, as LITHE_VERBOSE prints them */
static const char *const other_defaults[OPT_COUNT - OPT_OWN] = {
    "0", "512k", "lithe", "0", "fast", "0", "0", "0", "0", "cgroup", "0", "/sys/fs/cgroup", "0"};
static unsigned from_env;     /* bit OPT_x: the environment set it   */
static unsigned refused_mask; /* bit OPT_x: its value was refused    */

static void write_all(const char *s, size_t n);
static void cat(char *buf, size_t *len, size_t cap, const char *s);
static void say(const char *part, ...);

static void fmt_signed(char *out, long v) {
  if (v < 0) *out++ = '-';
  fmt_dec(out, v < 0 ? (uint64_t)-(v + 1) + 1 : (uint64_t)v);
}

/* ---- one parser for every option ---------------------------------------
 * Every LITHE_* value is read by one of these, here and in the profiler
 * and the memory limit: a size, a duration, a boolean, a word from a
 * list.  A refused value is said on stderr, always (not only with
 * LITHE_VERBOSE), with the value as given, why, and what is used
 * instead, and the option keeps its default: a wrong value never changes
 * behaviour silently.  secure_getenv: in a setuid / setgid or
 * capability-raising program the options are not the caller's to set
 * (LITHE_ON_ERROR=ignore would let them run on past a detected double
 * free); they read as unset there. */

static int option_index(const char *name) {
  for (int i = 0; i < OPT_COUNT; i++)
    if (!strcmp(option_names[i], name)) return i;
  return -1;
}

const char *option_get(const char *name) {
  const char *v = secure_getenv(name);
  int i = option_index(name);
  lt_assert(i >= 0); /* every option is in option_names */
  if (v && i >= 0) from_env |= 1u << i;
  return v;
}

void option_refuse(const char *name, const char *value, const char *why, const char *instead) {
  int i = option_index(name);
  if (i >= 0) refused_mask |= 1u << i;
  say("lithe: ", name, "=", value, " refused (", why, "); using ", instead, "\n", NULL);
}

/* "4096", "512k", "64m", "64MiB", "1g", "2T" -> bytes: no sign, no
 * fraction, no other suffix, no overflow. */
static bool parse_size(const char *v, uint64_t *out) {
  uint64_t n = 0;
  const char *p = v;
  if (*p < '0' || *p > '9') return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (n > (UINT64_MAX - 9) / 10) return false;
    n = n * 10 + (uint64_t)(*p - '0');
  }
  unsigned shift = 0;
  switch (*p) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
  }
  if (shift) {
    p++;
    if (*p == 'i' && (p[1] == 'B' || p[1] == 'b')) p += 2;
  }
  if (*p == 'b' || *p == 'B') p++;
  if (*p != '\0' || (shift && n > (UINT64_MAX >> shift))) return false;
  *out = n << shift;
  return true;
}

/* 1/0, y/n, yes/no, t/f, true/false, on/off, in any case. */
static bool parse_bool(const char *v, bool *out) {
  static const char *const yes[] = {"1", "y", "yes", "t", "true", "on"};
  static const char *const no[] = {"0", "n", "no", "f", "false", "off"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (!strcasecmp(v, yes[i])) { *out = true; return true; }
    if (!strcasecmp(v, no[i])) { *out = false; return true; }
  }
  return false;
}

bool option_size(const char *name, size_t *val, size_t min, size_t max, const char *instead) {
  const char *v = option_get(name);
  if (!v) return false;
  char dflt[24];
  if (!instead) {
    fmt_dec(dflt, *val);
    instead = dflt;
  }
  uint64_t n;
  if (!parse_size(v, &n)) option_refuse(name, v, "not a size like 4096, 512k, 64m or 1g", instead);
  else if (n < min) option_refuse(name, v, "below the smallest allowed", instead);
  else if (n > max) option_refuse(name, v, "above the largest allowed", instead);
  else {
    *val = (size_t)n;
    return true;
  }
  return false;
}

bool option_ms(const char *name, long *val, long min, long max) {
  const char *v = option_get(name);
  if (!v) return false;
  char dflt[24];
  fmt_signed(dflt, *val);
  const char *p = v + (*v == '-');
  uint64_t n = 0;
  bool ok = *p >= '0' && *p <= '9';
  for (; ok && *p >= '0' && *p <= '9'; p++) {
    n = n * 10 + (uint64_t)(*p - '0');
    if (n > ((uint64_t)1 << 40)) ok = false;
  }
  if (ok && p[0] == 's' && p[1] == '\0') n *= 1000;
  else if (ok && !(p[0] == '\0' || (p[0] == 'm' && p[1] == 's' && p[2] == '\0'))) ok = false;
  long ms = *v == '-' ? -(long)n : (long)n;
  if (!ok) option_refuse(name, v, "not a duration like 1000, 250ms or 2s", dflt);
  else if (ms < min) option_refuse(name, v, "below the smallest allowed", dflt);
  else if (ms > max) option_refuse(name, v, "above the largest allowed", dflt);
  else {
    *val = ms;
    return true;
  }
  return false;
}

bool option_bool(const char *name, bool *val) {
  const char *v = option_get(name);
  if (!v) return false;
  if (parse_bool(v, val)) return true;
  option_refuse(name, v, "not one of 1, 0, yes, no, true, false, on, off", *val ? "1" : "0");
  return false;
}

bool option_enum(const char *name, int *val, const char *const *words, int n) {
  const char *v = option_get(name);
  if (!v) return false;
  for (int i = 0; i < n; i++)
    if (!strcasecmp(v, words[i])) {
      *val = i;
      return true;
    }
  char why[160];
  size_t len = 0;
  cat(why, &len, sizeof why, "not one of");
  for (int i = 0; i < n; i++) {
    cat(why, &len, sizeof why, i ? ", " : " ");
    cat(why, &len, sizeof why, words[i]);
  }
  option_refuse(name, v, why, words[*val]);
  return false;
}

/* A word from a list, or a boolean for its first two words (off, on). */
static void option_mode(const char *name, int *val, const char *const *words, int n) {
  const char *v = option_get(name);
  bool b;
  if (!v) return;
  for (int i = 0; i < n; i++)
    if (!strcasecmp(v, words[i])) {
      *val = i;
      return;
    }
  if (parse_bool(v, &b)) {
    *val = b;
    return;
  }
  char why[160];
  size_t len = 0;
  cat(why, &len, sizeof why, "not 0, 1");
  for (int i = 2; i < n; i++) {
    cat(why, &len, sizeof why, ", ");
    cat(why, &len, sizeof why, words[i]);
  }
  option_refuse(name, v, why, words[*val]);
}


static const char *const purge_thread_words[] = {"0", "1", "auto"};
static const char *const show_stats_words[] = {"0", "1", "json"};
static const char *const on_error_words[] = {"abort", "ignore"};

void options_init(void) {
  option_bool("LITHE_VERBOSE", &lithe_opt.verbose);
  int mode = lithe_opt.show_stats;
  option_mode("LITHE_SHOW_STATS", &mode, show_stats_words, 3);
  lithe_opt.show_stats = mode;
  mode = lithe_opt.on_error_ignore;
  option_enum("LITHE_ON_ERROR", &mode, on_error_words, 2);
  lithe_opt.on_error_ignore = mode == 1;
  size_t arena = lithe_opt.arena_size;
  if (option_size("LITHE_ARENA_SIZE", &arena, ARENA_MIN, ARENA_MAX, NULL)) {
    char dflt[24];
    fmt_dec(dflt, lithe_opt.arena_size);
    if (arena & (arena - 1)) option_refuse("LITHE_ARENA_SIZE", option_get("LITHE_ARENA_SIZE"), "not a power of two", dflt);
    else lithe_opt.arena_size = arena;
  }
  option_ms("LITHE_PURGE_DELAY_MS", &lithe_opt.purge_delay_ms, -1, 24L * 3600 * 1000);
  mode = lithe_opt.purge_thread;
  option_mode("LITHE_PURGE_THREAD", &mode, purge_thread_words, 3);
  lithe_opt.purge_thread = mode;
  option_bool("LITHE_HUGEPAGES", &lithe_opt.hugepages);
}

/* ---- formatting without malloc ----------------------------------------- */

void fmt_hex(char *out, uintptr_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[2 * sizeof v];
  int n = 0;
  do { tmp[n++] = digits[v & 15]; v >>= 4; } while (v);
  *out++ = '0'; *out++ = 'x';
  while (n) *out++ = tmp[--n];
  *out = '\0';
}

size_t fmt_dec(char *out, uint64_t v) {
  char tmp[24];
  size_t n = 0, len;
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  len = n;
  while (n) *out++ = tmp[--n];
  *out = '\0';
  return len;
}

bool out_write(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    s += w; n -= (size_t)w;
  }
  return true;
}

void out_flush(out_t *o) {
  if (!out_write(o->fd, o->buf, o->n)) o->failed = true;
  o->n = 0;
}

void out_str(out_t *o, const char *s) {
  for (; *s; s++) {
    if (o->n == sizeof o->buf) out_flush(o);
    o->buf[o->n++] = *s;
  }
}

void out_dec(out_t *o, uint64_t v, int width) {
  char num[24];
  int len = (int)fmt_dec(num, v);
  while (width-- > len) out_str(o, " ");
  out_str(o, num);
}

void out_hex(out_t *o, uintptr_t v) {
  char num[24];
  fmt_hex(num, v);
  out_str(o, num);
}

static void write_all(const char *s, size_t n) { (void)out_write(STDERR_FILENO, s, n); }

static void cat(char *buf, size_t *len, size_t cap, const char *s) {
  while (*s && *len + 1 < cap) buf[(*len)++] = *s++;
  buf[*len] = '\0';
}

/* One line on stderr from its parts (NULL ends them), in one write(2):
 * no allocation, no stdio. */
static void say(const char *part, ...) {
  char buf[512];
  size_t len = 0;
  va_list ap;
  va_start(ap, part);
  for (; part; part = va_arg(ap, const char *)) cat(buf, &len, sizeof buf, part);
  va_end(ap);
  write_all(buf, len);
}

void lithe_warn(const char *msg, size_t value) {
  char num[24];
  fmt_dec(num, value);
  say("lithe: warning: ", msg, " ", num, "\n", NULL);
}

/* LITHE_VERBOSE=1: every option, its value and where the value came from,
 * once every layer has read its own (init.c):
 *   lithe: option LITHE_ARENA_SIZE=67108864 (default)
 *   lithe: option LITHE_PURGE_DELAY_MS=0 (environment)
 *   lithe: option LITHE_ARENA_SIZE=67108864 (default; the environment's value was refused)
 * The options other layers read are shown as the environment gave them. */
void options_report(void) {
  if (!lithe_opt.verbose) return;
  for (int i = 0; i < OPT_COUNT; i++) {
    char num[24];
    const char *val = num;
    switch (i) {
      case OPT_ARENA_SIZE: fmt_dec(num, lithe_opt.arena_size); break;
      case OPT_PURGE_DELAY: fmt_signed(num, lithe_opt.purge_delay_ms); break;
      case OPT_PURGE_THREAD: val = purge_thread_words[lithe_opt.purge_thread]; break;
      case OPT_HUGEPAGES: val = lithe_opt.hugepages ? "1" : "0"; break;
      case OPT_ON_ERROR: val = on_error_words[lithe_opt.on_error_ignore]; break;
      case OPT_SHOW_STATS: val = show_stats_words[lithe_opt.show_stats]; break;
      case OPT_VERBOSE: val = "1"; break;
      default: {
        const char *v = secure_getenv(option_names[i]);
        val = v && !(refused_mask & (1u << i)) ? v : other_defaults[i - OPT_OWN];
      }
    }
    say("lithe: option ", option_names[i], "=", val, refused_mask & (1u << i) ? " (default; the environment's value was refused)\n"
                               : from_env & (1u << i) ? " (environment)\n" : " (default)\n", NULL);
  }
}

void lithe_fatal(const char *msg) {
  say("lithe: fatal: ", msg, "\n", NULL);
  abort();
}

/* A detected misuse: "lithe: free(0x1234): double free".  Aborts with
 * SIGABRT unless LITHE_ON_ERROR=ignore, in which case the call returns
 * having done nothing. */
void lithe_report(const char *op, const void *p, const char *what) {
  char hex[24];
  fmt_hex(hex, (uintptr_t)p);
  say("lithe: ", op, "(", hex, "): ", what, lithe_opt.on_error_ignore ? " (ignored)\n" : "\n", NULL);
  if (!lithe_opt.on_error_ignore) abort();
}
