/* SPDX-License-Identifier: MIT */
/* fmt: see fmt.h */
#include "fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *digits_fmt(double x) {
  if (x >= 99.5) return "%.0f";
  if (x >= 9.95) return "%.1f";
  return "%.2f";
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

char *fmt_scaled(char *buf, size_t n, double v, double ref, const char *unit) {
  double r = fabs(ref);
  double scale = 1;
  const char *suffix = "";
  char num[64];
  if (strcmp(unit, "ns/op") == 0 || strcmp(unit, "ns") == 0) {
    if (r >= 0.995e9) scale = 1e9, suffix = "s";
    else if (r >= 0.995e6) scale = 1e6, suffix = "ms";
    else if (r >= 0.995e3) scale = 1e3, suffix = "µs";
    else scale = 1, suffix = "ns";
  } else if (ends_with(unit, "kB")) {
    if (r >= 995.0 * 1024) scale = 1024.0 * 1024, suffix = "GB";
    else if (r >= 995.0) scale = 1024, suffix = "MB";
    else scale = 1, suffix = "kB";
  } else {
    if (r >= 995e9) scale = 1e12, suffix = "T";
    else if (r >= 995e6) scale = 1e9, suffix = "G";
    else if (r >= 995e3) scale = 1e6, suffix = "M";
    else if (r >= 995) scale = 1e3, suffix = "k";
    else scale = 1, suffix = "";
  }
  snprintf(num, sizeof num, digits_fmt(r / scale), v / scale);
  snprintf(buf, n, "%s%s", num, suffix);
  return buf;
}

char *fmt_thousands(char *buf, size_t n, double v, int decimals) {
  char tmp[64], out[96];
  snprintf(tmp, sizeof tmp, "%.*f", decimals, v);
  const char *s = tmp;
  size_t o = 0;
  if (*s == '-') out[o++] = *s++;
  size_t intlen = strcspn(s, ".");
  for (size_t i = 0; s[i]; i++) {
    if (i < intlen && i > 0 && (intlen - i) % 3 == 0) out[o++] = ',';
    out[o++] = s[i];
  }
  out[o] = 0;
  snprintf(buf, n, "%s", out);
  return buf;
}

const char *fmt_p(double p) {
  static char ring[8][16];
  static int next;
  char *b = ring[next++ & 7];
  snprintf(b, sizeof ring[0], "%.3f", p);
  return b;
}

const char *fmt_unit_title(const char *unit) {
  if (strcmp(unit, "ns/op") == 0) return "time/op";
  return unit;
}

const char *fmt_unit_caption(const char *unit) {
  if (strcmp(unit, "ns/op") == 0) return "execution time (ns/op)";
  if (strcmp(unit, "peak-kB") == 0) return "peak memory (peak-kB)";
  if (strcmp(unit, "end-kB") == 0) return "memory at end (end-kB)";
  if (strcmp(unit, "faults") == 0) return "minor page faults";
  if (strcmp(unit, "cycles") == 0) return "cycles (rdtsc ticks)";
  if (strcmp(unit, "vmdata-kB") == 0) return "VmData growth (vmdata-kB)";
  if (strcmp(unit, "rss-kB") == 0) return "RSS growth (rss-kB)";
  return unit;
}

int fmt_higher_is_better(const char *unit) { return ends_with(unit, "/s"); }
