/* SPDX-License-Identifier: MIT */
/* svg: the pictures, written by hand as text (no dependencies).
 *
 * chart-<metric>.svg   one per unit (time, peak, end, ...): for every
 *                      benchmark a group of horizontal bars, one per
 *                      allocator, showing value / baseline on a log axis
 *                      centred on 1 (the baseline). Left of the line = less
 *                      (better for time and memory), right = more. Faded
 *                      bars: the difference is not significant
 *                      (Mann-Whitney p >= 0.05, when there are >= 2 runs).
 * chart-scaling-<name>.svg  a line chart of the metric against the thread
 *                      count for every benchmark reported at several thread
 *                      counts (fixed_block_scaling): log-log, with the ideal
 *                      line baseline(1 thread) / threads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "runner.h"
#include "stats.h"

static const char *palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
#define NPAL (sizeof palette / sizeof *palette)
#define FONT "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\""

static void esc(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '&') fputs("&amp;", f);
    else if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

static const char *unit_slug(const char *unit, char *b, size_t n) {
  if (!strcmp(unit, "ns/op")) return "time";
  if (!strcmp(unit, "peak-kB")) return "peak";
  if (!strcmp(unit, "end-kB")) return "end";
  size_t k = 0;
  for (; *unit && k + 1 < n; unit++)
    b[k++] = ((*unit >= 'a' && *unit <= 'z') || (*unit >= 'A' && *unit <= 'Z') ||
              (*unit >= '0' && *unit <= '9'))
                 ? *unit
                 : '_';
  b[k] = 0;
  return b;
}

/* a base name that appears with two or more thread counts (-P suffixes) */
static int is_multi_thread(const series *s, int ns, const series *x) {
  char b1[256], b2[256];
  int p1 = metric_threads(x->metric, b1, sizeof b1);
  for (int k = 0; k < ns; k++) {
    if (s[k].job != x->job || strcmp(s[k].unit, x->unit)) continue;
    int p2 = metric_threads(s[k].metric, b2, sizeof b2);
    if (!strcmp(b1, b2) && p1 != p2) return 1;
  }
  return 0;
}

static double center(const results *r, const series *s, int a, int *n) {
  return series_center(r, s, a, n);
}

/* p value of baseline vs a (<0 when no test applies) */
static double pvalue(const results *r, const series *s, int base, int a) {
  if (s->n[base] < 2 || s->n[a] < 2) return -1;
  double *x = malloc(sizeof(double) * (size_t)s->n[base]);
  double *y = malloc(sizeof(double) * (size_t)s->n[a]);
  int nx, ny;
  if (r->median) {
    memcpy(x, s->v[base], sizeof(double) * (size_t)s->n[base]);
    memcpy(y, s->v[a], sizeof(double) * (size_t)s->n[a]);
    nx = s->n[base];
    ny = s->n[a];
  } else {
    nx = stats_reject_outliers(s->v[base], s->n[base], x);
    ny = stats_reject_outliers(s->v[a], s->n[a], y);
  }
  stats_utest t = stats_mann_whitney(x, nx, y, ny);
  free(x);
  free(y);
  if (nx < 2 || ny < 2) return -1;
  return t.ok ? t.p : 1.0;
}

static void legend(FILE *f, const results *r, int x, int y) {
  for (int a = 0; a < r->nalloc; a++) {
    if (!r->allocs[a].available) continue;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>", x, y - 10,
            palette[a % NPAL]);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", x + 16, y);
    esc(f, r->allocs[a].name);
    fputs("</text>\n", f);
    x += 30 + 7 * (int)strlen(r->allocs[a].name);
  }
}

/* ---- bar chart -------------------------------------------------------- */

/* units drawn in a chart of their own; the others go together into
 * chart-other.svg (e.g. the four figures of bench-commit) */
static int own_chart(const series *s, int ns, const char *unit) {
  if (!strcmp(unit, "ns/op") || !strcmp(unit, "peak-kB") || !strcmp(unit, "end-kB")) return 1;
  int c = 0;
  for (int k = 0; k < ns; k++)
    if (!strcmp(s[k].unit, unit) && !is_multi_thread(s, ns, &s[k])) c++;
  return c >= 3;
}

/* row label: the metric, plus the unit in the mixed chart */
static void row_label(char *b, size_t n, const series *x, int mixed) {
  if (mixed) snprintf(b, n, "%s (%s)", x->metric, x->unit);
  else snprintf(b, n, "%s", x->metric);
}

/* unit NULL: the mixed chart of every unit without a chart of its own */
static int bar_chart(const results *r, const series *s, int ns, const char *unit,
                     const char *path) {
  int mixed = unit == NULL;
  char lbl[512];
  int base = results_baseline(r);
  int navail = 0;
  for (int a = 0; a < r->nalloc; a++) navail += r->allocs[a].available;
  int hib = mixed ? 0 : fmt_higher_is_better(unit);
  /* the series shown */
  int *idx = malloc(sizeof(int) * (size_t)(ns + 1)), ni = 0;
  int labw = 0;
  double maxl = 0;
  for (int k = 0; k < ns; k++) {
    if (is_multi_thread(s, ns, &s[k])) continue;
    if (mixed ? own_chart(s, ns, s[k].unit) : strcmp(s[k].unit, unit) != 0) continue;
    idx[ni++] = k;
    row_label(lbl, sizeof lbl, &s[k], mixed);
    int l = (int)strlen(lbl);
    if (l > labw) labw = l;
    int n;
    double b = center(r, &s[k], base, &n);
    if (!n || b <= 0) continue;
    for (int a = 0; a < r->nalloc; a++) {
      if (a == base || !r->allocs[a].available) continue;
      double v = center(r, &s[k], a, &n);
      if (n && v > 0 && fabs(log2(v / b)) > maxl) maxl = fabs(log2(v / b));
    }
  }
  if (ni == 0) {
    free(idx);
    return 0;
  }
  static const double nice[] = {1.1, 1.25, 1.5, 2, 3, 4, 8};
  double ext = log2(8);
  for (int i = 0; i < 7; i++)
    if (log2(nice[i]) >= maxl) {
      ext = log2(nice[i]);
      break;
    }
  int W = 980, labx = 10, px0 = 20 + labw * 7 + 10;
  if (px0 < 140) px0 = 140;
  int px1 = W - 80, cx = (px0 + px1) / 2, half = (px1 - px0) / 2;
  int rowh = 14, gap = 10, top = 110;
  int groupsh = ni * (navail * rowh + gap);
  int H = top + groupsh + 60;
  FILE *f = fopen(path, "w");
  if (!f) {
    free(idx);
    return -1;
  }
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
          "%d\" " FONT ">\n",
          W, H, W, H);
  fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
  fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">", labx);
  {
    const char *cap = mixed ? "other figures" : fmt_unit_caption(unit);
    char t[256];
    snprintf(t, sizeof t, "%c%s by benchmark, normalised to %s = 1", cap[0] - 32 * (cap[0] >= 'a' && cap[0] <= 'z'),
             cap + 1, r->allocs[base].name);
    esc(f, t);
  }
  fputs("</text>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"44\" font-size=\"12\" fill=\"#444\">", labx);
  char sub[512];
  snprintf(sub, sizeof sub,
           "Bar = allocator / %s, log scale. %s of the line = %s. Number at bar end: the "
           "ratio (for %s: its own value).",
           r->allocs[base].name, hib ? "Right" : "Left", hib ? "better (higher)" : "better (less)",
           r->allocs[base].name);
  esc(f, sub);
  fputs("</text>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"60\" font-size=\"12\" fill=\"#444\">", labx);
  snprintf(sub, sizeof sub,
           "Faded bar: not significant (Mann-Whitney p >= 0.05) or too few runs to tell; "
           "%s%s.",
           r->quick ? "QUICK MODE - not for claims; " : "", r->median ? "centre = median" : "centre = mean of runs after Tukey outlier rejection");
  esc(f, sub);
  fputs("</text>\n", f);
  legend(f, r, labx, 84);

  /* axis ticks */
  int ybot = top + groupsh;
  int lastx = cx; /* distance of the last tick drawn from the centre line */
  for (int i = -1; i < 7; i++) {
    double fct = i < 0 ? 1.0 : nice[i];
    if (log2(fct) > ext + 1e-9) break;
    int dx = (int)lround(log2(fct) / ext * half);
    if (i >= 0 && dx - (lastx - cx) < 38) continue; /* too close to the previous tick */
    lastx = cx + dx;
    for (int sgn = (i < 0 ? 1 : -1); sgn <= 1; sgn += 2) {
      double lg = sgn * log2(fct);
      int x = cx + (int)lround(lg / ext * half);
      fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"/>\n",
              x, top - 6, x, ybot, i < 0 ? "#222" : "#ddd", i < 0 ? "1.5" : "1");
      double shown = pow(2, lg);
      char lab[32];
      if (shown >= 1) snprintf(lab, sizeof lab, "%gx", round(shown * 100) / 100);
      else snprintf(lab, sizeof lab, "%.2gx", shown);
      fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
              x, top - 10, lab);
      fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
              x, ybot + 14, lab);
    }
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#2a7\">&#8592; %s than %s (%s)</text>\n",
          px0, ybot + 32, hib ? "lower" : "less", r->allocs[base].name, hib ? "worse" : "better");
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\" fill=\"#c33\">%s than %s (%s) &#8594;</text>\n",
          px1, ybot + 32, hib ? "higher" : "more", r->allocs[base].name, hib ? "better" : "worse");

  int y = top;
  for (int g = 0; g < ni; g++) {
    const series *x = &s[idx[g]];
    int gh = navail * rowh;
    if (g % 2 == 0)
      fprintf(f, "<rect x=\"4\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f6f8\"/>\n", y - 3,
              W - 8, gh + 6);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", labx, y + gh / 2 + 4);
    row_label(lbl, sizeof lbl, x, mixed);
    esc(f, lbl);
    fputs("</text>\n", f);
    int nb;
    double b = center(r, x, base, &nb);
    int row = 0;
    for (int a = 0; a < r->nalloc; a++) {
      if (!r->allocs[a].available) continue;
      int ry = y + row * rowh;
      row++;
      const char *why = NULL;
      int st = results_cell_status(r, x->job, a, &why);
      int n;
      double v = center(r, x, a, &n);
      const char *col = palette[a % NPAL];
      char lab[64];
      if (st == CELL_FAIL || st == CELL_SKIP || !n) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"%s\">%s</text>\n", cx + 4,
                ry + 10, st == CELL_FAIL ? "#c00" : "#777",
                st == CELL_FAIL ? "FAIL" : st == CELL_SKIP ? "skipped" : "no data");
        continue;
      }
      if (a == base) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"%d\" fill=\"%s\"/>\n", cx - 1,
                ry + 1, rowh - 3, col);
        fmt_scaled(lab, sizeof lab, v, v, x->unit);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#333\">= ", cx + 6, ry + 10);
        esc(f, lab);
        fputs("</text>\n", f);
        continue;
      }
      if (!nb || b <= 0 || v <= 0) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#777\">no baseline</text>\n",
                cx + 4, ry + 10);
        continue;
      }
      double ratio = v / b, lg = log2(ratio);
      if (lg > ext) lg = ext;
      if (lg < -ext) lg = -ext;
      int xe = cx + (int)lround(lg / ext * half);
      int x0 = xe < cx ? xe : cx, w = abs(xe - cx);
      if (w < 1) w = 1;
      double p = pvalue(r, x, base, a);
      int faded = !(p >= 0 && p < STATS_ALPHA);
      if (faded)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.3\" stroke=\"%s\" stroke-width=\"1\">",
                x0, ry + 1, w, rowh - 3, col, col);
      else
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">", x0, ry + 1, w,
                rowh - 3, col);
      fprintf(f, "<title>%s %s: %.4g (%.3fx", r->allocs[a].name, x->metric, v, ratio);
      if (p >= 0) fprintf(f, ", p=%.3f", p);
      fputs(")</title></rect>\n", f);
      snprintf(lab, sizeof lab, "%.2fx", ratio);
      if (xe >= cx)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#333\">%s</text>\n", xe + 3,
                ry + 10, lab);
      else
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\" fill=\"#333\">%s</text>\n",
                xe - 3, ry + 10, lab);
    }
    y += gh + gap;
  }
  fputs("</svg>\n", f);
  fclose(f);
  free(idx);
  return 1;
}

/* ---- line chart ------------------------------------------------------- */

static int line_chart(const results *r, const series *s, int ns, int job, const char *basename,
                      const char *unit, const char *path) {
  int base = results_baseline(r);
  int P[64], np = 0;
  char b[256];
  double vmin = INFINITY, vmax = 0;
  for (int k = 0; k < ns; k++) {
    if (s[k].job != job || strcmp(s[k].unit, unit)) continue;
    int p = metric_threads(s[k].metric, b, sizeof b);
    if (strcmp(b, basename)) continue;
    int seen = 0;
    for (int i = 0; i < np; i++) seen |= P[i] == p;
    if (!seen && np < 64) P[np++] = p;
    for (int a = 0; a < r->nalloc; a++) {
      int n;
      double v = center(r, &s[k], a, &n);
      if (n && v > 0) {
        if (v < vmin) vmin = v;
        if (v > vmax) vmax = v;
      }
    }
  }
  if (np < 2 || vmax <= 0) return 0;
  for (int i = 1; i < np; i++) /* sort thread counts */
    for (int j = i; j > 0 && P[j] < P[j - 1]; j--) {
      int t = P[j];
      P[j] = P[j - 1];
      P[j - 1] = t;
    }
  /* keep the whole ideal-scaling line (baseline at P[0] * P[0] / P) in view */
  for (int k = 0; k < ns; k++) {
    if (s[k].job != job || strcmp(s[k].unit, unit)) continue;
    int p = metric_threads(s[k].metric, b, sizeof b);
    int n;
    double v = center(r, &s[k], base, &n);
    if (strcmp(b, basename) || p != P[0] || !n || v <= 0) continue;
    double ideal = v * P[0] / P[np - 1];
    if (ideal < vmin) vmin = ideal;
  }
  int W = 820, H = 500, px0 = 90, px1 = 620, py0 = 80, py1 = 430;
  double lx0 = log2(P[0]), lx1 = log2(P[np - 1]);
  /* the ideal line reaches baseline(P0) * P0 / Pmax: keep it on the chart */
  double ly0 = log10(vmin) - 0.08, ly1 = log10(vmax) + 0.08;
  if (ly1 - ly0 < 0.5) {
    double m = (ly0 + ly1) / 2;
    ly0 = m - 0.25;
    ly1 = m + 0.25;
  }
#define XP(p) (px0 + (int)lround((log2(p) - lx0) / (lx1 - lx0) * (px1 - px0)))
#define YV(v) (py1 - (int)lround((log10(v) - ly0) / (ly1 - ly0) * (py1 - py0)))
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
          "%d\" " FONT ">\n",
          W, H, W, H);
  fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
  fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"17\" font-weight=\"bold\">");
  esc(f, basename);
  fprintf(f, ": %s against threads</text>\n", unit);
  fprintf(f, "<text x=\"10\" y=\"44\" font-size=\"12\" fill=\"#444\">Log-log; lower is better. "
             "Perfect scaling follows the dashed line (%s at %d thread%s divided by the thread "
             "count).%s</text>\n",
          r->allocs[base].name, P[0], P[0] == 1 ? "" : "s", r->quick ? " QUICK MODE." : "");
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n",
          px0, py0, px1 - px0, py1 - py0);
  /* y ticks: 1, 2, 5 x 10^k */
  for (int e = (int)floor(ly0) - 1; e <= (int)ceil(ly1); e++)
    for (int m = 0; m < 3; m++) {
      static const double mm[] = {1, 2, 5};
      double v = mm[m] * pow(10, e);
      double lv = log10(v);
      if (lv < ly0 || lv > ly1) continue;
      int y = YV(v);
      char lab[64];
      fmt_scaled(lab, sizeof lab, v, v, unit);
      fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e3e3e3\"/>\n", px0, y,
              px1, y);
      fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">", px0 - 6, y + 4);
      esc(f, lab);
      fputs("</text>\n", f);
    }
  for (int i = 0; i < np; i++) {
    int x = XP(P[i]);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e3e3e3\"/>\n", x, py0, x,
            py1);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%d</text>\n", x,
            py1 + 16, P[i]);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">threads</text>\n",
          (px0 + px1) / 2, py1 + 36);
  fprintf(f, "<text x=\"20\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 20 %d)\" "
             "text-anchor=\"middle\">%s</text>\n",
          (py0 + py1) / 2, (py0 + py1) / 2, unit);
  /* values per allocator per P */
  int ly = py0 + 10;
  for (int a = 0; a < r->nalloc; a++) {
    if (!r->allocs[a].available) continue;
    const char *col = palette[a % NPAL];
    double vals[64];
    for (int i = 0; i < np; i++) {
      vals[i] = 0;
      for (int k = 0; k < ns; k++) {
        if (s[k].job != job || strcmp(s[k].unit, unit)) continue;
        int p = metric_threads(s[k].metric, b, sizeof b);
        if (strcmp(b, basename) || p != P[i]) continue;
        int n;
        double v = center(r, &s[k], a, &n);
        if (n && v > 0) vals[i] = v;
      }
    }
    if (a == base && vals[0] > 0) { /* ideal scaling */
      fprintf(f, "<polyline fill=\"none\" stroke=\"#888\" stroke-dasharray=\"5,4\" points=\"");
      for (int i = 0; i < np; i++) {
        double v = vals[0] * P[0] / P[i];
        if (log10(v) < ly0) break;
        fprintf(f, "%d,%d ", XP(P[i]), YV(v));
      }
      fputs("\"/>\n", f);
    }
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"", col);
    for (int i = 0; i < np; i++)
      if (vals[i] > 0) fprintf(f, "%d,%d ", XP(P[i]), YV(vals[i]));
    fputs("\"/>\n", f);
    for (int i = 0; i < np; i++)
      if (vals[i] > 0) {
        char lab[64];
        fmt_scaled(lab, sizeof lab, vals[i], vals[i], unit);
        fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"><title>", XP(P[i]),
                YV(vals[i]), col);
        esc(f, r->allocs[a].name);
        fprintf(f, " %d threads: ", P[i]);
        esc(f, lab);
        fputs("</title></circle>\n", f);
      }
    /* legend with the last value */
    const char *why;
    int st = results_cell_status(r, job, a, &why);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>", px1 + 20,
            ly - 5, col);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", px1 + 40, ly);
    esc(f, r->allocs[a].name);
    if (st == CELL_FAIL) fputs(" (FAIL)", f);
    fputs("</text>\n", f);
    ly += 20;
  }
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>", px1 + 20, ly - 3, px1 + 34, ly - 3);
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">ideal scaling</text>\n", px1 + 40, ly);
  fputs("</svg>\n", f);
  fclose(f);
#undef XP
#undef YV
  return 1;
}

int svg_write_all(const results *r, const series *s, int ns, const char *dir, char **names,
                  char **captions, int max) {
  int count = 0;
  if (results_baseline(r) < 0) return 0;
  /* bar charts, one per unit in order of first appearance */
  const char *done[64];
  int nd = 0;
  for (int k = 0; k < ns && count < max; k++) {
    int seen = 0;
    for (int d = 0; d < nd; d++) seen |= !strcmp(done[d], s[k].unit);
    if (seen || nd == 64) continue;
    done[nd++] = s[k].unit;
    if (!own_chart(s, ns, s[k].unit)) continue;
    char slug[64], path[4096], *name;
    name = xasprintf("chart-%s.svg", unit_slug(s[k].unit, slug, sizeof slug));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (bar_chart(r, s, ns, s[k].unit, path) > 0) {
      names[count] = name;
      captions[count] = xasprintf("%s, normalised to %s", fmt_unit_caption(s[k].unit),
                                  r->allocs[results_baseline(r)].name);
      count++;
    } else {
      free(name);
    }
  }
  /* everything else in one chart */
  if (count < max) {
    char path[4096], *name = xstrdup("chart-other.svg");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (bar_chart(r, s, ns, NULL, path) > 0) {
      names[count] = name;
      captions[count] = xasprintf("other figures, normalised to %s",
                                  r->allocs[results_baseline(r)].name);
      count++;
    } else {
      free(name);
    }
  }
  /* line charts for multi-thread series */
  char seen_bases[32][256];
  int nb = 0;
  for (int k = 0; k < ns && count < max; k++) {
    if (!is_multi_thread(s, ns, &s[k])) continue;
    char b[256], key[256];
    metric_threads(s[k].metric, b, sizeof b);
    snprintf(key, sizeof key, "%s\t%s", b, s[k].unit);
    int seen = 0;
    for (int i = 0; i < nb; i++) seen |= !strcmp(seen_bases[i], key);
    if (seen || nb == 32) continue;
    snprintf(seen_bases[nb++], sizeof seen_bases[0], "%s", key);
    char slug[64], path[4096];
    const char *us = unit_slug(s[k].unit, slug, sizeof slug);
    char *name = !strcmp(us, "time") ? xasprintf("chart-scaling-%s.svg", b)
                                     : xasprintf("chart-scaling-%s-%s.svg", b, us);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (line_chart(r, s, ns, s[k].job, b, s[k].unit, path) > 0) {
      names[count] = name;
      captions[count] = xasprintf("%s: %s against threads", b, s[k].unit);
      count++;
    } else {
      free(name);
    }
  }
  return count;
}

/* ---- RssAnon over time ---------------------------------------------------- */

/* parse "T:KB T:KB ..." into t (s) and v (MB); returns the count */
static int rss_points(const char *text, double *t, double *v, int max) {
  int n = 0;
  const char *p = text;
  while (*p && n < max) {
    char *end;
    unsigned long ms = strtoul(p, &end, 10);
    if (end == p || *end != ':') break;
    p = end + 1;
    unsigned long kb = strtoul(p, &end, 10);
    if (end == p) break;
    p = end;
    t[n] = (double)ms / 1000.0;
    v[n] = (double)kb / 1024.0;
    n++;
    while (*p == ' ') p++;
  }
  return n;
}

#define RSS_PTS 65536

int svg_write_rss(const results *r, const char *dir, char **names, char **captions, int max) {
  int count = 0;
  double *t = malloc(sizeof(double) * RSS_PTS), *v = malloc(sizeof(double) * RSS_PTS);
  for (int j = 0; j < r->njob && count < max; j++) {
    double tmax = 0, vmax = 0;
    int any = 0;
    for (size_t i = 0; i < r->nevent; i++) {
      const event *e = &r->events[i];
      if (e->job != j || e->kind != EV_RSS) continue;
      int n = rss_points(e->text, t, v, RSS_PTS);
      for (int k = 0; k < n; k++) {
        if (t[k] > tmax) tmax = t[k];
        if (v[k] > vmax) vmax = v[k];
      }
      any |= n > 1;
    }
    if (!any || tmax <= 0 || vmax <= 0) continue;
    char path[4096];
    char *name = xasprintf("chart-rss-%s.svg", r->jobs[j].name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
      free(name);
      continue;
    }
    const int W = 760, H = 420, L = 70, R = 20, T = 50, B = 50;
    double pw = W - L - R, ph = H - T - B;
    /* round the axes up to 1, 2 or 5 times a power of ten */
    double steps[] = {1, 2, 5};
    double ystep = 1, xstep = 1;
    for (double m = 1e-3; m < 1e9; m *= 10) {
      int done = 0;
      for (int s = 0; s < 3 && !done; s++)
        if (vmax / (steps[s] * m) <= 6) {
          ystep = steps[s] * m;
          done = 1;
        }
      if (done) break;
    }
    for (double m = 1e-3; m < 1e9; m *= 10) {
      int done = 0;
      for (int s = 0; s < 3 && !done; s++)
        if (tmax / (steps[s] * m) <= 8) {
          xstep = steps[s] * m;
          done = 1;
        }
      if (done) break;
    }
    double ytop = ceil(vmax / ystep) * ystep, xend = ceil(tmax / xstep) * xstep;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" %s>\n", W, H,
            FONT);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"14\" font-weight=\"bold\">", L);
    esc(f, r->jobs[j].name);
    fputs(": anonymous resident memory (RssAnon) over the process's life, first run</text>\n", f);
    legend(f, r, L, 38);
    for (double y = 0; y <= ytop + 1e-9; y += ystep) {
      double py = T + ph - y / ytop * ph;
      fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", L, py, W - R,
              py);
      fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g MB</text>\n",
              L - 6, py + 4, y);
    }
    for (double x = 0; x <= xend + 1e-9; x += xstep) {
      double px = L + x / xend * pw;
      fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>", px, T, px,
              (int)(T + ph));
      fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g s</text>\n",
              px, (int)(T + ph) + 16, x);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">time since the process started "
               "(warm-up, timed runs, pause, forcing release)</text>\n",
            L, H - 8);
    for (int a = 0; a < r->nalloc; a++) {
      for (size_t i = 0; i < r->nevent; i++) {
        const event *e = &r->events[i];
        if (e->job != j || e->alloc != a || e->kind != EV_RSS) continue;
        int n = rss_points(e->text, t, v, RSS_PTS);
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                palette[a % NPAL]);
        for (int k = 0; k < n; k++)
          fprintf(f, "%.1f,%.1f ", L + t[k] / xend * pw, T + ph - v[k] / ytop * ph);
        fputs("\"/>\n", f);
        break;
      }
    }
    fputs("</svg>\n", f);
    fclose(f);
    names[count] = name;
    captions[count] = xasprintf("%s: RssAnon over time, one line per allocator", r->jobs[j].name);
    count++;
  }
  free(t);
  free(v);
  return count;
}
