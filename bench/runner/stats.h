/* SPDX-License-Identifier: MIT */
/* stats: the numbers behind the comparison, as the original benchstat
 * computes them (docs/runner.md, "Statistics", has the method in full).
 *
 * - Tukey outlier rejection with Hyndman-Fan type 8 quartiles
 * - mean +/- worst-case spread, or median +/- 95% CI (--median)
 * - two-sided Mann-Whitney U test: exact (conditional on ties) for small
 *   samples, normal approximation with tie and continuity correction
 *   otherwise
 * - geometric / arithmetic / harmonic means skipping zero values
 *
 * Pure functions of their inputs; no allocation visible to callers except
 * where documented. Unit-tested by test_stats.c (CTest runner_stats).
 */
#ifndef LITHE_RUNNER_STATS_H
#define LITHE_RUNNER_STATS_H

#define STATS_ALPHA 0.05

/* Quantile p (0..1) of an ascending sorted sample, Hyndman-Fan definition 8:
 * 1-based position h = 1/3 + p*(n + 1/3), linear interpolation, clamped. */
double stats_quantile_hf8(const double *sorted, int n, double p);

/* Copy x into out sorted ascending, keeping only values inside the Tukey
 * fences [q1 - 1.5 IQR, q3 + 1.5 IQR]. Returns the number kept. */
int stats_reject_outliers(const double *x, int n, double *out);

/* Sort a copy ascending (helper). */
void stats_sort(double *x, int n);

/* A summary of one sample, as shown in one benchstat cell. */
typedef struct {
  int n;         /* values used (after outlier rejection in mean mode) */
  double center; /* mean (default) or median (--median) */
  double lo, hi; /* mean mode: min and max kept; median mode: CI bounds */
  int inf;       /* median mode: too few values for the CI -> "± inf" */
} stats_summary;

/* Mean mode: reject outliers, centre = mean of the kept values,
 * lo/hi = min/max of kept values. `kept` (may be NULL) receives the kept
 * values, sorted; it must hold n doubles. */
stats_summary stats_summarize_mean(const double *x, int n, double *kept);

/* Median mode: no outlier rejection; centre = median; [lo, hi] =
 * the narrowest symmetric pair of order statistics that covers the median
 * with probability >= conf under the binomial(n, 1/2) law. */
stats_summary stats_summarize_median(const double *x, int n, double conf);

/* The `± X%` figure: max(1 - lo/center, hi/center - 1) * 100.
 * Negative return value = print nothing (centre or hi is 0). */
double stats_spread_pct(const stats_summary *s);

/* Two-sided Mann-Whitney U test. */
typedef struct {
  int ok;           /* 0: see `why` */
  const char *why;  /* "all equal", "too few samples" */
  double u1, u2;    /* U of sample x and of sample y; u1 + u2 = nx*ny */
  double p;         /* two-sided p value */
  int exact;        /* 1: exact distribution used; 0: normal approximation */
} stats_utest;

stats_utest stats_mann_whitney(const double *x, int nx, const double *y, int ny);

/* P(U1 <= u) under H0 for samples of sizes n1, n2 whose pooled values have
 * the tie groups t[0..ngroups-1] (in ascending value order; all 1 = no
 * ties). Counts the equally likely ways to pick which n1 of the N pooled
 * values belong to sample 1 (conditional on the tie pattern). */
double stats_u_exact_cdf(int n1, int n2, const int *t, int ngroups, double u);

/* Standard normal CDF. */
double stats_phi(double z);

/* Means over v[0..n-1], skipping values <= 0 (and NaN); *used receives the
 * count that entered. Return 0 when nothing entered. */
double stats_geomean(const double *v, int n, int *used);
double stats_arithmean(const double *v, int n, int *used);
double stats_harmmean(const double *v, int n, int *used);

#endif
