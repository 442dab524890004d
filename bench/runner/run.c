/* SPDX-License-Identifier: MIT */
/* run: one measurement = one fresh process (fork + execve) of a benchmark
 * program, with LD_PRELOAD=<allocator> in the child's environment only
 * (removed entirely for glibc), its standard output parsed per
 * bench/PROTOCOL.md, its exit status checked.
 *
 * FAIL when: the child is killed by a signal, exits non-zero, runs past the
 * timeout, the dynamic loader refused the preload (it then prints
 * "ld.so: object ... cannot be preloaded" and would silently run glibc), or
 * it exits 0 without printing a Benchmark line or a "# skip:" line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

extern char **environ;

/* the benchmark process running now: stopped with us on SIGINT/SIGTERM/SIGHUP */
static volatile sig_atomic_t current_child;

static void on_signal(int sig) {
  if (current_child > 0) kill(-(pid_t)current_child, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

void run_install_signal_handlers(void) {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Parse `Benchmark<name>[-P] <iters> <value> <unit> [<value> <unit>]...`
 * and the `# ` comment lines the runner shows. */
void run_parse_line(results *r, int j, int a, int run, const char *line, int *nbench,
                    int *skipped, char *skipwhy, size_t skipwhylen) {
  while (*line == ' ' || *line == '\t') line++;
  if (!strncmp(line, "Benchmark", 9)) {
    char *copy = xstrdup(line + 9), *save = NULL;
    char *name = strtok_r(copy, " \t", &save);
    char *iters = name ? strtok_r(NULL, " \t", &save) : NULL;
    if (!name || !*name || !iters) {
      free(copy);
      return;
    }
    char *end;
    double it = strtod(iters, &end);
    if (*end || it == 0) { /* benchstat's rule: iteration count 0 = ignore */
      free(copy);
      return;
    }
    int got = 0;
    for (;;) {
      char *val = strtok_r(NULL, " \t", &save);
      char *unit = val ? strtok_r(NULL, " \t", &save) : NULL;
      if (!val || !unit) break;
      double v = strtod(val, &end);
      if (*end) break;
      results_add_sample(r, j, a, run, name, unit, v);
      got++;
    }
    if (got) (*nbench)++;
    free(copy);
  } else if (!strncmp(line, "# skip:", 7)) {
    const char *w = line + 7;
    while (*w == ' ') w++;
    *skipped = 1;
    snprintf(skipwhy, skipwhylen, "%s", w);
  } else if (!strncmp(line, "# scavenge:", 11)) {
    /* the release call: one per allocator, shown in the allocator table */
    allocator *al = &r->allocs[a];
    const char *w = line + 11;
    while (*w == ' ') w++;
    size_t n = strcspn(w, " ");
    if (!strncmp(w, "none", 4)) n = strlen(w);
    char *name = xasprintf("%.*s", (int)n, w);
    if (!al->release) al->release = name;
    else if (!strstr(al->release, name)) {
      char *both = xasprintf("%s, %s", al->release, name);
      free(al->release);
      free(name);
      al->release = both;
    } else free(name);
  } else if (!strncmp(line, "# rss:", 6)) {
    /* RssAnon over time, of the first run only: appended to one event */
    if (run != 0) return;
    for (size_t i = 0; i < r->nevent; i++) {
      event *e = &r->events[i];
      if (e->job == j && e->alloc == a && e->kind == EV_RSS) {
        char *t = xasprintf("%s%s", e->text, line + 6);
        free(e->text);
        e->text = t;
        return;
      }
    }
    results_add_event(r, j, a, run, EV_RSS, line + 6);
  } else if (!strncmp(line, "# note:", 7)) {
    /* keep one copy of each distinct note per (job, allocator) */
    for (size_t i = 0; i < r->nevent; i++) {
      const event *e = &r->events[i];
      if (e->job == j && e->alloc == a && e->kind == EV_NOTE && !strcmp(e->text, line + 2))
        return;
    }
    results_add_event(r, j, a, run, EV_NOTE, line + 2);
  }
}

/* environment of the child: ours minus LD_PRELOAD, plus the allocator's;
 * after the first round BENCH_PAUSE_MS=0: the unassisted memory sample and
 * its pause (1.1 s per process) are taken in the first round only */
static char **child_env(const char *preload, int nopause) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = xrealloc(NULL, (n + 3) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "BENCH_PAUSE_MS=", 15))
      env[k++] = environ[i];
  if (nopause) env[k++] = (char *)"BENCH_PAUSE_MS=0";
  if (preload) env[k++] = xasprintf("LD_PRELOAD=%s", preload);
  env[k] = NULL;
  return env;
}

static void free_child_env(char **env, int made) {
  size_t n = 0;
  while (env[n]) n++;
  if (made && n) free(env[n - 1]); /* the LD_PRELOAD string we made is last */
  free(env);
}

/* append to a growing buffer */
static void buf_add(char **b, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    *cap = (*len + n + 1) * 2;
    *b = xrealloc(*b, *cap);
  }
  memcpy(*b + *len, s, n);
  *len += n;
  (*b)[*len] = 0;
}

/* last non-empty line of a text, for FAIL reasons */
static void last_line(const char *text, char *out, size_t n) {
  out[0] = 0;
  if (!text) return;
  const char *end = text + strlen(text);
  while (end > text && (end[-1] == '\n' || end[-1] == ' ')) end--;
  const char *start = end;
  while (start > text && start[-1] != '\n') start--;
  size_t len = (size_t)(end - start);
  if (len >= n) len = n - 1;
  memcpy(out, start, len);
  out[len] = 0;
}

int run_preflight(const char *lib, char *why, size_t n) {
  static const char *trues[] = {"/bin/true", "/usr/bin/true", NULL};
  const char *prog = NULL;
  for (int i = 0; trues[i] && !prog; i++)
    if (access(trues[i], X_OK) == 0) prog = trues[i];
  if (!prog) return 0; /* nothing to try it with */
  int errp[2];
  if (pipe2(errp, O_CLOEXEC)) return 0;
  char **env = child_env(lib, 0);
  pid_t pid = fork();
  if (pid < 0) {
    free_child_env(env, 1);
    close(errp[0]);
    close(errp[1]);
    return 0;
  }
  if (pid == 0) {
    dup2(errp[1], 2);
    char *argv[] = {(char *)prog, NULL};
    execve(prog, argv, env);
    _exit(127);
  }
  close(errp[1]);
  char buf[4096];
  size_t len = 0;
  ssize_t k;
  while (len + 1 < sizeof buf && (k = read(errp[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)k;
  buf[len] = 0;
  close(errp[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  free_child_env(env, 1);
  char line[300];
  last_line(buf, line, sizeof line);
  if (strstr(buf, "cannot be preloaded")) {
    snprintf(why, n, "the dynamic loader refuses it: %s", line);
    return -1;
  }
  if (WIFSIGNALED(status)) {
    snprintf(why, n, "%s dies of signal %d (%s) with it preloaded", prog, WTERMSIG(status),
             strsignal(WTERMSIG(status)));
    return -1;
  }
  return 0;
}

/* Did malloc resolve to the library asked for? `origin` is what the
 * process printed ("# malloc: PATH", from dladdr). For a preloaded library
 * the two real paths must be the same file; for glibc (nothing preloaded)
 * it must be glibc's libc.so. Returns 1 (and why) when not. */
static int check_origin(results *r, int a, const char *origin, char *why, size_t n) {
  allocator *al = &r->allocs[a];
  if (!*origin) {
    snprintf(why, n, "the program did not say where malloc resolved (no \"# malloc:\" line)");
    return 1;
  }
  if (!al->origin) al->origin = xstrdup(origin);
  char real[PATH_MAX];
  const char *o = realpath(origin, real) ? real : origin;
  if (al->path) {
    struct stat s1, s2;
    if (stat(o, &s1) == 0 && stat(al->path, &s2) == 0 && s1.st_dev == s2.st_dev &&
        s1.st_ino == s2.st_ino)
      return 0;
    snprintf(why, n, "malloc resolved to %s, not to the library asked for (%s): it does not replace malloc",
             origin, al->path);
    return 1;
  }
  const char *b = strrchr(o, '/');
  b = b ? b + 1 : o;
  if (!strncmp(b, "libc.so", 7) || (!strncmp(b, "libc-", 5) && strstr(b, ".so"))) return 0;
  snprintf(why, n, "malloc resolved to %s, not to glibc's libc (something is preloaded: "
           "/etc/ld.so.preload?)", origin);
  return 1;
}

run_outcome run_one(results *r, int j, int a, int run, int timeout_s) {
  run_outcome o = {0};
  const job *jb = &r->jobs[j];
  const allocator *al = &r->allocs[a];
  int outp[2], errp[2];
  if (pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "pipe: %s", strerror(errno));
    return o;
  }
  char **env = child_env(al->path, run > 0 || !jb->pause);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "fork: %s", strerror(errno));
    free_child_env(env, al->path != NULL);
    return o;
  }
  if (pid == 0) {
    setpgid(0, 0); /* so a timeout can stop the child's whole group */
    dup2(outp[1], 1);
    dup2(errp[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execve(jb->program, jb->argv, env);
    dprintf(2, "exec %s: %s\n", jb->program, strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  current_child = pid;
  close(outp[1]);
  close(errp[1]);

  char *out = NULL, *err = NULL;
  size_t olen = 0, ocap = 0, elen = 0, ecap = 0;
  struct pollfd pf[2] = {{outp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
  int open_fds = 2, timed_out = 0;
  double deadline = t0 + timeout_s;
  while (open_fds > 0) {
    double left = deadline - now_s();
    if (left <= 0) {
      timed_out = 1;
      kill(-pid, SIGKILL);
      break;
    }
    int rc = poll(pf, 2, (int)(left * 1000) + 1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char chunk[8192];
      ssize_t n = read(pf[i].fd, chunk, sizeof chunk);
      if (n <= 0) {
        close(pf[i].fd);
        pf[i].fd = -1;
        open_fds--;
      } else if (i == 0) {
        buf_add(&out, &olen, &ocap, chunk, (size_t)n);
      } else if (elen < (1u << 20)) {
        buf_add(&err, &elen, &ecap, chunk, (size_t)n);
      }
    }
  }
  for (int i = 0; i < 2; i++)
    if (pf[i].fd >= 0) close(pf[i].fd);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  /* the output may be closed before the process ends: keep the deadline */
  for (;;) {
    pid_t w = wait4(pid, &status, timed_out ? 0 : WNOHANG, &ru);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0) {
      if (now_s() >= deadline) {
        timed_out = 1;
        kill(-pid, SIGKILL);
      } else {
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
      }
    }
  }
  current_child = 0;
  o.cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
            ru.ru_stime.tv_usec / 1e6;
  o.wall_s = now_s() - t0;
  free_child_env(env, al->path != NULL);

  /* parse stdout line by line */
  int nbench = 0, skipped = 0;
  char skipwhy[256] = "", origin[PATH_MAX] = "";
  if (out) {
    char *save = NULL;
    for (char *ln = strtok_r(out, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
      if (!strncmp(ln, "# malloc: ", 10)) snprintf(origin, sizeof origin, "%s", ln + 10);
      run_parse_line(r, j, a, run, ln, &nbench, &skipped, skipwhy, sizeof skipwhy);
    }
  }
  char originwhy[PATH_MAX + 200] = "";
  int origin_bad = nbench && check_origin(r, a, origin, originwhy, sizeof originwhy);
  char errline[300];
  last_line(err, errline, sizeof errline);

  o.timed_out = timed_out;
  if (timed_out) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "timed out after %d s", timeout_s);
  } else if (WIFSIGNALED(status)) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "killed by signal %d (%s)%s%s", WTERMSIG(status),
             strsignal(WTERMSIG(status)), errline[0] ? ": " : "", errline);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "exit status %d%s%s", WEXITSTATUS(status),
             errline[0] ? ": " : "", errline);
  } else if (err && strstr(err, "cannot be preloaded")) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "the loader refused LD_PRELOAD=%s", al->path ? al->path : "");
  } else if (origin_bad) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "%s", originwhy);
  } else if (skipped && !nbench) {
    o.status = CELL_SKIP;
    snprintf(o.why, sizeof o.why, "%s", skipwhy);
  } else if (!nbench) {
    o.status = CELL_FAIL;
    snprintf(o.why, sizeof o.why, "no Benchmark line in the output%s%s",
             errline[0] ? ": " : "", errline);
  } else {
    o.status = CELL_OK;
  }
  if (o.status == CELL_FAIL) results_add_event(r, j, a, run, EV_FAIL, o.why);
  else if (o.status == CELL_SKIP) results_add_event(r, j, a, run, EV_SKIP, o.why);
  free(out);
  free(err);
  return o;
}
