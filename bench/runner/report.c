/* SPDX-License-Identifier: MIT */
/* report: DIR/report.md (run description, allocators, the pictures, the
 * MallocBench table, the benchstat rows, failures / skips / notes), the
 * SVGs next to it, and the same tables on standard output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "runner.h"

static void cell_text_md(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '|') fputs("\\|", f);
    else fputc(*s, f);
  }
}

/* FAILs one line per (benchmark, allocator) with how many runs failed;
 * skips and notes one line per (benchmark, text) listing the allocators
 * ("all" when every allocator that ran printed it). */
static void events_section(FILE *f, const results *r) {
  int navail = 0, any = 0;
  for (int a = 0; a < r->nalloc; a++) navail += r->allocs[a].available;
  for (int j = 0; j < r->njob; j++)
    for (int a = 0; a < r->nalloc; a++) {
      int nfail = 0, nruns = 0;
      const char *first = NULL;
      for (size_t i = 0; i < r->nevent; i++) {
        const event *e = &r->events[i];
        if (e->job != j || e->alloc != a || e->kind != EV_FAIL) continue;
        if (!first) first = e->text;
        nfail++;
      }
      if (!nfail) continue;
      for (size_t i = 0; i < r->nsample; i++)
        if (r->samples[i].job == j && r->samples[i].alloc == a && r->samples[i].run + 1 > nruns)
          nruns = r->samples[i].run + 1;
      if (!any) fputs("| benchmark | allocator | what | detail |\n|---|---|---|---|\n", f);
      any = 1;
      fprintf(f, "| %s | %s | **FAIL** | ", r->jobs[j].name, r->allocs[a].name);
      cell_text_md(f, first);
      fprintf(f, " (%d failed run%s) |\n", nfail, nfail == 1 ? "" : "s");
    }
  for (int pass = 0; pass < 2; pass++) {
    event_kind k = pass == 0 ? EV_SKIP : EV_NOTE;
    for (size_t i = 0; i < r->nevent; i++) {
      const event *e = &r->events[i];
      if (e->kind != k) continue;
      int dup = 0;
      for (size_t m = 0; m < i && !dup; m++) {
        const event *d = &r->events[m];
        dup = d->kind == k && d->job == e->job && !strcmp(d->text, e->text);
      }
      if (dup) continue;
      /* which allocators printed this text for this benchmark */
      int *has = calloc((size_t)r->nalloc, sizeof *has), nhas = 0;
      for (size_t m = i; m < r->nevent; m++) {
        const event *d = &r->events[m];
        if (d->kind == k && d->job == e->job && !strcmp(d->text, e->text) && !has[d->alloc]) {
          has[d->alloc] = 1;
          nhas++;
        }
      }
      if (!any) fputs("| benchmark | allocator | what | detail |\n|---|---|---|---|\n", f);
      any = 1;
      fprintf(f, "| %s | ", r->jobs[e->job].name);
      if (nhas == navail && navail > 1) fputs("all", f);
      else {
        int first = 1;
        for (int a = 0; a < r->nalloc; a++)
          if (has[a]) {
            fprintf(f, "%s%s", first ? "" : ", ", r->allocs[a].name);
            first = 0;
          }
      }
      fprintf(f, " | %s | ", k == EV_SKIP ? "skipped" : "note");
      cell_text_md(f, e->text);
      fputs(" |\n", f);
      free(has);
    }
  }
  if (!any) fputs("None.\n", f);
}

int report_write(const results *r, const char *dir, int print_tables) {
  int ns = 0;
  series *s = results_series(r, &ns);
  char *names[64], *captions[64];
  int nsvg = svg_write_all(r, s, ns, dir, names, captions, 64);
  nsvg += svg_write_rss(r, dir, names + nsvg, captions + nsvg, 64 - nsvg);

  char path[4096];
  snprintf(path, sizeof path, "%s/report.md", dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    results_free_series(s, ns, r->nalloc);
    return -1;
  }
  int base = results_baseline(r);
  fprintf(f, "# lithe-bench: allocator comparison\n\n");
  if (r->quick)
    fprintf(f, "> **Quick mode**: shrunken workloads, one run each. For testing the "
               "suite, not for claims.\n\n");
  fprintf(f, "- started: %s\n", r->started ? r->started : "?");
  fprintf(f, "- machine: %s\n", r->host ? r->host : "?");
  fprintf(f, "- command: `%s`\n", r->command ? r->command : "?");
  if (r->env) {
    const char *p = r->env;
    while (*p) {
      size_t n = strcspn(p, "\n");
      fprintf(f, "- %.*s\n", (int)n, p);
      p += n;
      if (*p) p++;
    }
  }
  if (r->load_end) fprintf(f, "- load average at end: %s\n", r->load_end);
  if (r->budget > 0)
    fprintf(f, "- runs: %d to %d fresh processes per benchmark per allocator, as many as fitted a "
               "%.0f s time budget (the n in each `(p=… n=…+…)` says how many); allocators "
               "interleaved (run 1 of every allocator, then run 2, ...)\n",
            MIN_RUNS, r->runs, r->budget);
  else
    fprintf(f, "- runs: %d fresh process(es) per benchmark per allocator, allocators interleaved "
               "(run 1 of every allocator, then run 2, ...)\n",
            r->runs);
  fprintf(f, "- order: rotates from round to round (A B C, then B C A, then C A B, ...)\n");
  fprintf(f, "- summary: %s\n",
          r->median ? "median ± 95% confidence interval of the median, all runs"
                    : "mean ± largest deviation of a run from the mean, after Tukey outlier "
                      "rejection (1.5 IQR)");
  fprintf(f, "- significance: two-sided Mann-Whitney U, α = 0.05, only where both sides have two "
             "or more runs; `~` = tested, no significant difference (below 4 runs per side no "
             "difference can be significant: 3+3 runs give p >= 0.100); `n=1+1, no test` = one "
             "run on a side: a ratio without a marker; `±` only from two runs up\n");
  fprintf(f, "- memory at end: `end-kB` is RssAnon right after the allocator's own forcing "
             "release (the call in the table below, taken from the library malloc resolved to), "
             "the same method for every allocator and every row; `unassisted-end-kB` is RssAnon "
             "before that call, after a pause longer than lithe's purge delay, with nothing "
             "called for anyone\n");
  fprintf(f, "- how to read all of this: docs/runner.md\n\n");

  fprintf(f, "## Allocators\n\n| name | library | package | malloc resolved to | release call "
             "before end-kB | status |\n|---|---|---|---|---|---|\n");
  for (int a = 0; a < r->nalloc; a++) {
    const allocator *x = &r->allocs[a];
    fprintf(f, "| %s | %s | %s | %s | %s | %s%s%s%s |\n", x->name,
            x->path ? x->path : x->available ? "(none: glibc malloc)" : "-",
            x->package ? x->package : "-", x->origin ? x->origin : "-",
            x->release ? x->release : "-",
            x->available ? (a == base ? "baseline" : "run") : "**not run**: ",
            x->available ? "" : x->why, x->twin ? "; A/A twin of " : "", x->twin ? x->twin : "");
  }
  int nmissing = 0;
  for (int j = 0; j < r->njob; j++) nmissing += r->jobs[j].missing;
  if (nmissing) {
    fprintf(f, "\nBenchmarks not run (program missing):\n\n");
    for (int j = 0; j < r->njob; j++)
      if (r->jobs[j].missing)
        fprintf(f, "- %s: %s\n", r->jobs[j].name, r->jobs[j].why ? r->jobs[j].why : "");
  }

  if (base >= 0) {
    fprintf(f, "\n## At a glance\n\nIn how many MallocBench-style rows (the table below) each allocator "
               "is better (less) or worse than %s; `significant`: Mann-Whitney p < 0.05, "
               "counted only where both sides have two or more runs. FAIL: benchmarks (of "
               "all) that failed under it.\n\n",
            r->allocs[base].name);
    if (table_has_apps(r)) {
      fprintf(f, "Real applications (their own table, below):\n\n");
      table_glance(f, r, s, ns, 1);
      fprintf(f, "Synthetic rows and replayed traces (the MallocBench table):\n\n");
    }
    table_glance(f, r, s, ns, 0);
  }
  int has_twin = 0;
  for (int a = 0; a < r->nalloc; a++) has_twin |= r->allocs[a].twin != NULL;
  if (has_twin) {
    fprintf(f, "\n## A/A: the noise floor\n\nThe baseline run twice under two names (--aa). Any "
               "significant row here is noise that the test let through; the noise floor of a "
               "row is the smallest ratio between the two that its runs could have called "
               "significant (shift one side's runs by that factor and p drops below 0.05).\n\n");
    table_aa(f, r, s, ns);
  }
  fprintf(f, "\n## Pictures\n\n");
  if (!nsvg) fprintf(f, "No figures to draw.\n");
  for (int i = 0; i < nsvg; i++) fprintf(f, "### %s\n\n![%s](%s)\n\n", captions[i], captions[i], names[i]);

  if (table_has_apps(r)) {
    fprintf(f, "## Real applications\n\n");
    fprintf(f, "Programs from Debian run under each allocator (bench-app; docs/runner.md, "
               "\"Real applications\"): the suite's verdict follows these rows, so they have "
               "their own means, apart from the synthetic rows and replays below. Execution "
               "Time: the command's wall time (redis: the server's CPU time); Peak Memory and "
               "Memory at End: the application's process with the largest peak (g++: cc1plus), "
               "at its exit. Markers and notes as in the MallocBench table below.\n\n```text\n");
    table_mallocbench(f, r, s, ns, 1);
    fprintf(f, "```\n\n");
  }
  fprintf(f, "## MallocBench comparison\n\n");
  fprintf(f, "Baseline: %s. `^ 1.03x faster` / `smaller`: better than the baseline by that "
             "factor, significant; `! 1.02x slower` / `bigger`: worse, significant; `~`: tested "
             "(two or more runs per side), not significant; `(p=… n=…+…)` follows. A ratio with "
             "`(n=1+1, no test)` and no marker: one run on a side, nothing could be tested. "
             "Means: the baseline's over all its benchmarks; every other column's, and its ratio, over "
             "the benchmarks it shares with the baseline. The geometric mean's `(ratio per round lo-hi, R "
             "rounds)`: the geometric mean of the per-benchmark ratios (other / baseline) within each of the R rounds that every "
             "shared benchmark ran, lowest and highest; its marker is `^`/`!` only when all R "
             "rounds fall on one side of 1.00 and R >= 6 (a sign test: p = 2^(1-R) < 0.05), else `~`. Memory at End: after each allocator's own forcing "
             "release (see the Allocators table); the unassisted section: the same processes "
             "before that call.\n\n```text\n",
          base >= 0 ? r->allocs[base].name : "?");
  table_mallocbench(f, r, s, ns, 0);
  fprintf(f, "```\n\n## benchstat\n\nEvery metric of every benchmark, baseline against each "
             "other allocator. `delta` = (other / baseline − 1) × 100 when p < 0.05, else `~`.\n\n"
             "```text\n");
  table_benchstat(f, r, s, ns);
  fprintf(f, "```\n\n## Failures, skips and notes\n\n");
  events_section(f, r);
  fclose(f);

  if (print_tables) {
    if (table_has_apps(r)) {
      printf("Real applications (baseline %s):\n\n", base >= 0 ? r->allocs[base].name : "?");
      table_mallocbench(stdout, r, s, ns, 1);
    }
    printf("MallocBench comparison (baseline %s):\n\n", base >= 0 ? r->allocs[base].name : "?");
    table_mallocbench(stdout, r, s, ns, 0);
    printf("benchstat:\n\n");
    table_benchstat(stdout, r, s, ns);
    for (int a = 0; a < r->nalloc; a++)
      if (!r->allocs[a].available)
        printf("%s: %s (skipped)\n", r->allocs[a].name, r->allocs[a].why);
    for (int j = 0; j < r->njob; j++)
      if (r->jobs[j].missing) printf("%s: %s (missing)\n", r->jobs[j].name, r->jobs[j].why);
    for (int j = 0; j < r->njob; j++)
      for (int a = 0; a < r->nalloc; a++) {
        const char *why = NULL;
        if (results_cell_status(r, j, a, &why) == CELL_FAIL)
          printf("FAIL %s under %s: %s\n", r->jobs[j].name, r->allocs[a].name, why);
      }
    fflush(stdout);
  }
  for (int i = 0; i < nsvg; i++) {
    free(names[i]);
    free(captions[i]);
  }
  results_free_series(s, ns, r->nalloc);
  return 0;
}
