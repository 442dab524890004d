/* SPDX-License-Identifier: MIT */
/* stats: see stats.h; the method is written out in docs/runner.md,
 * "Statistics". */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void stats_sort(double *x, int n) {
  if (n > 1) qsort(x, (size_t)n, sizeof *x, cmp_double);
}

double stats_quantile_hf8(const double *s, int n, double p) {
  if (n <= 0) return NAN;
  double h = 1.0 / 3.0 + p * ((double)n + 1.0 / 3.0); /* 1-based */
  if (h <= 1.0) return s[0];
  if (h >= (double)n) return s[n - 1];
  int lo = (int)floor(h);          /* 1-based index of the lower neighbour */
  double f = h - (double)lo;
  return s[lo - 1] + f * (s[lo] - s[lo - 1]);
}

int stats_reject_outliers(const double *x, int n, double *out) {
  if (n <= 0) return 0;
  double *s = malloc(sizeof *s * (size_t)n);
  if (!s) return 0;
  memcpy(s, x, sizeof *s * (size_t)n);
  stats_sort(s, n);
  double q1 = stats_quantile_hf8(s, n, 0.25), q3 = stats_quantile_hf8(s, n, 0.75);
  double iqr = q3 - q1, lo = q1 - 1.5 * iqr, hi = q3 + 1.5 * iqr;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (s[i] >= lo && s[i] <= hi) out[k++] = s[i];
  free(s);
  return k;
}

stats_summary stats_summarize_mean(const double *x, int n, double *kept) {
  stats_summary r = {0};
  double *k = kept ? kept : malloc(sizeof *k * (size_t)(n > 0 ? n : 1));
  if (!k) return r;
  r.n = stats_reject_outliers(x, n, k);
  if (r.n > 0) {
    double sum = 0;
    for (int i = 0; i < r.n; i++) sum += k[i];
    r.center = sum / r.n;
    r.lo = k[0];
    r.hi = k[r.n - 1];
  }
  if (!kept) free(k);
  return r;
}

/* P(Bin(n, 1/2) <= k) */
static double binom_half_cdf(int n, int k) {
  double sum = 0, c = 1; /* C(n, 0) */
  for (int i = 0; i <= k && i <= n; i++) {
    sum += c;
    c = c * (double)(n - i) / (double)(i + 1);
  }
  return sum * pow(0.5, n);
}

stats_summary stats_summarize_median(const double *x, int n, double conf) {
  stats_summary r = {0};
  if (n <= 0) return r;
  double *s = malloc(sizeof *s * (size_t)n);
  if (!s) return r;
  memcpy(s, x, sizeof *s * (size_t)n);
  stats_sort(s, n);
  r.n = n;
  r.center = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  /* [x_(k), x_(n-k+1)] (1-based) covers the median with probability
   * 1 - 2 P(Bin(n,1/2) <= k-1); take the largest k that still reaches conf. */
  int best = 0;
  for (int k = 1; k <= n / 2 + (n % 2); k++) {
    if (n - k + 1 < k) break;
    if (1.0 - 2.0 * binom_half_cdf(n, k - 1) >= conf) best = k;
    else break;
  }
  if (best == 0) {
    r.inf = 1;
    r.lo = -INFINITY;
    r.hi = INFINITY;
  } else {
    r.lo = s[best - 1];
    r.hi = s[n - best];
  }
  free(s);
  return r;
}

double stats_spread_pct(const stats_summary *s) {
  if (s->n <= 0 || s->center == 0 || s->hi == 0) return -1;
  if (s->inf) return INFINITY;
  double a = 1.0 - s->lo / s->center, b = s->hi / s->center - 1.0;
  return 100.0 * (a > b ? a : b);
}

double stats_phi(double z) { return 0.5 * erfc(-z / sqrt(2.0)); }

static double choose(int n, int k) {
  if (k < 0 || k > n) return 0;
  if (k > n - k) k = n - k;
  double c = 1;
  for (int i = 0; i < k; i++) c = c * (double)(n - i) / (double)(i + 1);
  return c;
}

/* Dynamic programme over tie groups. Ranks are handled doubled (2 * mid-rank
 * is an integer: a group occupying positions a..b has mid-rank (a+b)/2).
 * ways[k][s] = number of ways to choose k values from the groups seen so far
 * with doubled rank sum s; choosing j of a group of size t has C(t, j)
 * ways. Every one of the C(N, n1) choices is equally likely under H0. */
double stats_u_exact_cdf(int n1, int n2, const int *t, int ngroups, double u) {
  int N = n1 + n2;
  if (n1 < 0 || n2 < 0 || N == 0) return NAN;
  int smax = N * (N + 1); /* doubled sum of all ranks */
  size_t w = (size_t)smax + 1;
  double *ways = calloc((size_t)(n1 + 1) * w, sizeof *ways);
  double *next = calloc((size_t)(n1 + 1) * w, sizeof *next);
  if (!ways || !next) {
    free(ways);
    free(next);
    return NAN;
  }
  ways[0] = 1;
  int pos = 0; /* positions used so far */
  for (int g = 0; g < ngroups; g++) {
    int tg = t[g];
    int r2 = (pos + 1) + (pos + tg); /* doubled mid-rank */
    memset(next, 0, (size_t)(n1 + 1) * w * sizeof *next);
    for (int k = 0; k <= n1; k++)
      for (int s = 0; s <= smax; s++) {
        double v = ways[(size_t)k * w + (size_t)s];
        if (v == 0) continue;
        for (int j = 0; j <= tg && k + j <= n1; j++) {
          int s2 = s + j * r2;
          if (s2 > smax) break;
          next[(size_t)(k + j) * w + (size_t)s2] += v * choose(tg, j);
        }
      }
    double *tmp = ways;
    ways = next;
    next = tmp;
    pos += tg;
  }
  /* U1 = R1 - n1(n1+1)/2  =>  2 R1 = 2 U1 + n1(n1+1) */
  double lim = 2.0 * u + (double)n1 * (n1 + 1) + 1e-9;
  double hits = 0;
  for (int s = 0; s <= smax && s <= lim; s++) hits += ways[(size_t)n1 * w + (size_t)s];
  free(ways);
  free(next);
  return hits / choose(N, n1);
}

typedef struct {
  double v;
  int from_x;
} tagged;

static int cmp_tagged(const void *a, const void *b) {
  double x = ((const tagged *)a)->v, y = ((const tagged *)b)->v;
  return (x > y) - (x < y);
}

stats_utest stats_mann_whitney(const double *x, int nx, const double *y, int ny) {
  stats_utest r = {0};
  if (nx <= 0 || ny <= 0) {
    r.why = "too few samples";
    return r;
  }
  int N = nx + ny;
  tagged *all = malloc(sizeof *all * (size_t)N);
  int *ties = malloc(sizeof *ties * (size_t)N);
  if (!all || !ties) {
    free(all);
    free(ties);
    r.why = "out of memory";
    return r;
  }
  for (int i = 0; i < nx; i++) all[i] = (tagged){x[i], 1};
  for (int i = 0; i < ny; i++) all[nx + i] = (tagged){y[i], 0};
  qsort(all, (size_t)N, sizeof *all, cmp_tagged);
  double r1 = 0, tiesum = 0;
  int ngroups = 0;
  for (int i = 0; i < N;) {
    int j = i;
    while (j < N && all[j].v == all[i].v) j++;
    int t = j - i;
    double mid = 0.5 * ((i + 1) + j); /* positions i+1..j */
    for (int k = i; k < j; k++)
      if (all[k].from_x) r1 += mid;
    ties[ngroups++] = t;
    tiesum += (double)t * t * t - t;
    i = j;
  }
  free(all);
  if (ngroups == 1) {
    free(ties);
    r.why = "all equal";
    return r;
  }
  int has_ties = ngroups < N;
  r.u1 = r1 - (double)nx * (nx + 1) / 2.0;
  r.u2 = (double)nx * ny - r.u1;
  r.ok = 1;
  if (r.u1 == r.u2) {
    r.p = 1;
    r.exact = (!has_ties && nx <= 50 && ny <= 50) || (has_ties && nx <= 25 && ny <= 25);
    free(ties);
    return r;
  }
  if ((!has_ties && nx <= 50 && ny <= 50) || (has_ties && nx <= 25 && ny <= 25)) {
    r.exact = 1;
    /* Two-sided: twice the tail on the observed side. With ties the
     * conditional law need not be symmetric, so the upper tail of U1 is
     * computed as the lower tail of U2 (same tie pattern, roles swapped). */
    if (r.u1 < r.u2) r.p = 2.0 * stats_u_exact_cdf(nx, ny, ties, ngroups, r.u1);
    else r.p = 2.0 * stats_u_exact_cdf(ny, nx, ties, ngroups, r.u2);
  } else {
    double mu = (double)nx * ny / 2.0;
    double var = (double)nx * ny * (((double)N + 1) - tiesum / ((double)N * (N - 1))) / 12.0;
    double sd = sqrt(var);
    double lower = stats_phi((r.u1 + 0.5 - mu) / sd);  /* P(U <= u1) */
    double upper = stats_phi(-(r.u1 - 0.5 - mu) / sd); /* P(U >= u1) */
    r.p = 2.0 * (lower < upper ? lower : upper);
  }
  if (r.p > 1) r.p = 1;
  free(ties);
  return r;
}

double stats_geomean(const double *v, int n, int *used) {
  double s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > 0) {
      s += log(v[i]);
      k++;
    }
  if (used) *used = k;
  return k ? exp(s / k) : 0;
}

double stats_arithmean(const double *v, int n, int *used) {
  double s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > 0) {
      s += v[i];
      k++;
    }
  if (used) *used = k;
  return k ? s / k : 0;
}

double stats_harmmean(const double *v, int n, int *used) {
  double s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > 0) {
      s += 1.0 / v[i];
      k++;
    }
  if (used) *used = k;
  return k ? k / s : 0;
}
