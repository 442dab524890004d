/* SPDX-License-Identifier: MIT */
/* Unit tests for stats.c and fmt.c against values worked out by hand.
 * Every expected number below has its derivation next to it, so a reader
 * can redo the arithmetic. Run by CTest as runner_stats. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "stats.h"

static int failures;

#define CHECK_NEAR(got, want, tol)                                                   \
  do {                                                                               \
    double g_ = (got), w_ = (want);                                                  \
    if (!(fabs(g_ - w_) <= (tol))) {                                                 \
      printf("FAIL %s:%d: %s = %.10g, want %.10g (tol %g)\n", __FILE__, __LINE__, #got, \
             g_, w_, (double)(tol));                                                 \
      failures++;                                                                    \
    }                                                                                \
  } while (0)

#define CHECK_INT(got, want)                                                                \
  do {                                                                                      \
    long g_ = (long)(got), w_ = (long)(want);                                               \
    if (g_ != w_) {                                                                         \
      printf("FAIL %s:%d: %s = %ld, want %ld\n", __FILE__, __LINE__, #got, g_, w_);         \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)

#define CHECK_STR(got, want)                                                                \
  do {                                                                                      \
    const char *g_ = (got), *w_ = (want);                                                   \
    if (strcmp(g_, w_) != 0) {                                                              \
      printf("FAIL %s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, __LINE__, #got, g_, w_);   \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)

static void test_quantiles_and_outliers(void) {
  /* {1,2,3,4,100}, n = 5.
   * q1: h = 1/3 + 0.25*(5 + 1/3) = 1/3 + 4/3 = 5/3 -> x1 + 2/3 (x2 - x1) = 1.6667
   * q3: h = 1/3 + 0.75*(16/3) = 1/3 + 4 = 13/3 -> x4 + 1/3 (x5 - x4) = 4 + 32 = 36
   * IQR = 34.3333; fences [1.6667 - 51.5, 36 + 51.5] = [-49.83, 87.5]
   * -> 100 is dropped, 4 values kept. */
  double a[] = {100, 3, 1, 4, 2}, s[5], kept[5];
  memcpy(s, a, sizeof a);
  stats_sort(s, 5);
  CHECK_NEAR(stats_quantile_hf8(s, 5, 0.25), 5.0 / 3.0, 1e-12);
  CHECK_NEAR(stats_quantile_hf8(s, 5, 0.75), 36.0, 1e-12);
  CHECK_INT(stats_reject_outliers(a, 5, kept), 4);
  CHECK_NEAR(kept[3], 4.0, 0);
  /* clamping: h for p = 0 is 1/3 < 1 -> x1; p = 1 gives 1/3 + n + 1/3 > n -> xn */
  CHECK_NEAR(stats_quantile_hf8(s, 5, 0.0), 1.0, 0);
  CHECK_NEAR(stats_quantile_hf8(s, 5, 1.0), 100.0, 0);

  /* {10,11,12,13,14,15,100}, n = 7.
   * q1: h = 1/3 + 0.25*(22/3) = 1/3 + 11/6 = 13/6 = 2.1667 -> 11 + 1/6 = 11.1667
   * q3: h = 1/3 + 0.75*(22/3) = 1/3 + 5.5 = 5.8333 -> 14 + 5/6 = 14.8333
   * upper fence 14.8333 + 1.5*3.6667 = 20.333 -> 100 dropped, 6 kept.
   * mean of kept = 75/6 = 12.5; spread = max(1 - 10/12.5, 15/12.5 - 1) = 20% */
  double b[] = {10, 11, 12, 13, 14, 15, 100};
  stats_summary sb = stats_summarize_mean(b, 7, NULL);
  CHECK_INT(sb.n, 6);
  CHECK_NEAR(sb.center, 12.5, 1e-12);
  CHECK_NEAR(stats_spread_pct(&sb), 20.0, 1e-9);
  /* a sample with no spread: {5,5,5}: IQR 0, all kept, spread 0 */
  double c[] = {5, 5, 5};
  stats_summary sc = stats_summarize_mean(c, 3, NULL);
  CHECK_INT(sc.n, 3);
  CHECK_NEAR(stats_spread_pct(&sc), 0.0, 0);
}

static void test_median_ci(void) {
  /* n = 10: [x_(k), x_(11-k)] covers the median w.p. 1 - 2 P(Bin(10,1/2) <= k-1).
   * k = 2: P(Bin <= 1) = (1 + 10)/1024 -> 1 - 22/1024 = 0.9785 >= 0.95
   * k = 3: P(Bin <= 2) = (1 + 10 + 45)/1024 = 56/1024 -> 1 - 112/1024 = 0.8906 < 0.95
   * so the 95% interval is [x_(2), x_(9)]. Median = (x5 + x6)/2. */
  double x[] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10};
  stats_summary s = stats_summarize_median(x, 10, 0.95);
  CHECK_NEAR(s.center, 5.5, 0);
  CHECK_NEAR(s.lo, 2, 0);
  CHECK_NEAR(s.hi, 9, 0);
  CHECK_INT(s.inf, 0);
  /* ± = max(1 - 2/5.5, 9/5.5 - 1) = max(0.6364, 0.6364) = 63.64% */
  CHECK_NEAR(stats_spread_pct(&s), 100.0 * 3.5 / 5.5, 1e-9);
  /* n = 5: even k = 1 covers only 1 - 2/32 = 0.9375 < 0.95 -> infinite */
  stats_summary s5 = stats_summarize_median(x, 5, 0.95);
  CHECK_INT(s5.inf, 1);
  /* n = 6: k = 1 covers 1 - 2/64 = 0.96875 -> [x_(1), x_(6)] */
  double y[] = {3, 1, 2, 6, 5, 4};
  stats_summary s6 = stats_summarize_median(y, 6, 0.95);
  CHECK_NEAR(s6.center, 3.5, 0);
  CHECK_NEAR(s6.lo, 1, 0);
  CHECK_NEAR(s6.hi, 6, 0);
}

static void test_exact_u(void) {
  /* n1 = n2 = 2, no ties: the C(4,2) = 6 ways to pick sample 1's ranks give
   * R1 = 3,4,5,5,6,7 -> U1 = R1 - 3 = 0,1,2,2,3,4. P(U <= 2) = 4/6. */
  int t4[] = {1, 1, 1, 1};
  CHECK_NEAR(stats_u_exact_cdf(2, 2, t4, 4, 2), 4.0 / 6.0, 1e-12);
  CHECK_NEAR(stats_u_exact_cdf(2, 2, t4, 4, 0), 1.0 / 6.0, 1e-12);

  /* n = 3+3 fully separated: U1 = 0; only 1 of C(6,3) = 20 splits gives
   * U = 0 -> p = 2 * 1/20 = 0.100 */
  double a3[] = {1, 2, 3}, b3[] = {4, 5, 6};
  stats_utest r = stats_mann_whitney(a3, 3, b3, 3);
  CHECK_INT(r.ok, 1);
  CHECK_INT(r.exact, 1);
  CHECK_NEAR(r.u1, 0, 0);
  CHECK_NEAR(r.p, 0.1, 1e-12);
  CHECK_STR(fmt_p(r.p), "0.100");

  /* n = 5+5 fully separated: p = 2 / C(10,5) = 2/252 = 0.0079365 -> 0.008;
   * the same with the samples swapped (U1 = 25 > U2 = 0: upper tail). */
  double a5[] = {1, 2, 3, 4, 5}, b5[] = {6, 7, 8, 9, 10};
  r = stats_mann_whitney(a5, 5, b5, 5);
  CHECK_NEAR(r.p, 2.0 / 252.0, 1e-12);
  CHECK_STR(fmt_p(r.p), "0.008");
  r = stats_mann_whitney(b5, 5, a5, 5);
  CHECK_NEAR(r.u1, 25, 0);
  CHECK_NEAR(r.p, 2.0 / 252.0, 1e-12);

  /* n = 4+4 with one crossing: x = {1,2,3,5}, y = {4,6,7,8}.
   * x's ranks 1,2,3,5 -> R1 = 11, U1 = 11 - 10 = 1. Of the C(8,4) = 70
   * splits, U = 0 needs ranks {1,2,3,4} (1 way) and U = 1 needs {1,2,3,5}
   * (1 way): P(U <= 1) = 2/70 -> p = 4/70 = 0.0571 -> not significant. */
  double a4[] = {1, 2, 3, 5}, b4[] = {4, 6, 7, 8};
  r = stats_mann_whitney(a4, 4, b4, 4);
  CHECK_NEAR(r.u1, 1, 0);
  CHECK_NEAR(r.p, 4.0 / 70.0, 1e-12);
  CHECK_STR(fmt_p(r.p), "0.057");

  /* Exact with ties: x = {1,2,2}, y = {2,3,4}.
   * Pooled: 1 | 2 2 2 | 3 | 4 -> ranks 1 | 3 3 3 | 5 | 6 (mid-rank of 2..4 is 3).
   * R1 = 1 + 3 + 3 = 7, U1 = 7 - 6 = 1, U2 = 9 - 1 = 8.
   * Conditional law: pick k of the three 2s (C(3,k) ways) and 3-k of {1,5,6}:
   *   k=3: R=9 (1 way); k=2: R=7,11,12 (3 ways each); k=1: R=3+{6,7,11} =
   *   9,10,14 (3 ways each); k=0: R=12 (1 way). Total 20 = C(6,3). OK.
   * P(R1 <= 7) = 3/20 -> p = 2 * 0.15 = 0.30. Swapped samples: the upper
   * tail is P(R1 >= 12) for y's view ... computed as the lower tail of the
   * other sample, also 3/20 -> 0.30. */
  double at[] = {1, 2, 2}, bt[] = {2, 3, 4};
  r = stats_mann_whitney(at, 3, bt, 3);
  CHECK_INT(r.exact, 1);
  CHECK_NEAR(r.u1, 1, 0);
  CHECK_NEAR(r.u2, 8, 0);
  CHECK_NEAR(r.p, 0.3, 1e-12);
  r = stats_mann_whitney(bt, 3, at, 3);
  CHECK_NEAR(r.p, 0.3, 1e-12);

  /* U1 == U2 -> p = 1 */
  double e1[] = {1, 4}, e2[] = {2, 3};
  r = stats_mann_whitney(e1, 2, e2, 2);
  CHECK_NEAR(r.p, 1.0, 0);
  CHECK_STR(fmt_p(r.p), "1.000");

  /* failure cases */
  double same[] = {7, 7, 7};
  r = stats_mann_whitney(same, 3, same, 2);
  CHECK_INT(r.ok, 0);
  CHECK_STR(r.why, "all equal");
  r = stats_mann_whitney(same, 3, same, 0);
  CHECK_INT(r.ok, 0);
  CHECK_STR(r.why, "too few samples");
}

static void test_normal_u(void) {
  /* 51+51 without ties (> 50 -> normal approximation).
   * x = odd numbers 1..101, y = even numbers 2..102; ranks = values.
   * R1 = 1+3+...+101 = 51^2 = 2601, U1 = 2601 - 51*52/2 = 1275, U2 = 1326.
   * mu = 51*51/2 = 1300.5; var = 51*51*103/12 = 22325.25, sd = 149.41637.
   * z = (1275 + 0.5 - 1300.5)/149.41637 = -0.167318.
   * Phi(0.167318) by series: 0.5 + z*phi(0)*(1 - z^2/6 + z^4/40)
   *   = 0.5 + 0.167318*0.398942*0.995354 = 0.5 + 0.0664407
   * p = 2 * (0.5 - 0.0664407) = 0.867119 */
  double x[51], y[51];
  for (int i = 0; i < 51; i++) {
    x[i] = 2 * i + 1;
    y[i] = 2 * i + 2;
  }
  stats_utest r = stats_mann_whitney(x, 51, y, 51);
  CHECK_INT(r.exact, 0);
  CHECK_NEAR(r.u1, 1275, 0);
  CHECK_NEAR(r.p, 0.867119, 2e-5);

  /* 30+30 with ties (> 25 with ties -> normal approximation).
   * x = 10x1, 10x2, 10x3; y = 5x1, 10x2, 10x3, 5x4.
   * Tie groups: value 1: t=15 (positions 1..15, mid-rank 8); value 2: t=20
   * (16..35, 25.5); value 3: t=20 (36..55, 45.5); value 4: t=5 (56..60, 58).
   * R1 = 10*8 + 10*25.5 + 10*45.5 = 790, U1 = 790 - 30*31/2 = 325.
   * mu = 450. sum(t^3 - t) = 3360 + 7980 + 7980 + 120 = 19440;
   * N(N-1) = 3540; 19440/3540 = 5.4915254; (N+1) - that = 55.5084746;
   * var = 900 * 55.5084746 / 12 = 4163.135593; sd = 64.522365.
   * z = (325 + 0.5 - 450)/64.522365 = -124.5/64.522365; 64.522365*1.93 =
   * 124.52816, so z = -(1.93 - 0.02816/64.522365) = -1.9295636.
   * Phi(-1.93) = 0.0268032 (table); phi(1.93) = 0.06195, so
   * Phi(-1.9295636) = 0.0268032 + 0.0004364*0.06195 = 0.0268302;
   * p = 0.0536605 -> "0.054", i.e. not significant at 0.05. */
  double tx[30], ty[30];
  for (int i = 0; i < 30; i++) tx[i] = 1 + i / 10;
  for (int i = 0; i < 30; i++) ty[i] = i < 5 ? 1 : i < 15 ? 2 : i < 25 ? 3 : 4;
  r = stats_mann_whitney(tx, 30, ty, 30);
  CHECK_INT(r.exact, 0);
  CHECK_NEAR(r.u1, 325, 0);
  CHECK_NEAR(r.p, 0.0536605, 2e-6);
  CHECK_STR(fmt_p(r.p), "0.054");

  /* Phi itself: Phi(0) = 0.5, Phi(-1.959964) = 0.025 */
  CHECK_NEAR(stats_phi(0), 0.5, 1e-15);
  CHECK_NEAR(stats_phi(-1.959964), 0.025, 1e-7);
}

static void test_means(void) {
  /* {1,2,4,0}: zero skipped. geo = cbrt(8) = 2; arith = 7/3;
   * harm = 3 / (1 + 1/2 + 1/4) = 3/1.75 = 1.7142857 */
  double v[] = {1, 2, 4, 0};
  int used = 0;
  CHECK_NEAR(stats_geomean(v, 4, &used), 2.0, 1e-12);
  CHECK_INT(used, 3);
  CHECK_NEAR(stats_arithmean(v, 4, &used), 7.0 / 3.0, 1e-12);
  CHECK_NEAR(stats_harmmean(v, 4, &used), 3.0 / 1.75, 1e-12);
}

static void test_fmt(void) {
  char b[64];
  /* benchstat time scaler: 3 significant digits, unit from the magnitude */
  CHECK_STR(fmt_scaled(b, sizeof b, 2.28e6, 2.28e6, "ns/op"), "2.28ms");
  CHECK_STR(fmt_scaled(b, sizeof b, 656, 656, "ns/op"), "656ns");
  CHECK_STR(fmt_scaled(b, sizeof b, 47.3, 47.3, "ns/op"), "47.3ns");
  CHECK_STR(fmt_scaled(b, sizeof b, 1.5e9, 1.5e9, "ns/op"), "1.50s");
  /* the scale comes from the first (reference) value */
  CHECK_STR(fmt_scaled(b, sizeof b, 120e3, 2.28e6, "ns/op"), "0.12ms");
  /* KiB figures: 3 significant digits in kB/MB/GB (1 MB = 1024 kB here) */
  CHECK_STR(fmt_scaled(b, sizeof b, 512, 512, "peak-kB"), "512kB");
  CHECK_STR(fmt_scaled(b, sizeof b, 20480, 20480, "peak-kB"), "20.0MB");
  CHECK_STR(fmt_scaled(b, sizeof b, 1300000, 1300000, "end-kB"), "1.24GB");
  /* plain counts: k/M/G */
  CHECK_STR(fmt_scaled(b, sizeof b, 1234567, 1234567, "cycles"), "1.23M");
  CHECK_STR(fmt_scaled(b, sizeof b, 12, 12, "faults"), "12.0");
  /* thousands separators */
  CHECK_STR(fmt_thousands(b, sizeof b, 1234567.0, 0), "1,234,567");
  CHECK_STR(fmt_thousands(b, sizeof b, 69.2164, 1), "69.2");
  CHECK_STR(fmt_thousands(b, sizeof b, 12345.67, 1), "12,345.7");
  CHECK_STR(fmt_p(0.0000001), "0.000");
}

int main(void) {
  test_quantiles_and_outliers();
  test_median_ci();
  test_exact_u();
  test_normal_u();
  test_means();
  test_fmt();
  if (failures) {
    printf("%d check(s) failed\n", failures);
    return 1;
  }
  printf("runner_stats: all checks passed\n");
  return 0;
}
