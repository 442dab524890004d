/* SPDX-License-Identifier: MIT */
/* table: the two text outputs.
 *
 * 1. The MallocBench comparison table (docs/runner.md): sections Execution
 *    Time / Peak Memory / Memory at End, one row per MallocBench-style
 *    benchmark (bench-mallocbench and trace replays), the baseline column
 *    and each other allocator with a comparison cell, then geometric,
 *    arithmetic and harmonic mean rows.
 * 2. benchstat rows, baseline vs each other allocator, for
 *    every metric of every benchmark.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "runner.h"
#include "stats.h"

/* values used for centre and test: IQR-kept values (mean mode) or all
 * values (median mode); returns count, fills out (size >= n) */
static int used_values(const results *r, const series *s, int a, double *out) {
  int n = s->n[a];
  if (n == 0) return 0;
  if (r->median) {
    memcpy(out, s->v[a], sizeof(double) * (size_t)n);
    return n;
  }
  int k = stats_reject_outliers(s->v[a], n, out);
  /* Fences of width 0 (the middle half of the runs all equal, as memory
   * figures often are, to the page) make every other value an "outlier";
   * rejecting them would leave the test only the mode, and an A/A run of
   * glibc showed what follows: 168,168,164,168,168 kB against
   * 164,164,164,164,168 kB became 4 x 168 against 4 x 164, p = 0.029, a
   * one-page difference called significant. Then the test gets every run. */
  if (k < n && k > 0 && out[0] == out[k - 1]) {
    memcpy(out, s->v[a], sizeof(double) * (size_t)n);
    return n;
  }
  return k;
}

double series_center(const results *r, const series *s, int alloc, int *n) {
  *n = 0;
  if (s->n[alloc] == 0) return 0;
  stats_summary sm = r->median ? stats_summarize_median(s->v[alloc], s->n[alloc], 0.95)
                               : stats_summarize_mean(s->v[alloc], s->n[alloc], NULL);
  *n = sm.n;
  return sm.center;
}

/* Test baseline vs allocator b for one series. Returns 1 and fills *t
 * when both sides have at least 2 values (a test makes sense). */
static int series_test(const results *r, const series *s, int base, int b, stats_utest *t,
                       int *na, int *nb) {
  *na = *nb = 0;
  if (s->n[base] < 1 || s->n[b] < 1) return 0;
  double *x = malloc(sizeof(double) * (size_t)s->n[base]);
  double *y = malloc(sizeof(double) * (size_t)s->n[b]);
  *na = used_values(r, s, base, x);
  *nb = used_values(r, s, b, y);
  *t = stats_mann_whitney(x, *na, y, *nb);
  free(x);
  free(y);
  return *na >= 2 && *nb >= 2;
}

/* display width of a UTF-8 string (µ, ±, ∞, Δ count as one) */
static int uwidth(const char *s) {
  int w = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xC0) != 0x80) w++;
  return w;
}

static void pad_right(FILE *f, const char *s, int w) {
  fputs(s, f);
  for (int i = uwidth(s); i < w; i++) fputc(' ', f);
}

static void pad_left(FILE *f, const char *s, int w) {
  for (int i = uwidth(s); i < w; i++) fputc(' ', f);
  fputs(s, f);
}

/* ---- 1. MallocBench table --------------------------------------------- */

typedef struct {
  char *name;
  char **val; /* per allocator */
  char **cmp; /* per allocator (empty for the baseline) */
} mrow;

static int in_mallocbench_table(const job *j) {
  return j->kind == JOB_MALLOCBENCH || j->kind == JOB_REPLAY;
}

/* the rows of one table: synthetic and replays, or real applications */
static int in_table(const job *j, int apps) {
  return apps ? j->kind == JOB_APP : in_mallocbench_table(j);
}

int table_has_apps(const results *r) {
  for (int j = 0; j < r->njob; j++)
    if (r->jobs[j].kind == JOB_APP) return 1;
  return 0;
}

static void fmt_value(char *b, size_t n, double v, int is_time) {
  char t[64];
  if (is_time) {
    fmt_thousands(t, sizeof t, v / 1e6, 1);
    snprintf(b, n, "%sms", t);
  } else {
    fmt_thousands(t, sizeof t, v, 0);
    snprintf(b, n, "%skB", t);
  }
}

/* "^ 1.03x faster" (mark 1: a test found it significant), "~ 1.03x
 * faster" (mark 0: tested, not significant) or "1.03x faster" (mark -1: no
 * test was possible, so no marker) */
static void compare_cell(char *b, size_t n, double a, double v, int is_time, int mark) {
  b[0] = 0;
  if (a <= 0 || v <= 0 || a == v) return;
  const char *better = is_time ? "faster" : "smaller", *worse = is_time ? "slower" : "bigger";
  const char *m = mark < 0 ? "" : mark == 0 ? "~ " : v < a ? "^ " : "! ";
  if (v < a) snprintf(b, n, "%s%.2fx %s", m, a / v, better);
  else snprintf(b, n, "%s%.2fx %s", m, v / a, worse);
}

/* The value of (job, unit) of allocator a in round `run`; 0 when none. */
static double round_value(const results *r, int j, const char *unit, int a, int run) {
  for (size_t i = 0; i < r->nsample; i++) {
    const sample *x = &r->samples[i];
    if (x->job == j && x->alloc == a && x->run == run && !strcmp(x->unit, unit)) return x->value;
  }
  return 0;
}

/* Paired rounds of the mean rows: for every round k that all benchmarks in
 * jobs[0..nj-1] ran under both allocators, the geometric mean over them of
 * value(b, k) / value(base, k). Returns the number of such rounds (counted
 * from round 0 up to the first one some benchmark lacks) with min and max. */
static int round_ratio_range(const results *r, const int *jobs, int nj, const char *unit,
                             int base, int b, double *lo, double *hi) {
  int k;
  for (k = 0;; k++) {
    double logsum = 0;
    int m = 0;
    for (int i = 0; i < nj; i++) {
      double x = round_value(r, jobs[i], unit, base, k), y = round_value(r, jobs[i], unit, b, k);
      if (x <= 0 || y <= 0) break;
      logsum += log(y / x);
      m++;
    }
    if (m < nj || nj == 0) break;
    double g = exp(logsum / nj);
    if (k == 0 || g < *lo) *lo = g;
    if (k == 0 || g > *hi) *hi = g;
  }
  return k;
}

static void print_rows(FILE *f, const results *r, mrow *rows, int nrows, int namew) {
  int na = r->nalloc;
  int *vw = calloc((size_t)na, sizeof *vw), *cw = calloc((size_t)na, sizeof *cw);
  for (int a = 0; a < na; a++) {
    vw[a] = uwidth(r->allocs[a].name);
    for (int i = 0; i < nrows; i++) {
      if (!rows[i].val) continue;
      int l = uwidth(rows[i].val[a]), m = uwidth(rows[i].cmp[a]);
      if (l > vw[a]) vw[a] = l;
      if (m > cw[a]) cw[a] = m;
    }
  }
  for (int i = 0; i < nrows; i++) {
    if (!rows[i].val) { /* section title or blank */
      fprintf(f, "%s\n", rows[i].name ? rows[i].name : "");
      continue;
    }
    fprintf(f, "    %-*s", namew - 4, rows[i].name);
    for (int a = 0; a < na; a++) {
      if (!r->allocs[a].available) continue;
      fputs("  ", f);
      pad_left(f, rows[i].val[a], vw[a]);
      if (cw[a]) {
        fputs("  ", f);
        pad_right(f, rows[i].cmp[a], cw[a]);
      }
    }
    fputc('\n', f);
  }
  free(vw);
  free(cw);
}

void table_mallocbench(FILE *f, const results *r, const series *s, int ns, int apps) {
  int base = results_baseline(r), na = r->nalloc;
  if (base < 0) return;
  static const char *units[] = {"ns/op", "peak-kB", "end-kB", "unassisted-end-kB"};
  static const char *titles[] = {
      "Execution Time:", "Peak Memory:",
      "Memory at End (after each allocator's own forcing release; calls listed below):",
      "Memory at End, unassisted (no release call for anyone, after a pause longer than lithe's "
      "purge delay):"};
  int namew = (int)strlen("<arithmetic mean>");
  for (int j = 0; j < r->njob; j++)
    if (in_table(&r->jobs[j], apps) && (int)strlen(r->jobs[j].name) > namew)
      namew = (int)strlen(r->jobs[j].name);
  namew += 4;

  /* header */
  mrow *rows = NULL;
  int nrows = 0, any = 0;
  for (int u = 0; u < 4; u++) {
    int is_time = u == 0;
    int first = nrows;
    rows = realloc(rows, sizeof *rows * (size_t)(nrows + 1));
    rows[nrows++] = (mrow){xstrdup(titles[u]), NULL, NULL};
    /* per-row centres for the means (0 = no value) */
    double **cent = calloc((size_t)na, sizeof *cent);
    for (int a = 0; a < na; a++) cent[a] = calloc((size_t)r->njob + 1, sizeof(double));
    int nbench = 0;
    int *benchjob = calloc((size_t)r->njob + 1, sizeof *benchjob);
    for (int j = 0; j < r->njob; j++) {
      if (!in_table(&r->jobs[j], apps) || r->jobs[j].missing) continue;
      const series *sj = NULL;
      for (int k = 0; k < ns; k++)
        if (s[k].job == j && !strcmp(s[k].unit, units[u])) {
          sj = &s[k];
          break;
        }
      /* the unassisted figure is taken in some rows only (--unassisted):
       * that section lists the rows that have it */
      if (u == 3 && !sj) continue;
      benchjob[nbench] = j;
      nbench++;
      mrow row = {xstrdup(r->jobs[j].name), calloc((size_t)na, sizeof(char *)),
                  calloc((size_t)na, sizeof(char *))};
      double bc = 0;
      double *rowc = calloc((size_t)na, sizeof *rowc);
      for (int a = 0; a < na; a++) {
        char v[128] = "", c[128] = "";
        const char *why = NULL;
        int st = results_cell_status(r, j, a, &why);
        int n = 0;
        double cv = sj ? series_center(r, sj, a, &n) : 0;
        if (!r->allocs[a].available) {
        } else if (st == CELL_FAIL) {
          snprintf(v, sizeof v, "FAIL");
        } else if (st == CELL_SKIP) {
          snprintf(v, sizeof v, "skipped");
        } else if (n == 0) {
          snprintf(v, sizeof v, "-");
        } else {
          fmt_value(v, sizeof v, cv, is_time);
          rowc[a] = cv;
          any = 1;
        }
        if (a == base) bc = (st == CELL_OK && n) ? cv : 0;
        else if (r->allocs[a].available && st == CELL_OK && n && bc > 0) {
          stats_utest t;
          int nx, ny;
          if (series_test(r, sj, base, a, &t, &nx, &ny)) {
            int sig = t.ok && t.p < STATS_ALPHA;
            char cc[96];
            compare_cell(cc, sizeof cc, bc, cv, is_time, sig);
            if (t.ok)
              snprintf(c, sizeof c, "%s%s(p=%s n=%d+%d)", cc, cc[0] ? " " : "~ ", fmt_p(t.p),
                       nx, ny);
            else snprintf(c, sizeof c, "%s%s(%s)", cc, cc[0] ? " " : "~ ", t.why);
          } else {
            /* one run on a side: no test, so no marker; say so */
            char cc[96];
            compare_cell(cc, sizeof cc, bc, cv, is_time, -1);
            snprintf(c, sizeof c, "%s%s(n=%d+%d, no test)", cc, cc[0] ? " " : "", nx, ny);
          }
        }
        row.val[a] = xstrdup(v);
        row.cmp[a] = xstrdup(c);
      }
      for (int a = 0; a < na; a++) cent[a][nbench - 1] = rowc[a] > 0 ? rowc[a] : 0;
      free(rowc);
      rows = realloc(rows, sizeof *rows * (size_t)(nrows + 1));
      rows[nrows++] = row;
    }
    if (nrows - first == 1) { /* no benchmarks in this section */
      nrows = first;
    } else {
      rows = realloc(rows, sizeof *rows * (size_t)(nrows + 6));
      rows[nrows++] = (mrow){NULL, NULL, NULL};
      static const char *mn[] = {"<geometric mean>", "<arithmetic mean>", "<harmonic mean>"};
      /* The baseline's mean is over every benchmark it has a value for;
       * each other column's mean, and its comparison, over the benchmarks
       * it shares with the baseline (so one allocator that FAILs a lot
       * does not shrink everybody's set, and each ratio compares like
       * with like). */
      double *x = calloc((size_t)nbench + 1, sizeof *x), *y = calloc((size_t)nbench + 1, sizeof *y);
      int *shj = calloc((size_t)nbench + 1, sizeof *shj);
      int *shared = calloc((size_t)na, sizeof *shared), differ = 0;
      for (int m = 0; m < 3; m++) {
        mrow row = {xstrdup(mn[m]), calloc((size_t)na, sizeof(char *)),
                    calloc((size_t)na, sizeof(char *))};
        for (int a = 0; a < na; a++) {
          char v[128] = "", c[128] = "";
          int k = 0;
          for (int i = 0; i < nbench; i++)
            if (cent[base][i] > 0 && (a == base || cent[a][i] > 0)) {
              x[k] = cent[base][i];
              y[k] = cent[a][i];
              shj[k] = benchjob[i];
              k++;
            }
          shared[a] = k;
          if (r->allocs[a].available && k > 0) {
            double my = m == 0 ? stats_geomean(y, k, NULL)
                        : m == 1 ? stats_arithmean(y, k, NULL) : stats_harmmean(y, k, NULL);
            double mx = m == 0 ? stats_geomean(x, k, NULL)
                        : m == 1 ? stats_arithmean(x, k, NULL) : stats_harmmean(x, k, NULL);
            fmt_value(v, sizeof v, my, is_time);
            if (a != base) {
              /* The geometric mean row carries the spread over paired
               * rounds (each round's geometric mean of the per-benchmark
               * ratios, min-max); a marker only when two or more rounds
               * all fall on one side of 1.00. The other two means carry
               * no marker: no test is made on them. */
              double lo = 0, hi = 0;
              int nr = m == 0 ? round_ratio_range(r, shj, k, units[u], base, a, &lo, &hi) : 0;
              char cc[96];
              if (m == 0 && nr >= 2) {
                /* all R rounds on one side of 1.00 is a sign test with
                 * p = 2^(1-R) when nothing differs: below 0.05 only from
                 * 6 rounds on (an A/A run of 13 rows had all 5 rounds'
                 * end-memory ratios at 1.003-1.031, one page on ~100 kB
                 * rows: a 1-in-16 chance, not a difference) */
                int mark = (lo > 1 || hi < 1) && nr >= 6 ? 1 : 0;
                compare_cell(cc, sizeof cc, mx, my, is_time, mark);
                snprintf(c, sizeof c, "%s (ratio per round %.2f-%.2f, %d rounds)", cc[0] ? cc : "~",
                         lo, hi, nr);
              } else if (m == 0) {
                compare_cell(cc, sizeof cc, mx, my, is_time, -1);
                snprintf(c, sizeof c, "%s%s(%d paired round%s: no range)", cc, cc[0] ? " " : "",
                         nr, nr == 1 ? "" : "s");
              } else {
                compare_cell(c, sizeof c, mx, my, is_time, -1);
              }
            }
          } else if (r->allocs[a].available) {
            snprintf(v, sizeof v, "-");
          }
          row.val[a] = xstrdup(v);
          row.cmp[a] = xstrdup(c);
        }
        rows[nrows++] = row;
      }
      for (int a = 0; a < na; a++)
        if (r->allocs[a].available && shared[a] != nbench) differ = 1;
      if (differ) {
        char buf[1024];
        int off = snprintf(buf, sizeof buf, "    (means: %s over %d of %d benchmarks",
                           r->allocs[base].name, shared[base], nbench);
        int others = 0;
        for (int a = 0; a < na; a++) {
          if (a == base || !r->allocs[a].available) continue;
          if (off < (int)sizeof buf)
            off += snprintf(buf + off, sizeof buf - (size_t)off, "%s%s %d", others ? ", " : "; shared with it: ",
                            r->allocs[a].name, shared[a]);
          others++;
        }
        if (off < (int)sizeof buf)
          snprintf(buf + off, sizeof buf - (size_t)off, "%s)",
                   others ? "; each ratio is taken over the shared ones" : "");
        rows[nrows++] = (mrow){xstrdup(buf), NULL, NULL};
      }
      free(x);
      free(y);
      free(shj);
      free(shared);
      rows[nrows++] = (mrow){NULL, NULL, NULL};
    }
    for (int a = 0; a < na; a++) free(cent[a]);
    free(cent);
    free(benchjob);
  }
  if (nrows == 0) {
    fprintf(f, apps ? "(no real application ran)\n" : "(no MallocBench-style benchmark ran)\n");
    free(rows);
    return;
  }
  (void)any;
  /* header line: build names over their value columns */
  mrow head = {xstrdup(""), calloc((size_t)na, sizeof(char *)), calloc((size_t)na, sizeof(char *))};
  for (int a = 0; a < na; a++) {
    head.val[a] = xstrdup(r->allocs[a].name);
    head.cmp[a] = xstrdup(a == base || !r->allocs[a].available ? "" : "Δ");
  }
  mrow *all = malloc(sizeof *all * (size_t)(nrows + 1));
  all[0] = head;
  memcpy(all + 1, rows, sizeof *rows * (size_t)nrows);
  print_rows(f, r, all, nrows + 1, namew);
  for (int i = 0; i < nrows + 1; i++) {
    free(all[i].name);
    if (all[i].val) {
      for (int a = 0; a < na; a++) {
        free(all[i].val[a]);
        free(all[i].cmp[a]);
      }
      free(all[i].val);
      free(all[i].cmp);
    }
  }
  free(all);
  free(rows);
}

/* ---- 2. benchstat ----------------------------------------------------- */

static char *cell_text(const results *r, const series *s, int a, double ref, int *ok) {
  *ok = 0;
  const char *why = NULL;
  int st = results_cell_status(r, s->job, a, &why);
  if (st == CELL_FAIL) return xstrdup("FAIL");
  if (st == CELL_SKIP) return xstrdup("skipped");
  if (s->n[a] == 0) return xstrdup("-");
  stats_summary sm = r->median ? stats_summarize_median(s->v[a], s->n[a], 0.95)
                               : stats_summarize_mean(s->v[a], s->n[a], NULL);
  char v[64];
  fmt_scaled(v, sizeof v, sm.center, ref, s->unit);
  double sp = stats_spread_pct(&sm);
  *ok = 1;
  if (sp < 0 || sm.n < 2) return xstrdup(v); /* one value: no spread to show */
  if (isinf(sp)) return xasprintf("%s ± ∞", v);
  return xasprintf("%s ± %.0f%%", v, sp);
}

void table_benchstat(FILE *f, const results *r, const series *s, int ns) {
  int base = results_baseline(r);
  if (base < 0) return;
  int others = 0;
  for (int b = 0; b < r->nalloc; b++) {
    if (b == base || !r->allocs[b].available) continue;
    others++;
    fprintf(f, "%s vs %s:\n\n", r->allocs[base].name, r->allocs[b].name);
    /* one table per unit, units in order of first appearance */
    char **done = NULL;
    int ndone = 0;
    for (int k = 0; k < ns; k++) {
      int seen = 0;
      for (int d = 0; d < ndone; d++) seen |= !strcmp(done[d], s[k].unit);
      if (seen) continue;
      done = realloc(done, sizeof *done * (size_t)(ndone + 1));
      done[ndone++] = s[k].unit;
      const char *unit = s[k].unit;
      /* collect rows */
      int cap = ns + 1, nr = 0;
      char **c0 = calloc((size_t)cap, sizeof *c0), **c1 = calloc((size_t)cap, sizeof *c1),
           **c2 = calloc((size_t)cap, sizeof *c2), **c3 = calloc((size_t)cap, sizeof *c3),
           **c4 = calloc((size_t)cap, sizeof *c4);
      double *ga = calloc((size_t)cap, sizeof *ga), *gb = calloc((size_t)cap, sizeof *gb);
      int ng = 0;
      for (int m = k; m < ns; m++) {
        if (strcmp(s[m].unit, unit)) continue;
        const series *x = &s[m];
        int na, nb, oka, okb;
        double ca = series_center(r, x, base, &na), cb = series_center(r, x, b, &nb);
        double ref = (na && ca != 0) ? ca : cb;
        c0[nr] = xstrdup(x->metric);
        c1[nr] = cell_text(r, x, base, ref, &oka);
        c2[nr] = cell_text(r, x, b, ref, &okb);
        stats_utest t = {0};
        int nx = 0, ny = 0;
        if (oka && okb) {
          int tested = series_test(r, x, base, b, &t, &nx, &ny);
          if (!tested) {
            c3[nr] = xstrdup("");
            c4[nr] = xasprintf("(n=%d+%d, no test)", nx, ny);
            goto row_done;
          }
          if (t.ok && t.p < STATS_ALPHA) {
            if (ca == cb) c3[nr] = xstrdup("0.00%");
            else c3[nr] = xasprintf("%+.2f%%", (cb / ca - 1) * 100);
          } else {
            c3[nr] = xstrdup("~");
          }
          if (!t.ok) c4[nr] = xasprintf("(%s)", t.why);
          else if (r->median && nx == ny) c4[nr] = xasprintf("(p=%s n=%d)", fmt_p(t.p), nx);
          else c4[nr] = xasprintf("(p=%s n=%d+%d)", fmt_p(t.p), nx, ny);
        row_done:
          if (ca > 0 && cb > 0) {
            ga[ng] = ca;
            gb[ng] = cb;
            ng++;
          }
        } else {
          c3[nr] = xstrdup("");
          c4[nr] = xstrdup("");
        }
        nr++;
      }
      if (ng > 1) {
        double a = stats_geomean(ga, ng, NULL), bb = stats_geomean(gb, ng, NULL);
        c0[nr] = xstrdup("[Geomean]");
        char v[64];
        c1[nr] = xstrdup(fmt_scaled(v, sizeof v, a, a, unit));
        c2[nr] = xstrdup(fmt_scaled(v, sizeof v, bb, a, unit));
        c3[nr] = xasprintf("%+.2f%%", (bb / a - 1) * 100);
        c4[nr] = xstrdup("");
        nr++;
      }
      char h1[160], h2[160];
      snprintf(h1, sizeof h1, "%s %s", r->allocs[base].name, fmt_unit_title(unit));
      snprintf(h2, sizeof h2, "%s %s", r->allocs[b].name, fmt_unit_title(unit));
      int w0 = 4, w1 = uwidth(h1), w2 = uwidth(h2), w3 = 5;
      for (int i = 0; i < nr; i++) {
        if (uwidth(c0[i]) > w0) w0 = uwidth(c0[i]);
        if (uwidth(c1[i]) > w1) w1 = uwidth(c1[i]);
        if (uwidth(c2[i]) > w2) w2 = uwidth(c2[i]);
        if (uwidth(c3[i]) > w3) w3 = uwidth(c3[i]);
      }
      pad_right(f, "name", w0 + 2);
      pad_left(f, h1, w1);
      fputs("  ", f);
      pad_left(f, h2, w2);
      fputs("  ", f);
      pad_left(f, "delta", w3);
      fputc('\n', f);
      for (int i = 0; i < nr; i++) {
        pad_right(f, c0[i], w0 + 2);
        pad_left(f, c1[i], w1);
        fputs("  ", f);
        pad_left(f, c2[i], w2);
        fputs("  ", f);
        pad_left(f, c3[i], w3);
        if (c4[i][0]) fprintf(f, "  %s", c4[i]);
        fputc('\n', f);
        free(c0[i]);
        free(c1[i]);
        free(c2[i]);
        free(c3[i]);
        free(c4[i]);
      }
      fputc('\n', f);
      free(c0);
      free(c1);
      free(c2);
      free(c3);
      free(c4);
      free(ga);
      free(gb);
    }
    free(done);
  }
  if (!others) {
    /* a single allocator: still show every metric with its spread */
    fprintf(f, "%s (only allocator):\n\n", r->allocs[base].name);
    for (int k = 0; k < ns; k++) {
      int ok;
      int n;
      double c = series_center(r, &s[k], base, &n);
      char *t = cell_text(r, &s[k], base, c, &ok);
      fprintf(f, "%-32s %-10s %s  (n=%d)\n", s[k].metric, s[k].unit, t, n);
      free(t);
    }
    fputc('\n', f);
  }
}

/* ---- 3. at a glance ------------------------------------------------------ */

void table_glance(FILE *f, const results *r, const series *s, int ns, int apps) {
  int base = results_baseline(r);
  if (base < 0) return;
  static const char *units[] = {"ns/op", "peak-kB", "end-kB"};
  static const char *heads[] = {"time", "peak memory", "memory at end"};
  int others = 0;
  for (int a = 0; a < r->nalloc; a++) others += a != base && r->allocs[a].available;
  if (!others) return;
  fprintf(f, "| vs %s | %s | %s | %s | FAIL |\n|---|---|---|---|---|\n", r->allocs[base].name,
          heads[0], heads[1], heads[2]);
  for (int a = 0; a < r->nalloc; a++) {
    if (a == base || !r->allocs[a].available) continue;
    fprintf(f, "| %s |", r->allocs[a].name);
    for (int u = 0; u < 3; u++) {
      int better = 0, worse = 0, sbetter = 0, sworse = 0, tested = 0;
      for (int k = 0; k < ns; k++) {
        const job *jb = &r->jobs[s[k].job];
        if (!in_table(jb, apps) || strcmp(s[k].unit, units[u])) continue;
        if (results_cell_status(r, s[k].job, a, NULL) != CELL_OK ||
            results_cell_status(r, s[k].job, base, NULL) != CELL_OK)
          continue;
        int na, nb;
        double cb = series_center(r, &s[k], base, &na), ca = series_center(r, &s[k], a, &nb);
        if (!na || !nb || ca == cb) continue;
        stats_utest t;
        int nx, ny, sig = 0;
        if (series_test(r, &s[k], base, a, &t, &nx, &ny)) {
          tested++;
          sig = t.ok && t.p < STATS_ALPHA;
        }
        if (ca < cb) {
          better++;
          sbetter += sig;
        } else {
          worse++;
          sworse += sig;
        }
      }
      fprintf(f, " better in %d, worse in %d", better, worse);
      if (tested)
        fprintf(f, " (significant: %d better, %d worse, of %d tested)", sbetter, sworse, tested);
      fputs(" |", f);
    }
    int fails = 0;
    for (int j = 0; j < r->njob; j++)
      fails += (r->jobs[j].kind == JOB_APP) == (apps != 0) &&
               results_cell_status(r, j, a, NULL) == CELL_FAIL;
    fprintf(f, " %d |\n", fails);
  }
  fputc('\n', f);
}

/* ---- 4. A/A: the noise floor --------------------------------------------- */

/* The smallest factor f >= 1 by which y would have to be scaled (up or
 * down) for the Mann-Whitney test against x to call it significant: the
 * ranks change only where some y_j * f crosses some x_i, so it is enough
 * to try just past every such crossing. INFINITY when no factor can (too
 * few runs: 3+3 never reach p < 0.05). */
static double min_significant_factor(const double *x, int nx, const double *y, int ny) {
  double best = INFINITY;
  double *ys = malloc(sizeof(double) * (size_t)ny);
  for (int dir = 0; dir < 2; dir++)
    for (int i = 0; i < nx; i++)
      for (int j = 0; j < ny; j++) {
        if (x[i] <= 0 || y[j] <= 0) continue;
        double f = dir == 0 ? x[i] / y[j] : y[j] / x[i];
        if (f < 1) f = 1;
        f *= 1 + 1e-9;
        if (f >= best) continue;
        for (int k = 0; k < ny; k++) ys[k] = dir == 0 ? y[k] * f : y[k] / f;
        stats_utest t = stats_mann_whitney(x, nx, ys, ny);
        if (t.ok && t.p < STATS_ALPHA) best = f;
      }
  free(ys);
  return best;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void table_aa(FILE *f, const results *r, const series *s, int ns) {
  static const char *units[] = {"ns/op", "peak-kB", "end-kB", "unassisted-end-kB"};
  static const char *heads[] = {"time", "peak memory", "memory at end (forced)",
                                "memory at end (unassisted)"};
  for (int b = 0; b < r->nalloc; b++) {
    const allocator *tw = &r->allocs[b];
    if (!tw->twin || !tw->available) continue;
    int a = -1;
    for (int k = 0; k < r->nalloc; k++)
      if (k != b && !strcmp(r->allocs[k].name, tw->twin)) a = k;
    if (a < 0 || !r->allocs[a].available) continue;
    fprintf(f, "%s against %s (the same library, run as two allocators):\n\n", tw->name,
            r->allocs[a].name);
    fprintf(f, "| metric | rows | significant rows | geometric mean ratio (rounds min-max) | "
               "noise floor: median (max) of the rows | rows where no ratio could be "
               "significant |\n|---|---|---|---|---|---|\n");
    for (int u = 0; u < 4; u++) {
      int rows = 0, sig = 0, never = 0, nfl = 0, nj = 0;
      double *floors = calloc((size_t)ns + 1, sizeof *floors);
      int *jobs = calloc((size_t)r->njob + 1, sizeof *jobs);
      double *ga = calloc((size_t)ns + 1, sizeof *ga), *gb = calloc((size_t)ns + 1, sizeof *gb);
      for (int k = 0; k < ns; k++) {
        if (!in_mallocbench_table(&r->jobs[s[k].job]) || strcmp(s[k].unit, units[u])) continue;
        if (results_cell_status(r, s[k].job, a, NULL) != CELL_OK ||
            results_cell_status(r, s[k].job, b, NULL) != CELL_OK)
          continue;
        int na, nb;
        double ca = series_center(r, &s[k], a, &na), cb = series_center(r, &s[k], b, &nb);
        if (!na || !nb) continue;
        rows++;
        if (ca > 0 && cb > 0) {
          ga[nj] = ca;
          gb[nj] = cb;
          jobs[nj++] = s[k].job;
        }
        stats_utest t;
        int nx, ny;
        if (series_test(r, &s[k], a, b, &t, &nx, &ny) && t.ok && t.p < STATS_ALPHA) sig++;
        double *x = malloc(sizeof(double) * (size_t)s[k].n[a]);
        double *y = malloc(sizeof(double) * (size_t)s[k].n[b]);
        nx = used_values(r, &s[k], a, x);
        ny = used_values(r, &s[k], b, y);
        double fl = min_significant_factor(x, nx, y, ny);
        free(x);
        free(y);
        if (isinf(fl)) never++;
        else floors[nfl++] = fl;
      }
      if (rows) {
        char g[128] = "-", fl[96] = "-";
        if (nj) {
          double m = stats_geomean(gb, nj, NULL) / stats_geomean(ga, nj, NULL), lo = 0, hi = 0;
          int nr = round_ratio_range(r, jobs, nj, units[u], a, b, &lo, &hi);
          if (nr >= 2)
            snprintf(g, sizeof g, "%.3f (%.3f-%.3f over %d rounds%s)", m, lo, hi, nr,
                     lo <= 1 && hi >= 1 ? ", straddles 1.00" : ", does NOT straddle 1.00");
          else snprintf(g, sizeof g, "%.3f (%d paired round%s: no range)", m, nr, nr == 1 ? "" : "s");
        }
        if (nfl) {
          qsort(floors, (size_t)nfl, sizeof *floors, cmp_double);
          double med = nfl % 2 ? floors[nfl / 2] : (floors[nfl / 2 - 1] + floors[nfl / 2]) / 2;
          snprintf(fl, sizeof fl, "%.3fx (%.3fx)", med, floors[nfl - 1]);
        }
        fprintf(f, "| %s | %d | %d | %s | %s | %d |\n", heads[u], rows, sig, g, fl, never);
      }
      free(floors);
      free(jobs);
      free(ga);
      free(gb);
    }
    fputc('\n', f);
  }
}
