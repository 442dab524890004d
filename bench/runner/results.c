/* SPDX-License-Identifier: MIT */
/* results: the in-memory store of one comparison, and its raw file
 * results.tsv (written after every benchmark, so an interrupted run keeps
 * what it measured; `lithe-bench --report DIR` re-reads it).
 *
 * results.tsv: one record per line, tab-separated, '#' lines are comments:
 *   meta    KEY VALUE                      runs, quick, median, command, started, host
 *   alloc   NAME PATH|- ok|missing WHY
 *   job     NAME KIND ok|missing WHY
 *   sample  JOB ALLOC RUN METRIC UNIT VALUE
 *   fail|skip|note  JOB ALLOC RUN TEXT
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "lithe-bench: out of memory\n");
    exit(2);
  }
  return q;
}

char *xstrdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = xrealloc(NULL, n);
  memcpy(d, s, n);
  return d;
}

char *xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = xrealloc(NULL, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

void results_add_sample(results *r, int job, int alloc, int run, const char *metric,
                        const char *unit, double value) {
  if (r->nsample == r->capsample) {
    r->capsample = r->capsample ? 2 * r->capsample : 256;
    r->samples = xrealloc(r->samples, r->capsample * sizeof *r->samples);
  }
  r->samples[r->nsample++] =
      (sample){job, alloc, run, xstrdup(metric), xstrdup(unit), value};
}

void results_add_event(results *r, int job, int alloc, int run, event_kind k, const char *text) {
  if (r->nevent == r->capevent) {
    r->capevent = r->capevent ? 2 * r->capevent : 64;
    r->events = xrealloc(r->events, r->capevent * sizeof *r->events);
  }
  r->events[r->nevent++] = (event){job, alloc, run, k, xstrdup(text)};
}

int results_baseline(const results *r) {
  for (int a = 0; a < r->nalloc; a++)
    if (r->allocs[a].available) return a;
  return -1;
}

int results_cell_status(const results *r, int job, int alloc, const char **why) {
  const char *skipwhy = NULL;
  for (size_t i = 0; i < r->nevent; i++) {
    const event *e = &r->events[i];
    if (e->job != job || e->alloc != alloc) continue;
    if (e->kind == EV_FAIL) {
      if (why) *why = e->text;
      return CELL_FAIL;
    }
    if (e->kind == EV_SKIP && !skipwhy) skipwhy = e->text;
  }
  for (size_t i = 0; i < r->nsample; i++)
    if (r->samples[i].job == job && r->samples[i].alloc == alloc) return CELL_OK;
  if (skipwhy) {
    if (why) *why = skipwhy;
    return CELL_SKIP;
  }
  return CELL_NONE;
}

int metric_threads(const char *metric, char *base, size_t n) {
  snprintf(base, n, "%s", metric);
  const char *dash = strrchr(metric, '-');
  if (!dash || !dash[1]) return 1;
  for (const char *p = dash + 1; *p; p++)
    if (!isdigit((unsigned char)*p)) return 1;
  size_t len = (size_t)(dash - metric);
  if (len < n) base[len] = 0;
  return atoi(dash + 1);
}

series *results_series(const results *r, int *count) {
  series *s = NULL;
  int ns = 0;
  /* order: by job, then first appearance */
  for (int j = 0; j < r->njob; j++) {
    for (size_t i = 0; i < r->nsample; i++) {
      const sample *x = &r->samples[i];
      if (x->job != j) continue;
      int k;
      for (k = 0; k < ns; k++)
        if (s[k].job == j && !strcmp(s[k].metric, x->metric) && !strcmp(s[k].unit, x->unit))
          break;
      if (k == ns) {
        s = xrealloc(s, (size_t)(ns + 1) * sizeof *s);
        s[ns].job = j;
        s[ns].metric = x->metric;
        s[ns].unit = x->unit;
        s[ns].v = xrealloc(NULL, (size_t)r->nalloc * sizeof *s[ns].v);
        s[ns].n = xrealloc(NULL, (size_t)r->nalloc * sizeof *s[ns].n);
        for (int a = 0; a < r->nalloc; a++) {
          s[ns].v[a] = NULL;
          s[ns].n[a] = 0;
        }
        ns++;
      }
      series *t = &s[k];
      t->v[x->alloc] = xrealloc(t->v[x->alloc], (size_t)(t->n[x->alloc] + 1) * sizeof(double));
      t->v[x->alloc][t->n[x->alloc]++] = x->value;
    }
  }
  *count = ns;
  return s;
}

void results_free_series(series *s, int count, int nalloc) {
  for (int k = 0; k < count; k++) {
    for (int a = 0; a < nalloc; a++) free(s[k].v[a]);
    free(s[k].v);
    free(s[k].n);
  }
  free(s);
}

/* ---- results.tsv ------------------------------------------------------ */

static void put_field(FILE *f, const char *s) {
  if (!s || !*s) {
    fputc('-', f);
    return;
  }
  for (; *s; s++) fputc((*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static const char *kind_name(job_kind k) {
  static const char *n[] = {"mallocbench", "startup", "scaling", "commit", "fastpath", "replay", "app"};
  return n[k];
}

int results_save(const results *r, const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  fprintf(f, "# lithe-bench results v1 (see docs/runner.md)\n");
  fprintf(f, "meta\truns\t%d\nmeta\tquick\t%d\nmeta\tmedian\t%d\nmeta\tbudget\t%g\n", r->runs,
          r->quick, r->median, r->budget);
  fputs("meta\tcommand\t", f);
  put_field(f, r->command);
  fputs("\nmeta\tstarted\t", f);
  put_field(f, r->started);
  fputs("\nmeta\thost\t", f);
  put_field(f, r->host);
  /* the conditions: one "meta env" line per report line */
  if (r->env) {
    const char *p = r->env;
    while (*p) {
      size_t n = strcspn(p, "\n");
      fprintf(f, "\nmeta\tenv\t%.*s", (int)n, p);
      p += n;
      if (*p) p++;
    }
  }
  fputs("\nmeta\tload_end\t", f);
  put_field(f, r->load_end);
  fputc('\n', f);
  for (int a = 0; a < r->nalloc; a++) {
    const allocator *x = &r->allocs[a];
    fputs("alloc\t", f);
    put_field(f, x->name);
    fputc('\t', f);
    put_field(f, x->path);
    fprintf(f, "\t%s\t", x->available ? "ok" : "missing");
    put_field(f, x->why);
    const char *more[] = {x->origin, x->release, x->package, x->twin};
    for (int k = 0; k < 4; k++) {
      fputc('\t', f);
      put_field(f, more[k]);
    }
    fputc('\n', f);
  }
  for (int j = 0; j < r->njob; j++) {
    const job *x = &r->jobs[j];
    fputs("job\t", f);
    put_field(f, x->name);
    fprintf(f, "\t%s\t%s\t", kind_name(x->kind), x->missing ? "missing" : "ok");
    put_field(f, x->why);
    fputc('\n', f);
  }
  for (size_t i = 0; i < r->nsample; i++) {
    const sample *x = &r->samples[i];
    fputs("sample\t", f);
    put_field(f, r->jobs[x->job].name);
    fputc('\t', f);
    put_field(f, r->allocs[x->alloc].name);
    fprintf(f, "\t%d\t", x->run);
    put_field(f, x->metric);
    fputc('\t', f);
    put_field(f, x->unit);
    fprintf(f, "\t%.17g\n", x->value);
  }
  static const char *evn[] = {"fail", "skip", "note", "rss"};
  for (size_t i = 0; i < r->nevent; i++) {
    const event *e = &r->events[i];
    fprintf(f, "%s\t", evn[e->kind]);
    put_field(f, r->jobs[e->job].name);
    fputc('\t', f);
    put_field(f, r->allocs[e->alloc].name);
    fprintf(f, "\t%d\t", e->run);
    put_field(f, e->text);
    fputc('\n', f);
  }
  if (fclose(f) != 0) return -1;
  return rename(tmp, path);
}

/* split a line in place on tabs; "-" fields become "" */
static int split(char *line, char **fld, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    fld[n++] = p;
    char *t = strchr(p, '\t');
    if (!t) break;
    *t = 0;
    p = t + 1;
  }
  for (int i = 0; i < n; i++)
    if (!strcmp(fld[i], "-")) fld[i] = "";
  return n;
}

static int find_job(const results *r, const char *name) {
  for (int j = 0; j < r->njob; j++)
    if (!strcmp(r->jobs[j].name, name)) return j;
  return -1;
}

static int find_alloc(const results *r, const char *name) {
  for (int a = 0; a < r->nalloc; a++)
    if (!strcmp(r->allocs[a].name, name)) return a;
  return -1;
}

int results_load(results *r, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int lineno = 0, bad = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (!len || line[0] == '#') continue;
    char *fl[12];
    int n = split(line, fl, 12);
    if (!strcmp(fl[0], "meta") && n >= 3) {
      if (!strcmp(fl[1], "runs")) r->runs = atoi(fl[2]);
      else if (!strcmp(fl[1], "quick")) r->quick = atoi(fl[2]);
      else if (!strcmp(fl[1], "budget")) r->budget = atof(fl[2]);
      else if (!strcmp(fl[1], "median")) { /* the flag given now wins */ }
      else if (!strcmp(fl[1], "command")) r->command = xstrdup(fl[2]);
      else if (!strcmp(fl[1], "started")) r->started = xstrdup(fl[2]);
      else if (!strcmp(fl[1], "host")) r->host = xstrdup(fl[2]);
      else if (!strcmp(fl[1], "load_end")) r->load_end = *fl[2] ? xstrdup(fl[2]) : NULL;
      else if (!strcmp(fl[1], "env")) {
        char *e = r->env ? xasprintf("%s%s\n", r->env, fl[2]) : xasprintf("%s\n", fl[2]);
        free(r->env);
        r->env = e;
      }
    } else if (!strcmp(fl[0], "alloc") && n >= 5) {
      r->allocs = xrealloc(r->allocs, (size_t)(r->nalloc + 1) * sizeof *r->allocs);
      allocator *a = &r->allocs[r->nalloc++];
      a->name = xstrdup(fl[1]);
      a->path = *fl[2] ? xstrdup(fl[2]) : NULL;
      a->available = !strcmp(fl[3], "ok");
      a->why = *fl[4] ? xstrdup(fl[4]) : NULL;
      char **more[] = {&a->origin, &a->release, &a->package, &a->twin};
      for (int k = 0; k < 4; k++) *more[k] = n > 5 + k && *fl[5 + k] ? xstrdup(fl[5 + k]) : NULL;
    } else if (!strcmp(fl[0], "job") && n >= 5) {
      r->jobs = xrealloc(r->jobs, (size_t)(r->njob + 1) * sizeof *r->jobs);
      job *j = &r->jobs[r->njob++];
      memset(j, 0, sizeof *j);
      j->name = xstrdup(fl[1]);
      j->kind = JOB_MALLOCBENCH;
      for (int k = 0; k <= JOB_APP; k++)
        if (!strcmp(fl[2], kind_name((job_kind)k))) j->kind = (job_kind)k;
      j->missing = strcmp(fl[3], "ok") != 0;
      j->why = *fl[4] ? xstrdup(fl[4]) : NULL;
    } else if (!strcmp(fl[0], "sample") && n >= 7) {
      int j = find_job(r, fl[1]), a = find_alloc(r, fl[2]);
      if (j < 0 || a < 0) { bad++; continue; }
      results_add_sample(r, j, a, atoi(fl[3]), fl[4], fl[5], strtod(fl[6], NULL));
    } else if ((!strcmp(fl[0], "fail") || !strcmp(fl[0], "skip") || !strcmp(fl[0], "note") ||
                !strcmp(fl[0], "rss")) &&
               n >= 5) {
      int j = find_job(r, fl[1]), a = find_alloc(r, fl[2]);
      if (j < 0 || a < 0) { bad++; continue; }
      event_kind k = fl[0][0] == 'f' ? EV_FAIL : fl[0][0] == 's' ? EV_SKIP : fl[0][0] == 'r' ? EV_RSS : EV_NOTE;
      results_add_event(r, j, a, atoi(fl[3]), k, fl[4]);
    } else {
      bad++;
    }
  }
  free(line);
  fclose(f);
  if (bad) fprintf(stderr, "lithe-bench: %s: %d unreadable line(s) ignored\n", path, bad);
  return 0;
}
