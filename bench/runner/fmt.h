/* SPDX-License-Identifier: MIT */
/* fmt: how numbers look in the tables (docs/runner.md, "Output": benchstat's
 * scaling and `± %` cells, MallocBench's comparison cells).
 * Returned strings live in the caller's buffer (or, for fmt_p, in a small
 * rotating static buffer). */
#ifndef LITHE_RUNNER_FMT_H
#define LITHE_RUNNER_FMT_H

#include <stddef.h>

/* benchstat scaling: the scale (ns/µs/ms/s, kB/MB/GB, k/M/G/T) and the
 * number of decimals are chosen from `ref` (the baseline's value) so about
 * three significant digits show; `v` is printed on that scale. Units ending
 * in "kB" are KiB counts (1 MB = 1024 kB); "ns/op" is nanoseconds. */
char *fmt_scaled(char *buf, size_t n, double v, double ref, const char *unit);

/* 1234567.8 -> "1,234,568" (decimals 0) or "1,234,567.8" (decimals 1) */
char *fmt_thousands(char *buf, size_t n, double v, int decimals);

/* p value to three decimals: "0.008" (rotating static buffers, 8 deep) */
const char *fmt_p(double p);

/* Column title for a unit: ns/op -> "time/op", others unchanged. */
const char *fmt_unit_title(const char *unit);

/* Human name of a unit for captions: ns/op -> "time per op (ns)" ... */
const char *fmt_unit_caption(const char *unit);

/* 1 for units where higher is better (throughput: ".../s"). */
int fmt_higher_is_better(const char *unit);

#endif
