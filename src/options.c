/* options.c — options from the environment, and how lithe speaks: misuse
 * reports and fatal errors.  Nothing here allocates: messages are
 * formatted into stack buffers and written with write(2). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

options_t lithe_opt = {
  .arena_size = ARENA_DEFAULT,
  .purge_delay_ms = 1000, /* like jemalloc's decay and Go's scavenger: reuse
                             before giving back; DESIGN.md's fault costs */
  .on_error_ignore = false,
  .show_stats = false,
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
 * them run on past a detected double free); they read as unset there. */
void options_init(void) {
  const char *v;
  lithe_opt.verbose = env_true(secure_getenv("LITHE_VERBOSE"));
  lithe_opt.show_stats = env_true(secure_getenv("LITHE_SHOW_STATS"));
  if ((v = secure_getenv("LITHE_ON_ERROR")) != NULL)
    lithe_opt.on_error_ignore = (strcmp(v, "ignore") == 0);
  if ((v = secure_getenv("LITHE_ARENA_SIZE")) != NULL) {
    size_t n = options_parse_size(v);
    if (n >= ARENA_MIN && n <= ARENA_MAX && (n & (n - 1)) == 0)
      lithe_opt.arena_size = n;
    else
      lithe_warn("LITHE_ARENA_SIZE must be a power of two from 4m to 1g; using the default, bytes",
                 ARENA_DEFAULT);
  }
  if ((v = secure_getenv("LITHE_PURGE_DELAY_MS")) != NULL) lithe_opt.purge_delay_ms = strtol(v, NULL, 10);
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

static void write_all(const char *s, size_t n) {
  while (n) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w; n -= (size_t)w;
  }
}

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
