/* options.c — options from the environment, and how lithe speaks: misuse
 * reports, fatal errors and the buffered writer (out_t) the longer
 * reports use.  Nothing here allocates: messages are formatted into stack
 * buffers and written with write(2). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
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
  .purge_thread = false, /* purge.c: off, none imposed */
  .on_error_ignore = false,
  .show_stats = 0,
  .verbose = false,
};

static bool env_true(const char *v) {
  return v && (v[0] == '1' || v[0] == 'y' || v[0] == 'Y' || v[0] == 't' || v[0] == 'T');
}

/* "64m", "4194304", "1g" -> bytes; 0 on error */
size_t options_parse_size(const char *v) {
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  switch (*end) {
    case 'k': case 'K': n <<= 10; end++; break;
    case 'm': case 'M': n <<= 20; end++; break;
    case 'g': case 'G': n <<= 30; end++; break;
    default: break;
  }
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0') return 0;
  return (size_t)n;
}

/* secure_getenv: in a setuid / setgid or capability-raising program the
 * options are not the caller's to set (LITHE_ON_ERROR=ignore would let
 * them run on past a detected double free); they read as unset there.
 * Every option is listed, with its default, range and the reason for the
 * default, in docs/options.md (the options_doc test keeps the two equal). */
enum { OPT_ARENA_SIZE, OPT_PURGE_DELAY, OPT_PURGE_THREAD, OPT_HUGEPAGES, OPT_ON_ERROR, OPT_SHOW_STATS, OPT_VERBOSE, OPT_COUNT };
static unsigned from_env;  /* bit OPT_x: the value came from the environment */
static unsigned rejected;  /* bit OPT_x: the environment's value was refused  */

static const char *env(const char *name, unsigned opt) {
  const char *v = secure_getenv(name);
  if (v) from_env |= 1u << opt;
  return v;
}

static void options_print(void);

void options_init(void) {
  const char *v;
  lithe_opt.verbose = env_true(env("LITHE_VERBOSE", OPT_VERBOSE));
  if ((v = env("LITHE_SHOW_STATS", OPT_SHOW_STATS)) != NULL)
    lithe_opt.show_stats = strcmp(v, "json") == 0 ? STATS_JSON : env_true(v) ? STATS_TEXT : 0;
  if ((v = env("LITHE_ON_ERROR", OPT_ON_ERROR)) != NULL)
    lithe_opt.on_error_ignore = (strcmp(v, "ignore") == 0);
  if ((v = env("LITHE_ARENA_SIZE", OPT_ARENA_SIZE)) != NULL) {
    size_t n = options_parse_size(v);
    if (n >= ARENA_MIN && n <= ARENA_MAX && (n & (n - 1)) == 0) {
      lithe_opt.arena_size = n;
    } else {
      rejected |= 1u << OPT_ARENA_SIZE;
      lithe_warn("LITHE_ARENA_SIZE must be a power of two from 4m to 1g; using the default, bytes",
                 ARENA_DEFAULT);
    }
  }
  if ((v = env("LITHE_PURGE_DELAY_MS", OPT_PURGE_DELAY)) != NULL) lithe_opt.purge_delay_ms = strtol(v, NULL, 10);
  if ((v = env("LITHE_PURGE_THREAD", OPT_PURGE_THREAD)) != NULL) lithe_opt.purge_thread = env_true(v);
  if ((v = env("LITHE_HUGEPAGES", OPT_HUGEPAGES)) != NULL) lithe_opt.hugepages = env_true(v);
  if (lithe_opt.verbose) options_print();
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

void lithe_warn(const char *msg, size_t value) {
  char buf[256], num[24];
  size_t len = 0;
  cat(buf, &len, sizeof buf, "lithe: warning: ");
  cat(buf, &len, sizeof buf, msg);
  cat(buf, &len, sizeof buf, " ");
  fmt_dec(num, value);
  cat(buf, &len, sizeof buf, num);
  cat(buf, &len, sizeof buf, "\n");
  write_all(buf, len);
}

/* LITHE_VERBOSE=1: every option, its value and where the value came from:
 *   lithe: option LITHE_ARENA_SIZE=67108864 (default)
 *   lithe: option LITHE_PURGE_DELAY_MS=0 (environment)
 *   lithe: option LITHE_ARENA_SIZE=67108864 (default; the environment's value was refused) */
/* Options other layers read themselves (prof.c, limit.c), at their own
 * start-up: printed with the environment's text, or the default they
 * document (docs/options.md lists them too). */
static const char *const other_opts[][2] = {
    {"LITHE_PROF", "0"},          {"LITHE_PROF_SAMPLE", "512k"},      {"LITHE_PROF_PREFIX", "lithe"},
    {"LITHE_PROF_PEAK", "0"},     {"LITHE_PROF_UNWIND", "fast"},      {"LITHE_LEAKS", "0"},
    {"LITHE_MEMORY_LIMIT", "cgroup"},
    {"LITHE_MEMORY_LIMIT_HARD", "0"}, {"LITHE_CGROUP_ROOT", "/sys/fs/cgroup"},
    {"LITHE_STATS_PID", "0"}, /* stats.c */
};

static void options_print(void) {
  for (size_t i = 0; i < sizeof other_opts / sizeof other_opts[0]; i++) {
    char buf[320];
    size_t len = 0;
    const char *v = secure_getenv(other_opts[i][0]);
    cat(buf, &len, sizeof buf, "lithe: option ");
    cat(buf, &len, sizeof buf, other_opts[i][0]);
    cat(buf, &len, sizeof buf, "=");
    cat(buf, &len, sizeof buf, v ? v : other_opts[i][1]);
    cat(buf, &len, sizeof buf, v ? " (environment)\n" : " (default)\n");
    write_all(buf, len);
  }
  static const char *const names[OPT_COUNT] = {"LITHE_ARENA_SIZE", "LITHE_PURGE_DELAY_MS",
                                               "LITHE_PURGE_THREAD", "LITHE_HUGEPAGES", "LITHE_ON_ERROR",
                                               "LITHE_SHOW_STATS", "LITHE_VERBOSE"};
  for (unsigned i = 0; i < OPT_COUNT; i++) {
    char buf[160], num[24];
    const char *val = num;
    size_t len = 0;
    switch (i) {
      case OPT_ARENA_SIZE: fmt_dec(num, lithe_opt.arena_size); break;
      case OPT_PURGE_DELAY:
        if (lithe_opt.purge_delay_ms < 0) { num[0] = '-'; fmt_dec(num + 1, (uint64_t)-lithe_opt.purge_delay_ms); }
        else fmt_dec(num, (uint64_t)lithe_opt.purge_delay_ms);
        break;
      case OPT_PURGE_THREAD: val = lithe_opt.purge_thread ? "1" : "0"; break;
      case OPT_HUGEPAGES: val = lithe_opt.hugepages ? "1" : "0"; break;
      case OPT_ON_ERROR: val = lithe_opt.on_error_ignore ? "ignore" : "abort"; break;
      case OPT_SHOW_STATS: val = lithe_opt.show_stats == STATS_JSON ? "json" : lithe_opt.show_stats ? "1" : "0"; break;
      default: val = lithe_opt.verbose ? "1" : "0"; break;
    }
    cat(buf, &len, sizeof buf, "lithe: option ");
    cat(buf, &len, sizeof buf, names[i]);
    cat(buf, &len, sizeof buf, "=");
    cat(buf, &len, sizeof buf, val);
    cat(buf, &len, sizeof buf, rejected & (1u << i) ? " (default; the environment's value was refused)\n"
                               : from_env & (1u << i) ? " (environment)\n" : " (default)\n");
    write_all(buf, len);
  }
}

void lithe_fatal(const char *msg) {
  char buf[256];
  size_t len = 0;
  cat(buf, &len, sizeof buf, "lithe: fatal: ");
  cat(buf, &len, sizeof buf, msg);
  cat(buf, &len, sizeof buf, "\n");
  write_all(buf, len);
  abort();
}

/* A detected misuse: "lithe: free(0x1234): double free".  Aborts with
 * SIGABRT unless LITHE_ON_ERROR=ignore, in which case the call returns
 * having done nothing. */
void lithe_report(const char *op, const void *p, const char *what) {
  char buf[256], hex[24];
  size_t len = 0;
  fmt_hex(hex, (uintptr_t)p);
  cat(buf, &len, sizeof buf, "lithe: ");
  cat(buf, &len, sizeof buf, op);
  cat(buf, &len, sizeof buf, "(");
  cat(buf, &len, sizeof buf, hex);
  cat(buf, &len, sizeof buf, "): ");
  cat(buf, &len, sizeof buf, what);
  cat(buf, &len, sizeof buf, lithe_opt.on_error_ignore ? " (ignored)\n" : "\n");
  write_all(buf, len);
  if (!lithe_opt.on_error_ignore) abort();
}
