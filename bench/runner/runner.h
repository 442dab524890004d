/* SPDX-License-Identifier: MIT */
/* runner: the data every part of lithe-bench shares.
 *
 *   allocator  one column of the comparison (glibc = no LD_PRELOAD)
 *   job        one benchmark entry of the run list (one program + argv)
 *   sample     one number read from one `Benchmark...` line
 *   event      a FAIL, a skip or a note (# scavenge / # note) of a run
 *
 * results.c owns the store (add, save to results.tsv, load back);
 * run.c spawns one measurement; table.c, svg.c and report.c read the store.
 */
#ifndef LITHE_RUNNER_H
#define LITHE_RUNNER_H

#include <stddef.h>
#include <stdio.h>

#define MAX_ARGS 24
#define MIN_RUNS 3 /* the budget mode's least rounds per benchmark (main.c) */

typedef struct {
  char *name;      /* column name, e.g. "jemalloc" */
  char *path;      /* library for LD_PRELOAD; NULL = glibc (nothing preloaded) */
  int available;   /* 0 = missing: reported, never run */
  char *why;       /* when missing: "not installed — apt-get install libjemalloc2" */
  char *origin;    /* where malloc resolved in its processes ("# malloc:" lines) */
  char *release;   /* its forcing release call before end-kB ("# scavenge:" lines) */
  char *package;   /* Debian package and version of the library, if it has one */
  char *twin;      /* --aa: the allocator this one repeats (same library) */
} allocator;

typedef enum {
  JOB_MALLOCBENCH, /* bench-mallocbench: time, peak, end, faults */
  JOB_STARTUP,     /* bench-startup: one sample per process */
  JOB_SCALING,     /* bench-scaling: ns/op per thread count */
  JOB_COMMIT,      /* bench-commit */
  JOB_FASTPATH,    /* bench-fastpath */
  JOB_REPLAY,      /* lithe-replay TRACE */
  JOB_APP,         /* bench-app --app NAME: a real application (own table, own means) */
} job_kind;

typedef struct {
  char *name;           /* selection name: churn, churn_parallel, startup, replay_x */
  job_kind kind;
  char *program;        /* full path of the program */
  char *argv[MAX_ARGS]; /* argv[0] = program, NULL-terminated */
  int runs;             /* processes per allocator */
  int missing;          /* program not built: reported, not run */
  int pause;            /* first round: the unassisted-memory pause (--unassisted) */
  char *why;
} job;

typedef struct {
  int job, alloc, run;
  char *metric; /* Benchmark name without the prefix, with any -P suffix */
  char *unit;
  double value;
} sample;

typedef enum { EV_FAIL, EV_SKIP, EV_NOTE, EV_RSS } event_kind; /* EV_RSS: "T:KB ..." */

typedef struct {
  int job, alloc, run;
  event_kind kind;
  char *text;
} event;

typedef struct {
  allocator *allocs;
  int nalloc;
  job *jobs;
  int njob;
  sample *samples;
  size_t nsample, capsample;
  event *events;
  size_t nevent, capevent;
  int runs, quick, median;
  double budget;   /* >0: runs were limited by this time budget (s) */
  char *command;   /* the command line, for the report */
  char *started;   /* UTC time stamp */
  char *host;      /* machine summary line */
  char *env;       /* conditions: commit, THP, load, allocator variables (report lines) */
  char *load_end;  /* load average when the run ended */
} results;

/* results.c ------------------------------------------------------------- */
void results_add_sample(results *r, int job, int alloc, int run, const char *metric,
                        const char *unit, double value);
void results_add_event(results *r, int job, int alloc, int run, event_kind k, const char *text);
int results_save(const results *r, const char *path);
int results_load(results *r, const char *path); /* 0 ok; fills allocs, jobs, data */
int results_baseline(const results *r);         /* first available allocator, -1 none */
/* status of (job, alloc): 0 = has samples, EV_FAIL/EV_SKIP+1, or -1 = nothing */
enum { CELL_OK = 0, CELL_FAIL = 1, CELL_SKIP = 2, CELL_NONE = 3 };
int results_cell_status(const results *r, int job, int alloc, const char **why);

/* A metric series: all samples of one (job, metric, unit), per allocator. */
typedef struct {
  int job;
  char *metric, *unit;
  double **v; /* v[alloc][0..n[alloc]-1] */
  int *n;
} series;
/* All series, in job order then order of first appearance. Free with
 * results_free_series. */
series *results_series(const results *r, int *count);
void results_free_series(series *s, int count, int nalloc);

/* "fixed_block_scaling-4" -> base "fixed_block_scaling", P = 4; no suffix
 * -> P = 1. The base is written into `base` (size n). */
int metric_threads(const char *metric, char *base, size_t n);

/* run.c ----------------------------------------------------------------- */
typedef struct {
  int status;          /* CELL_OK, CELL_FAIL, CELL_SKIP */
  char why[512];       /* FAIL/skip reason */
  double wall_s;
  double cpu_s; /* user + system time of the child */
  int timed_out;
} run_outcome;

/* Run one measurement: job j under allocator a, run index `run`; parsed
 * lines go into r. timeout_s: kill the child after that long (FAIL). */
run_outcome run_one(results *r, int j, int a, int run, int timeout_s);
/* Try lib with /bin/true: -1 (and why) if the loader refuses it or the
 * process dies of a signal, 0 otherwise. */
int run_preflight(const char *lib, char *why, size_t n);
/* On SIGINT/SIGTERM/SIGHUP, kill the running benchmark process too. */
void run_install_signal_handlers(void);

/* Parse one line of program output into r (exposed for tests/reload). */
void run_parse_line(results *r, int j, int a, int run, const char *line, int *nbench,
                    int *skipped, char *skipwhy, size_t skipwhylen);

/* table.c --------------------------------------------------------------- */
/* The MallocBench comparison table (docs/runner.md, "Output" 1): the
 * synthetic rows and replays (apps = 0) or the real applications (apps =
 * 1), each with its own means. */
void table_mallocbench(FILE *f, const results *r, const series *s, int ns, int apps);
/* any real-application row in the run list */
int table_has_apps(const results *r);
/* benchstat-style rows, baseline vs each other allocator ("Output" 2). */
void table_benchstat(FILE *f, const results *r, const series *s, int ns);
/* markdown: per allocator, in how many MallocBench rows it beats the
 * baseline on time / peak / end (and how many of those are significant) */
void table_glance(FILE *f, const results *r, const series *s, int ns, int apps);
/* --aa: per metric, how many rows an A/A pair made significant, the
 * paired-round range of its geometric mean ratio and the noise floor (the
 * smallest ratio each row could have called significant); markdown */
void table_aa(FILE *f, const results *r, const series *s, int ns);
/* per-series centre in the current mode (mean of kept values / median);
 * 0 with *n = 0 when there are no values. */
double series_center(const results *r, const series *s, int alloc, int *n);

/* svg.c ----------------------------------------------------------------- */
/* Writes chart-*.svg into dir; returns how many files, their names in
 * names[] (caller frees) with a caption each. */
int svg_write_all(const results *r, const series *s, int ns, const char *dir, char **names,
                  char **captions, int max);

/* chart-rss-<job>.svg for every benchmark with "# rss:" samples: RssAnon
 * over time, one line per allocator (its first run); returns the count */
int svg_write_rss(const results *r, const char *dir, char **names, char **captions, int max);

/* report.c -------------------------------------------------------------- */
int report_write(const results *r, const char *dir, int print_tables);

/* small helpers (results.c) */
char *xstrdup(const char *s);
void *xrealloc(void *p, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
