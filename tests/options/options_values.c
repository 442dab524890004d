/* SPDX-License-Identifier: MIT */
/* options_values — every option's value is parsed by one parser, and a
 * refused one is said on stderr with what is used instead.
 *
 * A table over every LITHE_* option with good, bad, empty, negative,
 * overflowing and suffixed values.  Each row runs this program again with
 * the value set (and LITHE_VERBOSE=1, which prints each option's value
 * and source): a refused value must print "lithe: NAME=VALUE refused"
 * even so, and the option must show its default; an accepted one must
 * print no refusal and show the value taken.  At b49eda9
 * LITHE_PURGE_DELAY_MS=abc became 0, LITHE_MEMORY_LIMIT=-1 no limit,
 * LITHE_ARENA_SIZE=17592186044480m 64 MiB (wrapped), LITHE_PROF=yes off,
 * and LITHE_ON_ERROR=continue abort, all without a word. */
#include "testutil.h"

typedef struct {
  const char *name, *value;
  bool refused;
  const char *shown; /* LITHE_VERBOSE's "lithe: option NAME=shown (" */
} row_t;

static const row_t rows[] = {
    {"LITHE_PURGE_DELAY_MS", "250", false, "250"},
    {"LITHE_PURGE_DELAY_MS", "250ms", false, "250"},
    {"LITHE_PURGE_DELAY_MS", "2s", false, "2000"},
    {"LITHE_PURGE_DELAY_MS", "-1", false, "-1"},
    {"LITHE_PURGE_DELAY_MS", "0", false, "0"},
    {"LITHE_PURGE_DELAY_MS", "abc", true, "1000"},
    {"LITHE_PURGE_DELAY_MS", "10x", true, "1000"},
    {"LITHE_PURGE_DELAY_MS", "1e3", true, "1000"},
    {"LITHE_PURGE_DELAY_MS", "", true, "1000"},
    {"LITHE_PURGE_DELAY_MS", "-2", true, "1000"},
    {"LITHE_PURGE_DELAY_MS", "99999999999999999999", true, "1000"},
    {"LITHE_ARENA_SIZE", "4m", false, "4194304"},
    {"LITHE_ARENA_SIZE", "128MiB", false, "134217728"},
    {"LITHE_ARENA_SIZE", "3m", true, "67108864"},
    {"LITHE_ARENA_SIZE", "0", true, "67108864"},
    {"LITHE_ARENA_SIZE", "-1", true, "67108864"},
    {"LITHE_ARENA_SIZE", "", true, "67108864"},
    {"LITHE_ARENA_SIZE", "17592186044480m", true, "67108864"},
    {"LITHE_MEMORY_LIMIT", "64MiB", false, "64MiB"},
    {"LITHE_MEMORY_LIMIT", "1g", false, "1g"},
    {"LITHE_MEMORY_LIMIT", "0", false, "0"},
    {"LITHE_MEMORY_LIMIT", "-1", true, "cgroup"},
    {"LITHE_MEMORY_LIMIT", "1.5g", true, "cgroup"},
    {"LITHE_MEMORY_LIMIT", "5", true, "cgroup"},
    {"LITHE_MEMORY_LIMIT", "17179869185g", true, "cgroup"},
    {"LITHE_MEMORY_LIMIT", "", true, "cgroup"},
    {"LITHE_MEMORY_LIMIT_HARD", "yes", false, "yes"},
    {"LITHE_MEMORY_LIMIT_HARD", "2", true, "0"},
    {"LITHE_PURGE_THREAD", "on", false, "1"},
    {"LITHE_PURGE_THREAD", "auto", false, "auto"},
    {"LITHE_PURGE_THREAD", "0", false, "0"},
    {"LITHE_PURGE_THREAD", "maybe", true, "auto"},
    {"LITHE_HUGEPAGES", "true", false, "1"},
    {"LITHE_HUGEPAGES", "", true, "0"},
    {"LITHE_ON_ERROR", "ignore", false, "ignore"},
    {"LITHE_ON_ERROR", "continue", true, "abort"},
    {"LITHE_SHOW_STATS", "0", false, "0"},
    {"LITHE_SHOW_STATS", "yaml", true, "0"},
    {"LITHE_PROF", "yes", false, "yes"},
    {"LITHE_PROF", "2", true, "0"},
    {"LITHE_SHOW_STATS", "json", false, "json"},
    {"LITHE_LEAKS", "no", false, "no"},
    {"LITHE_LEAKS", "sure", true, "0"},
    {"LITHE_PROF_PEAK", "off", false, "off"},
    {"LITHE_PROF_PEAK", "x", true, "0"},
    {"LITHE_PROF_SAMPLE", "4k", false, "4k"},
    {"LITHE_PROF_SAMPLE", "-1", true, "512k"},
    {"LITHE_PROF_SAMPLE", "0", true, "512k"},
    {"LITHE_PROF_SAMPLE", "99999999999999999999999", true, "512k"},
    {"LITHE_PROF_UNWIND", "libgcc", false, "libgcc"},
    {"LITHE_PROF_UNWIND", "bogus", true, "fast"},
    {"LITHE_PROF_PREFIX", "", true, "lithe"},
    {"LITHE_PROF_INTERVAL", "64m", false, "64m"},
    {"LITHE_PROF_INTERVAL", "-1", true, "0"},
    {"LITHE_PROF_TIME", "30s", false, "30s"},
    {"LITHE_PROF_TIME", "1h", true, "0"},
    {"LITHE_PROF_SIGNAL", "usr2", false, "usr2"},
    {"LITHE_PROF_SIGNAL", "term", true, "0"},
    {"LITHE_CGROUP_ROOT", "", true, "/sys/fs/cgroup"},
};

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) { /* the child: lithe has read its options at load */
    void *p = malloc(100);
    free(p);
    return 0;
  }
  tu_require_lithe();
  static tu_child r;
  int bad = 0, n = (int)(sizeof rows / sizeof rows[0]);
  for (int i = 0; i < n; i++) {
    const row_t *w = &rows[i];
    char set[256], refusal[256], shown[256];
    snprintf(set, sizeof set, "%s=%s", w->name, w->value);
    snprintf(refusal, sizeof refusal, "lithe: %s=%s refused (", w->name, w->value);
    snprintf(shown, sizeof shown, "lithe: option %s=%s (", w->name, w->shown ? w->shown : "");
    /* the options this row does not set are unset; no profile is written */
    const char *env[] = {set, "LITHE_VERBOSE=1",
                         "LITHE_PROF_PREFIX=/tmp/lithe-options-values", NULL};
    if (!strcmp(w->name, "LITHE_PROF_PREFIX")) env[2] = NULL;
    char *argv2[] = {argv[0], "child", NULL};
    CHECK(tu_run_exec(&r, argv2, env, 30) == 0);
    bool said = strstr(r.err, refusal) != NULL;
    bool shows = !w->shown || strstr(r.err, shown) != NULL;
    bool ok = !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && said == w->refused && shows;
    printf("%-26s %-26s %s%s\n", w->name, w->value[0] ? w->value : "(empty)",
           w->refused ? "refused" : "taken", ok ? "" : "  <-- WRONG");
    if (!ok) {
      printf("  expected %s%s%s; stderr:\n%s", w->refused ? "a refusal" : "no refusal",
             w->shown ? " and " : "", w->shown ? shown : "", r.err);
      bad++;
    }
  }
  CHECKF(bad == 0, "%d of %d option values handled wrongly", bad, n);
  printf("options_values: %d values, each taken or refused aloud\n", n);
  return 0;
}
