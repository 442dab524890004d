/* SPDX-License-Identifier: MIT */
/* lithe-bench: compare malloc implementations side by side in one run.
 *
 *   lithe-bench [--quick] [--runs N] [--only NAME,...] [--out DIR] ALLOCATOR...
 *
 * This file: the command line, turning allocator names into libraries,
 * building the benchmark list, the interleaved run loop (for each
 * benchmark: run 1 of A B C, run 2 of A B C, ...) and --check.
 * Spawning is in run.c, numbers in stats.c, output in table/svg/report.c.
 * Full description: docs/runner.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "runner.h"

#ifndef LITHE_SOURCE_DIR
#define LITHE_SOURCE_DIR "."
#endif

/* Defaults. Without --runs the number of runs is set by a time budget
 * (DEFAULT_BUDGET seconds for the whole suite): every benchmark gets
 * MIN_RUNS interleaved rounds (each allocator once a round; the rank test
 * needs several), more, up to DEFAULT_RUNS, only while its share of the
 * remaining budget allows. The default suite with 5 allocators aims at
 * under 5 minutes on 2 cores (`make bench`). --runs N fixes N runs for
 * every benchmark (precise work). */
#define DEFAULT_RUNS 5       /* at most, processes per benchmark per allocator */
#define DEFAULT_BUDGET 120   /* seconds for the suite when --runs is not given */
/* The rows whose first process per allocator pauses 1.1 s for the
 * unassisted memory-at-end figure (what an allocator gives back by itself):
 * a synthetic row and a recorded program that end with a large free heap,
 * where the policies differ most (docs/benchmarks.md, "Memory at end").
 * --unassisted '*' for every row. */
#define DEFAULT_UNASSISTED "medium,replay_sqlite"
#define DEFAULT_INNER_RUNS 1 /* --runs passed to bench-mallocbench / lithe-replay */
#define STARTUP_FACTOR 4     /* startup is one sample per (cheap) process */
#define DEFAULT_BENCHTIME "0.03"
#define DEFAULT_TIMEOUT 600
#define QUICK_TIMEOUT 60     /* --quick: the whole suite should take under a minute */
#define SLOW_FACTOR 20       /* default limit: 20x the slowest successful run so far... */
#define MIN_TIMEOUT 30       /* ... but at least 30 s */

/* The bench-mallocbench workloads of the default list: whether it also
 * runs with --parallel, and the --scale the runner passes (1 = the
 * reference's full work). The scaled ones would take 2-8 s per process
 * per allocator at full size (stress_aligned 7.5 s under glibc on the
 * 2-core development VM); scaled they take 0.2-1 s, which keeps `make
 * bench` near its time budget. Their per-round sizes stay the reference's
 * (stress: the 100 MiB heap, 5 MiB churns; only the number of churns
 * shrinks). medium and big touch 256 MiB instead of 1 GiB per repetition
 * (0.4 s a process instead of 2), fragment, fragment_iterate and
 * message_one do 0.3-0.4 of their rounds: `make bench` in under 5 minutes
 * with every row run 3 times (issue 45). */
static const struct {
  const char *name;
  int parallel;
  const char *scale;
} mallocbench_list[] = {
    {"churn", 1, NULL},          {"list_allocate", 1, NULL},  {"tree_allocate", 1, NULL},
    {"tree_churn", 1, NULL},     {"fragment", 1, "0.4"},      {"fragment_iterate", 1, "0.4"},
    {"medium", 1, "0.25"},       {"big", 1, "0.25"},          {"message_one", 0, "0.3"},
    {"message_many", 0, NULL},   {"list_traverse", 1, NULL},  {"tree_traverse", 1, NULL},
    {"alloc_free", 0, NULL},     {"stress", 0, "0.1"},        {"stress_aligned", 0, "0.1"},
    {"memalign", 0, "0.1"},      {"realloc", 0, NULL},        {"thread_churn", 0, "0.25"},
    {"retention", 0, NULL},
};
#define N_MALLOCBENCH ((int)(sizeof mallocbench_list / sizeof *mallocbench_list))

static char exe_dir[PATH_MAX];

static void usage(FILE *f) {
  fprintf(f,
          "usage: lithe-bench [options] ALLOCATOR...\n"
          "  ALLOCATOR: glibc (nothing preloaded) | jemalloc | mimalloc | tcmalloc | lithe\n"
          "             | NAME=/path/to/lib.so | /path/to/libX.so; the first is the baseline\n"
          "options:\n"
          "  --quick            pass --quick to every program, 1 run (for tests, not claims)\n"
          "  --runs N           processes per benchmark per allocator (startup runs %dx as\n"
          "                     many); without it: %d to %d, as many as fit --budget\n"
          "  --budget S         time budget in seconds for the default run count (default %d)\n"
          "  --inner-runs K     --runs passed to bench-mallocbench and lithe-replay (default %d)\n"
          "  --benchtime S      --benchtime passed to bench-scaling (default %s)\n"
          "  --only NAME,...    run only these benchmarks (shell patterns allowed: 'churn*')\n"
          "  --unassisted NAME,...  rows whose first process per allocator pauses 1.1 s\n"
          "                     for the unassisted end figure (default %s; '*' all)\n"
          "  --out DIR          report directory (default build/bench-report)\n"
          "  --traces DIR       where *.ltrace.xz live (default bench/traces of the source tree)\n"
          "  --bin-dir DIR      where the benchmark programs are (default: next to lithe-bench)\n"
          "  --median           summarise with median ± 95%% CI instead of mean ± spread\n"
          "  --timeout S        kill a benchmark process after S seconds (FAIL); default:\n"
          "                     %dx the slowest successful run of that benchmark so far,\n"
          "                     at least %d s, at most %d (--quick %d)\n"
          "  --report DIR       do not run: re-read DIR/results.tsv and write the report\n"
          "  --check            exit 1 unless every selected benchmark produced figures\n"
          "  --aa               run the baseline twice, as BASE and BASE-again: an A/A\n"
          "                     comparison; the report states the noise floor it measured\n"
          "  --list             print the benchmark list and exit\n",
          STARTUP_FACTOR, MIN_RUNS, DEFAULT_RUNS, DEFAULT_BUDGET, DEFAULT_INNER_RUNS, DEFAULT_BENCHTIME,
          DEFAULT_UNASSISTED, SLOW_FACTOR,
          MIN_TIMEOUT, DEFAULT_TIMEOUT, QUICK_TIMEOUT);
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_exec(const char *p) { return file_exists(p) && access(p, X_OK) == 0; }

/* ---- allocators ------------------------------------------------------- */

/* Peers by name: the first file found wins. mimalloc 3 before 2 (both
 * sonames exist in Debian-family releases); `tcmalloc` takes gperftools'
 * minimal library first (what .ci/setup installs: no heap profiler, no
 * libunwind), then the full one; the report says which (tcmalloc_variant). */
static const struct {
  const char *name;
  const char *files[4];
  const char *package;
} peers[] = {
    {"jemalloc", {"libjemalloc.so.2", "libjemalloc.so", NULL}, "libjemalloc2"},
    {"mimalloc", {"libmimalloc.so.3", "libmimalloc.so.2", "libmimalloc.so", NULL}, "libmimalloc2.0"},
    {"tcmalloc", {"libtcmalloc_minimal.so.4", "libtcmalloc.so.4", NULL}, "libtcmalloc-minimal4"},
    {"tcmalloc-minimal", {"libtcmalloc_minimal.so.4", NULL}, "libtcmalloc-minimal4"},
    {"tcmalloc-full", {"libtcmalloc.so.4", NULL}, "libgoogle-perftools4"},
};

static const char *lib_dirs[] = {
    "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/lib/aarch64-linux-gnu",    "/usr/lib/riscv64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
    "/usr/lib/s390x-linux-gnu",  "/usr/lib/i386-linux-gnu",    "/usr/lib64",
    "/usr/lib",                  "/usr/local/lib",             NULL};

/* the first line a shell command prints, or "" */
static void cmd_line(const char *cmd, char *out, size_t n) {
  out[0] = 0;
  FILE *p = popen(cmd, "r");
  if (!p) return;
  if (fgets(out, (int)n, p)) out[strcspn(out, "\n")] = 0;
  while (fgetc(p) != EOF) {
  }
  pclose(p);
}

/* "libjemalloc2 5.3.0-1" for a library a Debian package owns (dpkg-query),
 * plus which tcmalloc it is; NULL when no package owns it */
static char *package_of(const char *lib) {
  char cmd[PATH_MAX * 2 + 128], pkg[256], ver[256], real[PATH_MAX];
  const char *tries[2] = {lib, realpath(lib, real) ? real : lib};
  pkg[0] = 0;
  for (int i = 0; i < 2 && !pkg[0]; i++) {
    snprintf(cmd, sizeof cmd, "dpkg-query -S '%s' 2>/dev/null", tries[i]);
    cmd_line(cmd, pkg, sizeof pkg);
  }
  const char *variant = strstr(lib, "tcmalloc_minimal") ? " (tcmalloc-minimal: no heap profiler)"
                        : strstr(lib, "libtcmalloc.so")  ? " (full tcmalloc, gperftools)"
                                                         : "";
  char *colon = strstr(pkg, ": ");
  if (!pkg[0] || !colon) return *variant ? xstrdup(variant + 1) : NULL;
  *colon = 0; /* "libjemalloc2:amd64" */
  snprintf(cmd, sizeof cmd, "dpkg-query -W -f='${Version}' '%s' 2>/dev/null", pkg);
  cmd_line(cmd, ver, sizeof ver);
  char *arch = strchr(pkg, ':');
  if (arch) *arch = 0;
  return xasprintf("%s %s%s", pkg, ver[0] ? ver : "?", variant);
}

static allocator resolve_allocator(const char *arg) {
  allocator a = {0};
  const char *eq = strchr(arg, '=');
  char path[PATH_MAX];
  if (eq) {
    a.name = xstrdup(arg);
    a.name[eq - arg] = 0;
    const char *p = eq + 1;
    if (!*p || !strcmp(p, "glibc") || !strcmp(p, "none")) {
      a.available = 1; /* NAME= : nothing preloaded */
      return a;
    }
    char real[PATH_MAX];
    if (!file_exists(p) || !realpath(p, real)) {
      a.why = xasprintf("%s does not exist (not built yet?)", p);
      return a;
    }
    a.path = xstrdup(real);
    a.available = 1;
    return a;
  }
  if (!strcmp(arg, "glibc") || !strcmp(arg, "system") || !strcmp(arg, "libc")) {
    a.name = xstrdup(arg);
    a.available = 1;
    return a;
  }
  if (strchr(arg, '/')) { /* a bare path: name from the file name */
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", arg);
    char *b = basename(tmp);
    if (!strncmp(b, "lib", 3)) b += 3;
    char *dot = strstr(b, ".so");
    if (dot) *dot = 0;
    a.name = xstrdup(*b ? b : arg);
    char real[PATH_MAX];
    if (!file_exists(arg) || !realpath(arg, real)) {
      a.why = xasprintf("%s does not exist", arg);
      return a;
    }
    a.path = xstrdup(real);
    a.available = 1;
    return a;
  }
  a.name = xstrdup(arg);
  if (!strcmp(arg, "lithe")) {
    snprintf(path, sizeof path, "%s/liblithe.so", exe_dir);
    if (file_exists(path)) {
      a.path = xstrdup(path);
      a.available = 1;
    } else {
      a.why = xasprintf("%s does not exist (not built yet?)", path);
    }
    return a;
  }
  for (size_t i = 0; i < sizeof peers / sizeof peers[0]; i++) {
    if (strcmp(arg, peers[i].name) != 0) continue;
    for (int d = 0; lib_dirs[d]; d++)
      for (int f = 0; peers[i].files[f]; f++) {
        snprintf(path, sizeof path, "%s/%s", lib_dirs[d], peers[i].files[f]);
        if (file_exists(path)) {
          a.path = xstrdup(path);
          a.available = 1;
          return a;
        }
      }
    a.why = xasprintf("not installed — apt-get install %s", peers[i].package);
    if (!strcmp(arg, "mimalloc"))
      a.why = xstrdup("not installed — apt-get install libmimalloc2.0 (or libmimalloc3)");
    return a;
  }
  a.why = xstrdup("unknown allocator name (give NAME=/path/to/lib.so)");
  return a;
}

/* ---- benchmark list --------------------------------------------------- */

typedef struct {
  int quick, runs, inner_runs;
  const char *benchtime, *bin_dir, *traces, *unassisted;
} list_opts;

static job *new_job(results *r, const char *name, job_kind kind, const char *program,
                    const list_opts *o) {
  r->jobs = xrealloc(r->jobs, (size_t)(r->njob + 1) * sizeof *r->jobs);
  job *j = &r->jobs[r->njob++];
  memset(j, 0, sizeof *j);
  j->name = xstrdup(name);
  j->kind = kind;
  j->program = xasprintf("%s/%s", o->bin_dir, program);
  j->argv[0] = j->program;
  j->runs = o->runs;
  if (!is_exec(j->program)) {
    j->missing = 1;
    j->why = xasprintf("%s not built", j->program);
  }
  return j;
}

static void arg(job *j, const char *a) {
  int n = 0;
  while (j->argv[n]) n++;
  if (n + 1 < MAX_ARGS) j->argv[n] = xstrdup(a);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void build_jobs(results *r, const list_opts *o) {
  char inner[32];
  snprintf(inner, sizeof inner, "%d", o->inner_runs);
  for (int par = 0; par < 2; par++) {
    for (int i = 0; i < N_MALLOCBENCH; i++) {
      if (par && !mallocbench_list[i].parallel) continue;
      char name[64];
      snprintf(name, sizeof name, "%s%s", mallocbench_list[i].name, par ? "_parallel" : "");
      job *j = new_job(r, name, JOB_MALLOCBENCH, "bench-mallocbench", o);
      arg(j, "--benchmark");
      arg(j, mallocbench_list[i].name);
      if (par) arg(j, "--parallel");
      /* one long workload per allocator drawn over time: medium, the 256 MiB
       * rise and what comes back */
      if (!par && !strcmp(mallocbench_list[i].name, "medium")) arg(j, "--rss-sample-ms=50");
      if (mallocbench_list[i].scale && !o->quick) {
        arg(j, "--scale");
        arg(j, mallocbench_list[i].scale);
      }
      arg(j, "--format=gobench");
      if (o->quick) arg(j, "--quick");
      else {
        arg(j, "--runs");
        arg(j, inner);
      }
    }
  }
  /* large-object churn (1-32 MiB, zero-filled): the MallocBench figures */
  job *j = new_job(r, "bigchurn", JOB_MALLOCBENCH, "bench-bigchurn", o);
  if (o->quick) arg(j, "--quick");
  else {
    arg(j, "--ops"); /* 50 of the program's 400: 0.3-0.8 s a process, not 1.4-4 */
    arg(j, "50");
  }
  /* 4 threads, random small sizes, 1 op in 4 freed by another thread */
  j = new_job(r, "mtrandom", JOB_MALLOCBENCH, "bench-mtrandom", o);
  if (o->quick) arg(j, "--quick");
  else {
    arg(j, "--ops"); /* 500,000 of the program's 2,000,000 */
    arg(j, "500000");
  }
  /* lithe's memory limit: a 48 MiB working set cycled through sizes, as
   * is and under LITHE_MEMORY_LIMIT=80m (the program sets it for itself;
   * the other allocators ignore it): what staying under costs, and whether
   * it does */
  j = new_job(r, "limitcycle", JOB_MALLOCBENCH, "bench-limitcycle", o);
  if (o->quick) arg(j, "--quick");
  j = new_job(r, "limitcycle_limit80m", JOB_MALLOCBENCH, "bench-limitcycle", o);
  arg(j, "--limit");
  arg(j, "80m");
  if (o->quick) arg(j, "--quick");

  j = new_job(r, "startup", JOB_STARTUP, "bench-startup", o);
  arg(j, "--format=gobench");
  if (o->quick) arg(j, "--quick");
  else j->runs = o->runs * STARTUP_FACTOR;

  j = new_job(r, "fixed_block_scaling", JOB_SCALING, "bench-scaling", o);
  arg(j, "--cpu=1,2,4,8,16");
  if (o->quick) arg(j, "--quick");
  else {
    arg(j, "--benchtime");
    arg(j, o->benchtime);
  }

  j = new_job(r, "commit", JOB_COMMIT, "bench-commit", o);
  if (o->quick) arg(j, "--quick");

  j = new_job(r, "fastpath", JOB_FASTPATH, "bench-fastpath", o);
  if (o->quick) arg(j, "--quick");
  else {
    arg(j, "--runs"); /* one calibrated run a size inside the process (the program's
                         default is a median of 5): the rounds give the spread */
    arg(j, "1");
  }

  /* real applications from Debian (bench-app): the rows the verdict follows */
  static const char *apps[] = {"gxx", "python", "sqlite", "redis", "z3"};
  for (size_t i = 0; i < sizeof apps / sizeof *apps; i++) {
    char name[64];
    snprintf(name, sizeof name, "app_%s", apps[i]);
    j = new_job(r, name, JOB_APP, "bench-app", o);
    arg(j, "--app");
    arg(j, apps[i]);
    if (o->quick) arg(j, "--quick");
  }

  /* every recorded trace */
  char pat[PATH_MAX];
  snprintf(pat, sizeof pat, "%s/*.ltrace.xz", o->traces);
  glob_t g;
  if (glob(pat, 0, NULL, &g) == 0) {
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, cmp_str);
    for (size_t i = 0; i < g.gl_pathc; i++) {
      char tmp[PATH_MAX], name[PATH_MAX + 8];
      snprintf(tmp, sizeof tmp, "%s", g.gl_pathv[i]);
      char *b = basename(tmp);
      char *suf = strstr(b, ".ltrace.xz");
      if (suf) *suf = 0;
      snprintf(name, sizeof name, "replay_%s", b);
      j = new_job(r, name, JOB_REPLAY, "lithe-replay", o);
      arg(j, g.gl_pathv[i]);
      arg(j, "--runs");
      arg(j, o->quick ? "1" : inner);
      arg(j, "--format=gobench");
      if (o->quick) arg(j, "--quick");
    }
    /* the first trace once more, its leftovers kept live: the end figures
     * then carry what the program really left (reported beside them) */
    if (g.gl_pathc) {
      char tmp[PATH_MAX], name[PATH_MAX + 16];
      snprintf(tmp, sizeof tmp, "%s", g.gl_pathv[0]);
      char *b = basename(tmp);
      char *suf = strstr(b, ".ltrace.xz");
      if (suf) *suf = 0;
      snprintf(name, sizeof name, "replay_keep_%s", b);
      j = new_job(r, name, JOB_REPLAY, "lithe-replay", o);
      arg(j, g.gl_pathv[0]);
      arg(j, "--keep-leftovers");
      arg(j, "--runs");
      arg(j, o->quick ? "1" : inner);
      arg(j, "--format=gobench");
      if (o->quick) arg(j, "--quick");
    }
    globfree(&g);
  }
  /* the unassisted-memory pause: first round of the rows named */
  char *list = xstrdup(o->unassisted ? o->unassisted : DEFAULT_UNASSISTED), *save = NULL;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
    for (int k = 0; k < r->njob; k++)
      if (!fnmatch(t, r->jobs[k].name, 0)) r->jobs[k].pause = 1;
  free(list);
}

/* keep only jobs matching --only; returns 0 if a name matched nothing */
static int select_jobs(results *r, const char *only) {
  char *list = xstrdup(only), *save = NULL;
  int *keep = calloc((size_t)r->njob, sizeof *keep), ok = 1;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int hit = 0;
    for (int j = 0; j < r->njob; j++)
      if (!fnmatch(t, r->jobs[j].name, 0)) keep[j] = hit = 1;
    if (!hit) {
      fprintf(stderr, "lithe-bench: --only: no benchmark named '%s'\n", t);
      ok = 0;
    }
  }
  int k = 0;
  for (int j = 0; j < r->njob; j++) {
    int to = keep[j] ? k++ : -1;
    if (to >= 0) r->jobs[to] = r->jobs[j];
    keep[j] = to; /* now: old index -> new index, -1 = dropped */
  }
  r->njob = k;
  /* with --report the store already holds data: renumber it */
  size_t m = 0;
  for (size_t i = 0; i < r->nsample; i++)
    if (keep[r->samples[i].job] >= 0) {
      r->samples[m] = r->samples[i];
      r->samples[m++].job = keep[r->samples[i].job];
    }
  r->nsample = m;
  m = 0;
  for (size_t i = 0; i < r->nevent; i++)
    if (keep[r->events[i].job] >= 0) {
      r->events[m] = r->events[i];
      r->events[m++].job = keep[r->events[i].job];
    }
  r->nevent = m;
  free(keep);
  free(list);
  return ok;
}

/* ---- the run ---------------------------------------------------------- */

static char *host_line(void) {
  struct utsname u;
  char model[256] = "";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "model name", 10)) {
        char *c = strchr(line, ':');
        if (c) {
          c++;
          while (*c == ' ') c++;
          c[strcspn(c, "\n")] = 0;
          snprintf(model, sizeof model, "%s", c);
        }
        break;
      }
    fclose(f);
  }
  uname(&u);
  return xasprintf("%s %s, %ld CPUs online%s%s", u.sysname, u.release,
                   sysconf(_SC_NPROCESSORS_ONLN), model[0] ? ", " : "", model);
}

static char *utc_now(void) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char b[64];
  strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return xstrdup(b);
}

static char *load_avg(void) {
  char b[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    double l1, l5, l15;
    if (fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
      snprintf(b, sizeof b, "%.2f %.2f %.2f (1, 5, 15 min)", l1, l5, l15);
    fclose(f);
  }
  return xstrdup(b);
}

static void read_line(const char *path, char *out, size_t n) {
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (fgets(out, (int)n, f)) out[strcspn(out, "\n")] = 0;
  fclose(f);
}

/* The conditions of the run, one report line each: lithe's commit,
 * transparent huge pages, the load at the start, and every variable that
 * tunes an allocator (so a run with LITHE_PURGE_DELAY_MS=0 or MALLOC_CONF
 * set says so). */
extern char **environ;
static char *conditions(void) {
  char commit[256], thp[256], defrag[256], cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd,
           "git -C '%s' log -1 --format='%%h %%cs %%s' 2>/dev/null | cut -c1-100", LITHE_SOURCE_DIR);
  cmd_line(cmd, commit, sizeof commit);
  char dirty[64];
  snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | head -1",
           LITHE_SOURCE_DIR);
  cmd_line(cmd, dirty, sizeof dirty);
  read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
  read_line("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);
  char *load = load_avg();
  static const char *prefixes[] = {"LITHE_", "MALLOC_", "MIMALLOC_", "TCMALLOC_", "JEMALLOC_",
                                   "GLIBC_TUNABLES", NULL};
  char vars[2048] = "";
  size_t off = 0;
  for (char **e = environ; *e; e++)
    for (int i = 0; prefixes[i]; i++)
      if (!strncmp(*e, prefixes[i], strlen(prefixes[i])) && off < sizeof vars)
        off += (size_t)snprintf(vars + off, sizeof vars - off, "%s`%s`", off ? ", " : "", *e);
  char *s = xasprintf("lithe commit: %s%s\n"
                      "transparent huge pages: enabled %s; defrag %s\n"
                      "load average at start: %s\n"
                      "allocator variables set: %s\n",
                      commit[0] ? commit : "? (not a git checkout)",
                      dirty[0] ? " (with uncommitted changes)" : "", thp[0] ? thp : "?",
                      defrag[0] ? defrag : "?", load, vars[0] ? vars : "none");
  free(load);
  return s;
}

static void progress_summary(const results *r, int j, int rounds, double secs) {
  /* one line per benchmark: the first time metric of each allocator */
  int ns;
  series *s = results_series(r, &ns);
  int k;
  for (k = 0; k < ns; k++)
    if (s[k].job == j && !strcmp(s[k].unit, "ns/op")) break;
  if (k == ns)
    for (k = 0; k < ns; k++)
      if (s[k].job == j) break;
  for (int a = 0; a < r->nalloc; a++) {
    if (!r->allocs[a].available) continue;
    const char *why = NULL;
    int st = results_cell_status(r, j, a, &why);
    if (st == CELL_FAIL) fprintf(stderr, "  %s FAIL", r->allocs[a].name);
    else if (st == CELL_SKIP) fprintf(stderr, "  %s skipped", r->allocs[a].name);
    else if (k < ns && s[k].n[a]) {
      int n;
      double c = series_center(r, &s[k], a, &n);
      char v[64];
      fprintf(stderr, "  %s %s", r->allocs[a].name, fmt_scaled(v, sizeof v, c, c, s[k].unit));
    } else fprintf(stderr, "  %s -", r->allocs[a].name);
  }
  if (rounds > 1) fprintf(stderr, "  [%d runs, %.0f s]", rounds, secs);
  else fprintf(stderr, "  [%.0f s]", secs);
  fputc('\n', stderr);
  results_free_series(s, ns, r->nalloc);
}

static int check(const results *r, const char *out) {
  int bad = 0;
  for (int j = 0; j < r->njob; j++) {
    const job *jb = &r->jobs[j];
    if (jb->missing) {
      fprintf(stderr, "check: %s: %s\n", jb->name, jb->why);
      bad++;
      continue;
    }
    for (int a = 0; a < r->nalloc; a++) {
      if (!r->allocs[a].available) continue;
      const char *why = NULL;
      int st = results_cell_status(r, j, a, &why);
      if (st == CELL_SKIP) {
        fprintf(stderr, "check: warning: %s under %s skipped: %s\n", jb->name,
                r->allocs[a].name, why);
        continue;
      }
      if (st != CELL_OK) {
        fprintf(stderr, "check: %s under %s: %s\n", jb->name, r->allocs[a].name,
                st == CELL_FAIL ? why : "no figures");
        bad++;
        continue;
      }
      /* the MallocBench-style programs must give all three figures */
      if (jb->kind == JOB_MALLOCBENCH || jb->kind == JOB_REPLAY || jb->kind == JOB_APP) {
        static const char *need[] = {"ns/op", "peak-kB", "end-kB"};
        for (int u = 0; u < 3; u++) {
          int found = 0;
          for (size_t i = 0; i < r->nsample && !found; i++)
            found = r->samples[i].job == j && r->samples[i].alloc == a &&
                    !strcmp(r->samples[i].unit, need[u]);
          if (!found) {
            fprintf(stderr, "check: %s under %s: no %s figure\n", jb->name, r->allocs[a].name,
                    need[u]);
            bad++;
          }
        }
      }
    }
  }
  char p[PATH_MAX];
  static const char *files[] = {"report.md", "results.tsv", "chart-time.svg"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", out, files[i]);
    if (!file_exists(p)) {
      fprintf(stderr, "check: %s missing\n", p);
      bad++;
    }
  }
  for (int j = 0; j < r->njob; j++)
    if (r->jobs[j].kind == JOB_SCALING && !r->jobs[j].missing) {
      snprintf(p, sizeof p, "%s/chart-scaling-%s.svg", out, "fixed_block_scaling");
      if (!file_exists(p)) {
        fprintf(stderr, "check: %s missing\n", p);
        bad++;
      }
    }
  if (bad) fprintf(stderr, "check: %d problem(s)\n", bad);
  else fprintf(stderr, "check: every benchmark produced its figures; report files present\n");
  return bad ? 1 : 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int mkdir_p(const char *dir) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(tmp, 0777);
      *p = '/';
    }
  return (mkdir(tmp, 0777) == 0 || errno == EEXIST) ? 0 : -1;
}

int main(int argc, char **argv) {
  results r = {0};
  list_opts lo = {.runs = DEFAULT_RUNS, .inner_runs = DEFAULT_INNER_RUNS,
                  .benchtime = DEFAULT_BENCHTIME};
  const char *only = NULL, *out = NULL, *report_dir = NULL;
  int runs_given = 0, timeout = 0, do_check = 0, do_list = 0, aa = 0;
  double budget = DEFAULT_BUDGET;
  char **names = NULL;
  int nnames = 0;

  ssize_t n = readlink("/proc/self/exe", exe_dir, sizeof exe_dir - 1);
  if (n > 0) {
    exe_dir[n] = 0;
    char *slash = strrchr(exe_dir, '/');
    if (slash) *slash = 0;
  } else {
    snprintf(exe_dir, sizeof exe_dir, ".");
  }

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
#define NEEDVAL()                                                       \
  do {                                                                  \
    if (i + 1 >= argc) {                                                \
      fprintf(stderr, "lithe-bench: %s needs a value\n", a);            \
      return 2;                                                         \
    }                                                                   \
  } while (0)
    if (!strcmp(a, "--quick")) lo.quick = 1;
    else if (!strcmp(a, "--median")) r.median = 1;
    else if (!strcmp(a, "--check")) do_check = 1;
    else if (!strcmp(a, "--aa")) aa = 1;
    else if (!strcmp(a, "--list")) do_list = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--runs")) {
      NEEDVAL();
      lo.runs = atoi(argv[++i]);
      runs_given = 1;
    } else if (!strcmp(a, "--budget")) {
      NEEDVAL();
      budget = atof(argv[++i]);
    } else if (!strcmp(a, "--inner-runs")) {
      NEEDVAL();
      lo.inner_runs = atoi(argv[++i]);
    } else if (!strcmp(a, "--benchtime")) {
      NEEDVAL();
      lo.benchtime = argv[++i];
    } else if (!strcmp(a, "--unassisted")) {
      NEEDVAL();
      lo.unassisted = argv[++i];
    } else if (!strcmp(a, "--only")) {
      NEEDVAL();
      only = argv[++i];
    } else if (!strcmp(a, "--out")) {
      NEEDVAL();
      out = argv[++i];
    } else if (!strcmp(a, "--traces")) {
      NEEDVAL();
      lo.traces = argv[++i];
    } else if (!strcmp(a, "--bin-dir")) {
      NEEDVAL();
      lo.bin_dir = argv[++i];
    } else if (!strcmp(a, "--timeout")) {
      NEEDVAL();
      timeout = atoi(argv[++i]);
    } else if (!strcmp(a, "--report")) {
      NEEDVAL();
      report_dir = argv[++i];
    } else if (a[0] == '-' && a[1] == '-') {
      fprintf(stderr, "lithe-bench: unknown option %s\n", a);
      usage(stderr);
      return 2;
    } else {
      names = xrealloc(names, (size_t)(nnames + 1) * sizeof *names);
      names[nnames++] = argv[i];
    }
  }
  if (lo.quick && !runs_given) lo.runs = 1;
  if (lo.quick || runs_given) budget = 0; /* a fixed number of runs */
  int timeout_given = timeout > 0;
  if (timeout <= 0) timeout = lo.quick ? QUICK_TIMEOUT : DEFAULT_TIMEOUT;
  if (lo.runs < 1 || lo.inner_runs < 1) {
    fprintf(stderr, "lithe-bench: --runs and --inner-runs must be at least 1\n");
    return 2;
  }

  /* re-report from a results.tsv */
  if (report_dir) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/results.tsv", report_dir);
    int median = r.median;
    if (results_load(&r, p) != 0) {
      fprintf(stderr, "lithe-bench: cannot read %s: %s\n", p, strerror(errno));
      return 2;
    }
    r.median = median;
    if (only && !select_jobs(&r, only)) return 2;
    if (!out) out = report_dir;
    if (mkdir_p(out) != 0) {
      fprintf(stderr, "lithe-bench: cannot create %s\n", out);
      return 2;
    }
    if (report_write(&r, out, 1) != 0) return 1;
    return do_check ? check(&r, out) : 0;
  }

  if (!lo.bin_dir) lo.bin_dir = exe_dir;
  char traces[PATH_MAX];
  if (!lo.traces) {
    struct stat st;
    snprintf(traces, sizeof traces, "%s/../bench/traces", exe_dir);
    if (stat(traces, &st) != 0 || !S_ISDIR(st.st_mode))
      snprintf(traces, sizeof traces, "%s/bench/traces", LITHE_SOURCE_DIR);
    lo.traces = traces;
  }
  build_jobs(&r, &lo);
  if (only && !select_jobs(&r, only)) return 2;
  if (do_list) {
    for (int j = 0; j < r.njob; j++) {
      printf("%-24s", r.jobs[j].name);
      for (int k = 0; r.jobs[j].argv[k]; k++) printf(" %s", r.jobs[j].argv[k]);
      printf("%s%s\n", r.jobs[j].missing ? "   [missing: " : "",
             r.jobs[j].missing ? "not built]" : "");
    }
    return 0;
  }
  if (nnames == 0) {
    usage(stderr);
    return 2;
  }

  for (int i = 0; i < nnames; i++) {
    allocator a = resolve_allocator(names[i]);
    for (int k = 0; k < r.nalloc; k++)
      if (!strcmp(r.allocs[k].name, a.name)) {
        fprintf(stderr, "lithe-bench: allocator name '%s' given twice\n", a.name);
        return 2;
      }
    if (a.path) a.package = package_of(a.path);
    r.allocs = xrealloc(r.allocs, (size_t)(r.nalloc + 1) * sizeof *r.allocs);
    r.allocs[r.nalloc++] = a;
    if (aa && i == 0) {
      /* --aa: the baseline again, under a second name, right after it: an
       * A/A comparison whose differences are the suite's own noise */
      allocator twin = a;
      twin.name = xasprintf("%s-again", a.name);
      twin.twin = xstrdup(a.name);
      r.allocs = xrealloc(r.allocs, (size_t)(r.nalloc + 1) * sizeof *r.allocs);
      r.allocs[r.nalloc++] = twin;
    }
  }
  /* a library the loader refuses (it would silently run glibc) or that
   * kills even /bin/true is reported once, like a missing one */
  for (int a = 0; a < r.nalloc; a++) {
    char why[512];
    if (r.allocs[a].available && r.allocs[a].path &&
        run_preflight(r.allocs[a].path, why, sizeof why) != 0) {
      r.allocs[a].available = 0;
      r.allocs[a].why = xstrdup(why);
    }
  }
  for (int a = 0; a < r.nalloc; a++) {
    if (r.allocs[a].available)
      fprintf(stderr, "%-10s %s\n", r.allocs[a].name,
              r.allocs[a].path ? r.allocs[a].path : "(no LD_PRELOAD)");
    else
      fprintf(stderr, "%-10s skipped: %s: %s\n", r.allocs[a].name, r.allocs[a].name,
              r.allocs[a].why);
  }
  int base = results_baseline(&r);
  if (base < 0) {
    fprintf(stderr, "lithe-bench: no allocator available to run\n");
    return 2;
  }
  if (base != 0)
    fprintf(stderr, "lithe-bench: baseline %s is missing; %s is the baseline instead\n",
            r.allocs[0].name, r.allocs[base].name);

  char outbuf[PATH_MAX];
  if (!out) {
    snprintf(outbuf, sizeof outbuf, "%s/bench-report", exe_dir);
    out = outbuf;
  }
  if (mkdir_p(out) != 0) {
    fprintf(stderr, "lithe-bench: cannot create %s: %s\n", out, strerror(errno));
    return 2;
  }
  r.runs = lo.runs;
  r.quick = lo.quick;
  r.started = utc_now();
  r.host = host_line();
  r.env = conditions();
  {
    size_t len = 0;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    r.command = xrealloc(NULL, len + 1);
    r.command[0] = 0;
    for (int i = 0; i < argc; i++) {
      if (i) strcat(r.command, " ");
      strcat(r.command, argv[i]);
    }
  }
  char tsv[PATH_MAX];
  snprintf(tsv, sizeof tsv, "%s/results.tsv", out);

  int torun = 0;
  for (int j = 0; j < r.njob; j++) torun += !r.jobs[j].missing;
  if (budget > 0)
    fprintf(stderr,
            "%d benchmarks (%d not built), %d to %d run(s) each within a %.0f s budget "
            "(--runs N for a fixed count), results in %s\n",
            r.njob, r.njob - torun, MIN_RUNS, lo.runs, budget, out);
  else
    fprintf(stderr, "%d benchmarks (%d not built), %d run(s) each, results in %s\n", r.njob,
            r.njob - torun, lo.runs, out);
  r.budget = budget;
  int done = 0;
  double wall_total = 0, cpu_total = 0;
  struct timespec ts0, ts1;
  run_install_signal_handlers();
  clock_gettime(CLOCK_MONOTONIC, &ts0);
  double t_start = now_seconds();
  for (int j = 0; j < r.njob; j++) {
    job *jb = &r.jobs[j];
    if (jb->missing) {
      fprintf(stderr, "[  -/%d] %-22s missing: %s\n", torun, jb->name, jb->why);
      continue;
    }
    done++;
    fprintf(stderr, "[%3d/%d] %-22s", done, torun, jb->name);
    fflush(stderr);
    double t_job = now_seconds();
    int rounds = jb->runs;
    int *timed_out = calloc((size_t)r.nalloc, sizeof *timed_out);
    double job_max_wall = 0;
    /* interleave: run 1 of A B C, run 2 of A B C, ... so drift hits all */
    for (int run = 0; run < rounds; run++) {
      /* the order rotates from round to round (A B C, B C A, C A B, ...):
       * whatever drifts with position in the round -- a warm page cache,
       * a CPU's clock, a neighbour's load -- falls on every allocator */
      for (int i = 0; i < r.nalloc; i++) {
        int a = (i + run) % r.nalloc;
        if (!r.allocs[a].available) continue;
        /* a benchmark that skips under an allocator is not retried */
        const char *why;
        if (run > 0 && results_cell_status(&r, j, a, &why) == CELL_SKIP) continue;
        /* nor one that hung: another --timeout would buy nothing */
        if (timed_out[a]) continue;
        /* without --timeout: a process may take at most SLOW_FACTOR times the
         * slowest successful run of this benchmark so far (at least
         * MIN_TIMEOUT s), so a hanging allocator costs a minute, not ten */
        int limit = timeout;
        if (!timeout_given && job_max_wall > 0) {
          double adaptive = SLOW_FACTOR * job_max_wall;
          if (adaptive < MIN_TIMEOUT) adaptive = MIN_TIMEOUT;
          if (adaptive < limit) limit = (int)ceil(adaptive);
        }
        run_outcome o = run_one(&r, j, a, run, limit);
        timed_out[a] = o.timed_out;
        if (o.status != CELL_FAIL && o.wall_s > job_max_wall) job_max_wall = o.wall_s;
        wall_total += o.wall_s;
        cpu_total += o.cpu_s;
      }
      if (run == 0 && budget > 0) {
        /* this benchmark's share of what is left of the budget */
        double round = now_seconds() - t_job;
        double left = budget - (t_job - t_start);
        int jobs_left = torun - done + 1;
        double share = left / jobs_left;
        int fit = round > 0 ? (int)(share / round) : rounds;
        int least = jb->kind == JOB_STARTUP ? MIN_RUNS * STARTUP_FACTOR : MIN_RUNS;
        if (fit < rounds) rounds = fit < least ? least : fit;
      }
    }
    free(timed_out);
    progress_summary(&r, j, rounds, now_seconds() - t_job);
    if (results_save(&r, tsv) != 0)
      fprintf(stderr, "lithe-bench: cannot write %s: %s\n", tsv, strerror(errno));
  }
  clock_gettime(CLOCK_MONOTONIC, &ts1);
  r.load_end = load_avg();
  if (results_save(&r, tsv) != 0)
    fprintf(stderr, "lithe-bench: cannot write %s: %s\n", tsv, strerror(errno));
  fprintf(stderr,
          "time: %.0f s in all, %.0f s inside benchmark processes, whose CPU time (user + "
          "system) was %.0f s\n",
          (double)(ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) / 1e9, wall_total,
          cpu_total);
  if (report_write(&r, out, 1) != 0) return 1;
  fprintf(stderr, "report: %s/report.md\n", out);
  return do_check ? check(&r, out) : 0;
}
