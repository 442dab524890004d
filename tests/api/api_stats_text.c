/* SPDX-License-Identifier: MIT */
/* api_stats_text: the report at exit (LITHE_SHOW_STATS=1) is for a person:
 * a child that allocates and touches 40 MiB (20 blocks of 2 MiB) and frees
 * all but one prints a report that names the program and its pid, shows
 * the peak of bytes in use, committed and RSS at >= 40 MiB in human units
 * (KiB/MiB/GiB with one decimal) with the current bytes in use below the
 * peak, and holds no raw number of more than 10 digits (the old report
 * printed "reserved bytes 137569128448").  LITHE_STATS_PID names the one
 * process that reports: another pid silences the child, 0 does not.
 * Needs lithe. */
#include "testutil.h"

#define MiB_ ((size_t)1 << 20)

static void child(void) {
  static char *p[20];
  for (int i = 0; i < 20; i++) {
    p[i] = malloc(2 * MiB_);
    if (!p[i]) _exit(3);
    memset(p[i], i + 1, 2 * MiB_);
  }
  for (int i = 1; i < 20; i++) free(p[i]);
  printf("child %d\n", p[0][100]);
  exit(0); /* the report comes from lithe's destructor */
}

/* "40.0 MiB" -> bytes; -1 if s does not start with a number and a unit */
static double human(const char *s) {
  char *end;
  while (*s == ' ') s++;
  double v = strtod(s, &end);
  if (end == s || *end != ' ') return -1;
  end++;
  static const char *const unit[] = {"B ", "KiB", "MiB", "GiB", "TiB"};
  for (int u = 0; u < 5; u++)
    if (strncmp(end, unit[u], strlen(unit[u])) == 0 || (u == 0 && strcmp(end, "B") == 0)) {
      for (int i = 0; i < u; i++) v *= 1024;
      return v;
    }
  return -1;
}

/* the row "  NAME   CURRENT   PEAK   note": its two figures in bytes */
static int figures(const char *report, const char *name, double *cur, double *peak) {
  char key[64];
  snprintf(key, sizeof key, "\n  %s ", name);
  const char *l = strstr(report, key);
  if (!l) return 0;
  l += strlen(key);
  *cur = human(l);
  while (*l == ' ') l++;
  l = strchr(l, ' ') + 1; /* past the number */
  l = strchr(l, ' ');     /* past the unit */
  *peak = l ? human(l) : -1;
  return *cur >= 0;
}

static void run(tu_child *r, const char *pid_env) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(n > 0);
  self[n] = 0;
  char *argv[] = {self, "child", NULL};
  const char *env[] = {"LITHE_SHOW_STATS=1", pid_env, NULL};
  CHECK(tu_run_exec(r, argv, env, 60) == 0);
  char how[64];
  tu_describe(r, how, sizeof how);
  CHECKF(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "child: %s; stderr: %s", how, r->err);
  CHECKF(strcmp(r->out, "child 1\n") == 0, "child printed '%s'", r->out);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) child();
  tu_require_lithe();
  static tu_child r;
  run(&r, "LITHE_STATS_PID");
  fputs(r.err, stdout);

  const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  char head[300];
  snprintf(head, sizeof head, "): %s\n", base);
  const char *h = strstr(r.err, "lithe stats (pid ");
  CHECKF(h && strstr(h, head) == strchr(h, ')'), "no header 'lithe stats (pid N): %s'", base);

  double cur, peak;
  CHECKF(figures(r.err, "in use", &cur, &peak), "no 'in use' row");
  printf("in use: current %.0f, peak %.0f bytes\n", cur, peak);
  CHECKF(peak >= 40.0 * MiB_, "peak in use %.0f < 40 MiB", peak);
  CHECKF(cur < peak && cur < 20.0 * MiB_, "current in use %.0f not below the peak %.0f", cur, peak);
  CHECKF(figures(r.err, "committed", &cur, &peak) && peak >= 40.0 * MiB_, "peak committed %.0f", peak);
  CHECKF(figures(r.err, "process RSS", &cur, &peak) && peak >= 40.0 * MiB_, "peak RSS %.0f", peak);
  CHECKF(figures(r.err, "reserved", &cur, &peak) && peak >= cur, "reserved %.0f, peak %.0f", cur, peak);
  CHECK(strstr(r.err, "MiB") && strstr(r.err, "address space, not charged"));

  /* no raw number of more than 10 digits */
  int run_len = 0;
  for (const char *c = r.err; *c; c++) {
    run_len = (*c >= '0' && *c <= '9') ? run_len + 1 : 0;
    CHECKF(run_len <= 10, "a raw number of over 10 digits: ...%.30s", c - 10);
  }

  /* LITHE_STATS_PID: another process's pid silences it; 0 does not */
  run(&r, "LITHE_STATS_PID=1");
  CHECKF(!strstr(r.err, "lithe stats"), "LITHE_STATS_PID=1 still printed: %s", r.err);
  run(&r, "LITHE_STATS_PID=0");
  CHECKF(strstr(r.err, "lithe stats (pid "), "LITHE_STATS_PID=0 printed no report: %s", r.err);
  printf("api_stats_text: OK\n");
  return 0;
}
