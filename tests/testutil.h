/* SPDX-License-Identifier: MIT */
/* testutil.h — tiny helpers shared by lithe's tests (header only).
 *
 *   CHECK(cond), CHECKF(cond, fmt, ...)  fail with file:line and exit(1)
 *   tu_status_kb("VmRSS")                 a /proc/self/status figure, in KiB
 *   tu_purge_delay_ms, tu_sleep_ms        the test's purge delay; a pause
 *   tu_free_32mib_of_runs                 free enough to start the purge thread
 *   tu_run_exec / tu_run_fn               run a child (exec'd or forked) with
 *                                         stdout/stderr captured, a timeout
 *                                         and its wait status
 *   tu_fill / tu_check                    fill and verify a block with a
 *                                         pattern derived from a seed
 *   tu_require_lithe()                    prove that lithe is the allocator
 *
 * Built with HAVE_LITHE defined, tests link lithe and assert lithe-only
 * behaviour too; without it they check any correct malloc (the system one).
 * Nothing here allocates with malloc except where noted, so the figures the
 * tests measure are not disturbed by the helpers. */
#ifndef LITHE_TESTUTIL_H
#define LITHE_TESTUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LITHE
#include <sys/mman.h> /* memfd_create: the JSON statistics below */
#include "lithe.h"
#endif
#include "procstatus.h" /* tools/: shared with the benchmarks */

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes, spelled as src/internal.h spells them: the same tokens, so a
 * white-box test that includes both sees one definition. */
#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* ---- failing ---------------------------------------------------------- */

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,      \
              #cond);                                                        \
      fflush(NULL);                                                          \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#define CHECKF(cond, ...)                                                    \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__,      \
              #cond);                                                        \
      fprintf(stderr, __VA_ARGS__);                                          \
      fputc('\n', stderr);                                                   \
      fflush(NULL);                                                          \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#define FAIL(...) CHECKF(0, __VA_ARGS__)

/* ---- time ------------------------------------------------------------- */

static inline double tu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- /proc/self/status ------------------------------------------------ */

/* The figure after "key:" in /proc/self/status, in KiB; -1 if absent.
 * Reads with a stack buffer: no allocation. */
/* Minor page faults so far (each a fresh page touched: ~13-16 us here). */
static inline long tu_minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static inline long tu_status_kb(const char *key) {
  char buf[8192];
  if (!procstatus_read(buf, sizeof buf)) return -1;
  return procstatus_kb(buf, key);
}

/* LITHE_PURGE_DELAY_MS as the test's environment sets it (the purge
 * tests need one above 0; 1000, lithe's default, if unset). */
static inline long tu_purge_delay_ms(void) {
  const char *d = getenv("LITHE_PURGE_DELAY_MS");
  long delay = d ? atol(d) : 1000;
  CHECKF(delay > 0, "needs LITHE_PURGE_DELAY_MS > 0 (got %s)", d ? d : "unset");
  return delay;
}

static inline void tu_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* 32 MiB of page runs (64 blocks of 512 KiB, written) freed: enough to
 * start the purge thread (1 MiB waiting), which a later call that holds
 * no lock of lithe's does */
static inline void tu_free_32mib_of_runs(void) {
  static void *b[64];
  for (int i = 0; i < 64; i++) {
    b[i] = malloc((size_t)512 << 10);
    CHECK(b[i] != NULL);
    memset(b[i], 0x5a, (size_t)512 << 10);
  }
  for (int i = 0; i < 64; i++) free(b[i]);
}

/* Frees n blocks of mib[i] MiB, each written first and kept apart from
 * the next by a live 2 MiB block (sep[i], the caller frees them), so that
 * no two of them are one mapping: lithe's xlarge cache then holds n
 * ranges, each of one of those sizes. */
static inline void tu_free_apart(const size_t *mib, int n, char **sep) {
  char *p[16]; /* all made before any is freed: none reuses another */
  CHECK(n <= 16);
  for (int i = 0; i < n; i++) {
    p[i] = (char *)malloc(mib[i] << 20);
    sep[i] = (char *)malloc((size_t)2 << 20);
    CHECK(p[i] != NULL && sep[i] != NULL);
    memset(p[i], 0xAA, mib[i] << 20);
  }
  for (int i = 0; i < n; i++) free(p[i]);
}

/* Prints the mappings of this process holding more than min_kb of RSS
 * (from /proc/self/smaps): where the memory is, when a figure is too high. */
static inline void tu_print_rss_map(long min_kb) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[512], head[512] = "";
  fprintf(stderr, "mappings with Rss >= %ld KiB:\n", min_kb);
  while (fgets(line, sizeof line, f)) {
    long kb;
    if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
      if (kb >= min_kb) fprintf(stderr, "  %8ld KiB  %s", kb, head);
    } else if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
      snprintf(head, sizeof head, "%s", line); /* "start-end perms offset dev inode path" */
    }
  }
  fclose(f);
}

/* ---- patterns ---------------------------------------------------------- */

static inline uint64_t tu_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x | 1; /* never all zero, so a zeroed block never matches */
}

/* Seed for a block: derived from its address and size. */
static inline uint64_t tu_seed(const void *p, size_t n) {
  return tu_mix((uint64_t)(uintptr_t)p ^ ((uint64_t)n << 40) ^ n);
}

#define TU_K 0x9E3779B97F4A7C15ULL

/* Word i of the pattern is seed + i*K; byte j is byte j%8 of word j/8. */
static inline void tu_fill(void *p, size_t n, uint64_t seed) {
  unsigned char *b = (unsigned char *)p;
  size_t words = n / 8, i;
  uint64_t w = seed;
  for (i = 0; i < words; i++, w += TU_K) memcpy(b + i * 8, &w, 8);
  if (n % 8) memcpy(b + words * 8, &w, n % 8);
}

/* Writes bytes [from, n) of the same pattern (the prefix is left alone). */
static inline void tu_fill_from(void *p, size_t from, size_t n, uint64_t seed) {
  unsigned char *b = (unsigned char *)p;
  while (from < n && from % 8) {
    uint64_t w = seed + (uint64_t)(from / 8) * TU_K;
    b[from] = ((const unsigned char *)&w)[from % 8];
    from++;
  }
  if (from < n) tu_fill(b + from, n - from, seed + (uint64_t)(from / 8) * TU_K);
}

/* Offset of the first byte of p[0..n) that differs from the pattern, or -1. */
static inline long tu_check(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = (const unsigned char *)p;
  size_t words = n / 8, i;
  uint64_t w = seed, v;
  for (i = 0; i < words; i++, w += TU_K) {
    memcpy(&v, b + i * 8, 8);
    if (v != w) {
      for (size_t j = 0; j < 8; j++)
        if (b[i * 8 + j] != ((const unsigned char *)&w)[j]) return (long)(i * 8 + j);
    }
  }
  for (size_t j = 0; j < n % 8; j++)
    if (b[words * 8 + j] != ((const unsigned char *)&w)[j]) return (long)(words * 8 + j);
  return -1;
}

/* Index of the first non-zero byte of p[0..n), or -1. */
static inline long tu_nonzero(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, b + i, 8);
    if (v) break;
  }
  for (; i < n; i++)
    if (b[i]) return (long)i;
  return -1;
}

/* xorshift64* */
static inline uint64_t tu_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717ULL;
}

/* ---- children ---------------------------------------------------------- */

#define TU_CAP 65536
typedef struct tu_child {
  int status;     /* waitpid status                        */
  int timed_out;  /* killed by us after the timeout        */
  size_t outlen, errlen;
  char out[TU_CAP]; /* captured stdout, NUL-terminated (truncated at TU_CAP) */
  char err[TU_CAP]; /* captured stderr                                        */
} tu_child;

static inline void tu_describe(const tu_child *r, char *buf, size_t n) {
  if (r->timed_out) snprintf(buf, n, "timed out (killed)");
  else if (WIFEXITED(r->status)) snprintf(buf, n, "exit %d", WEXITSTATUS(r->status));
  else if (WIFSIGNALED(r->status))
    snprintf(buf, n, "signal %d (%s)", WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
  else snprintf(buf, n, "status 0x%x", r->status);
}

/* Reads the child's two pipes until both close, or kills it after timeout_s. */
static inline void tu__collect(tu_child *r, pid_t pid, int ofd, int efd, int timeout_s) {
  double deadline = tu_now() + timeout_s;
  r->outlen = r->errlen = 0;
  r->timed_out = 0;
  struct pollfd pf[2] = {{ofd, POLLIN, 0}, {efd, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    double left = deadline - tu_now();
    if (left <= 0) {
      kill(pid, SIGKILL);
      r->timed_out = 1;
      break;
    }
    int rc = poll(pf, 2, (int)(left * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) break;
    for (int i = 0; i < 2; i++) {
      if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char tmp[4096];
      ssize_t got = read(pf[i].fd, tmp, sizeof tmp);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        close(pf[i].fd);
        pf[i].fd = -1;
        open_fds--;
        continue;
      }
      char *dst = i == 0 ? r->out : r->err;
      size_t *len = i == 0 ? &r->outlen : &r->errlen;
      size_t room = TU_CAP - 1 - *len;
      size_t take = (size_t)got < room ? (size_t)got : room;
      memcpy(dst + *len, tmp, take);
      *len += take;
    }
  }
  for (int i = 0; i < 2; i++)
    if (pf[i].fd >= 0) close(pf[i].fd);
  r->out[r->outlen] = 0;
  r->err[r->errlen] = 0;
  /* After a SIGKILL the pipes may still be held by grandchildren: do not
   * read more, just reap. */
  while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {
  }
}

/* Sets up the child side: no core dumps, pipes on fds 1 and 2. */
static inline void tu__child_side(int op[2], int ep[2]) {
  struct rlimit rl = {0, 0};
  setrlimit(RLIMIT_CORE, &rl);
  close(op[0]);
  close(ep[0]);
  dup2(op[1], 1);
  dup2(ep[1], 2);
  close(op[1]);
  close(ep[1]);
}

/* fork with stdout/stderr piped back: 0 in the child (already wired to
 * the pipes), the pid in the parent (its write ends closed), -1 on error. */
static inline pid_t tu__spawn(int op[2], int ep[2]) {
  if (pipe(op) || pipe(ep)) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    tu__child_side(op, ep);
    return 0;
  }
  close(op[1]);
  close(ep[1]);
  return pid;
}

/* Runs argv[0] (a path) with argv, after applying env edits in the child:
 * "NAME=value" sets, "NAME" unsets. env may be NULL. Returns 0, or -1 if
 * the child could not be started. */
static inline int tu_run_exec(tu_child *r, char *const argv[], const char *const env[],
                              int timeout_s) {
  int op[2], ep[2];
  pid_t pid = tu__spawn(op, ep);
  if (pid < 0) return -1;
  if (pid == 0) {
    for (int i = 0; env && env[i]; i++) {
      const char *eq = strchr(env[i], '=');
      if (eq) {
        char name[256];
        size_t n = (size_t)(eq - env[i]);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, env[i], n);
        name[n] = 0;
        setenv(name, eq + 1, 1);
      } else {
        unsetenv(env[i]);
      }
    }
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  tu__collect(r, pid, op[0], ep[0], timeout_s);
  return 0;
}

/* Runs fn(arg) in a forked child that then exits 0 (fn may exit itself). */
static inline int tu_run_fn(tu_child *r, void (*fn)(void *), void *arg, int timeout_s) {
  int op[2], ep[2];
  pid_t pid = tu__spawn(op, ep);
  if (pid < 0) return -1;
  if (pid == 0) {
    fn(arg);
    fflush(NULL);
    _exit(0);
  }
  tu__collect(r, pid, op[0], ep[0], timeout_s);
  return 0;
}

/* In a child: RLIMIT_DATA (soft) := the data size now + allowance bytes.
 * Exits 77 when the kernel does not enforce it (a read/write mapping of
 * allowance + 1 MiB succeeds), 4 when it cannot be set. */
static inline void tu_limit_data_or_skip(size_t allowance) {
  long data_kb = tu_status_kb("VmData");
  struct rlimit rl;
  if (data_kb <= 0 || getrlimit(RLIMIT_DATA, &rl) != 0) _exit(4);
  rl.rlim_cur = (rlim_t)data_kb * 1024 + allowance;
  if (setrlimit(RLIMIT_DATA, &rl) != 0) _exit(4);
  void *probe = mmap(NULL, allowance + (1 << 20), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe != MAP_FAILED) _exit(77);
}

/* Runs fn in a child (tu_run_fn) and prints its status and output; 1 when
 * it exited 77 (the test then reports itself skipped, saying why). */
static inline int tu_run_fn_skipped(tu_child *r, void (*fn)(void *), void *arg, int timeout_s,
                                    const char *why_skip) {
  CHECK(tu_run_fn(r, fn, arg, timeout_s) == 0);
  char how[64];
  tu_describe(r, how, sizeof how);
  printf("child: %s\n%s", how, r->out);
  if (r->errlen) printf("child stderr:\n%s", r->err);
  if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 77) {
    printf("SKIP: %s\n", why_skip);
    return 1;
  }
  return 0;
}

/* Runs fn in a child (tu_run_fn), passes its output on, and requires a
 * clean exit 0 in time; `what` names it, `hint` (or "") says why that matters. */
static inline void tu_run_fn_ok(void (*fn)(void *), void *arg, int timeout_s, const char *what,
                                const char *hint) {
  static tu_child r;
  CHECK(tu_run_fn(&r, fn, arg, timeout_s) == 0);
  char how[128];
  tu_describe(&r, how, sizeof how);
  fputs(r.out, stdout);
  fputs(r.err, stderr);
  printf("%s: %s\n", what, how);
  CHECKF(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s: the child %s%s", what,
         how, hint);
}

/* Does text contain a 0x... number equal to v? (case and zero padding free) */
static inline int tu_has_hex(const char *text, uintptr_t v) {
  for (const char *s = text; (s = strstr(s, "0x")) != NULL; s += 2) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s + 2, &end, 16);
    if (end != s + 2 && errno == 0 && (uintptr_t)x == v) return 1;
  }
  return 0;
}

/* Re-executes this program as "PROG child CASE" with LITHE_ON_ERROR unset
 * (one misuse per child), prints how it ended and what it wrote. */
static inline void tu_run_self_child(tu_child *r, const char *cas, char *how, size_t howlen) {
  static char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(n > 0);
  self[n] = 0;
  char *args[] = {self, (char *)"child", (char *)cas, NULL};
  const char *env[] = {"LITHE_ON_ERROR", NULL};
  CHECK(tu_run_exec(r, args, env, 60) == 0);
  tu_describe(r, how, howlen);
  printf("%s: child %s\nstdout: %sstderr: %s\n", cas, how, r->out, r->err);
}

/* The child printed "ADDR <p>" before its misuse, and must have died by
 * SIGABRT with a report carrying "lithe: OP(", that address and KIND. */
static inline void tu_expect_report(const tu_child *r, const char *how, const char *op, const char *kind) {
  void *addr = NULL;
  CHECKF(sscanf(r->out, "ADDR %p", &addr) == 1, "no ADDR line");
  CHECKF(WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGABRT, "the misuse was let through (%s)", how);
  char want[64];
  snprintf(want, sizeof want, "lithe: %s(", op);
  CHECKF(strstr(r->err, want) && tu_has_hex(r->err, (uintptr_t)addr) && strstr(r->err, kind),
         "report must carry \"%s\", the address %p and \"%s\"", want, addr, kind);
}

/* Both: CASE run in a child, which must die by its report of KIND at OP. */
static inline void tu_child_reports(const char *cas, const char *op, const char *kind) {
  static tu_child r;
  char how[64];
  tu_run_self_child(&r, cas, how, sizeof how);
  tu_expect_report(&r, how, op, kind);
}

#ifdef HAVE_LITHE
/* ---- lithe's JSON statistics ------------------------------------------- */

/* A snapshot of lithe_stats_print_json, NUL-terminated, in a buffer that
 * the next call overwrites. */
static inline const char *tu_stats_json(void) {
  static char json[1 << 16];
  int fd = memfd_create("lithe-json", 0);
  CHECK(fd >= 0);
  lithe_stats_print_json(fd);
  ssize_t n = pread(fd, json, sizeof json - 1, 0);
  close(fd);
  CHECK(n > 0);
  json[n] = 0;
  return json;
}

/* The number after "key": inside text (a whole snapshot or one class
 * line); -1 if the key is not there. */
static inline long tu_json_field(const char *text, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(text, pat);
  return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* The class line of block size `size` in snapshot json ({"class": C,
 * ...}), copied into line; 0 if the class has no line. */
static inline int tu_json_class_line(const char *json, unsigned size, char *line, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"size\": %u,", size);
  const char *p = strstr(json, pat);
  if (!p) return 0;
  while (p > json && *p != '{') p--;
  const char *e = strchr(p, '}');
  CHECK(e != NULL);
  size_t n = (size_t)(e - p + 1) < cap - 1 ? (size_t)(e - p + 1) : cap - 1;
  memcpy(line, p, n);
  line[n] = 0;
  return 1;
}

/* Field key of the class line of block size `size` in a fresh snapshot
 * (a line without it fails the test); 0 if the class has no line. */
static inline long tu_class_field(unsigned size, const char *key) {
  char line[1024];
  if (!tu_json_class_line(tu_stats_json(), size, line, sizeof line)) return 0;
  long v = tu_json_field(line, key);
  CHECKF(v >= 0, "no \"%s\" in the %u-byte class line: %s", key, size, line);
  return v;
}
#endif

/* ---- is lithe the allocator? ------------------------------------------- */

/* Writes one byte in every 4 KiB page of [p, p+n): each page faulted in. */
static inline void tu_touch_pages(char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
}

/* A wave: n blocks of `size` bytes allocated into a[], each filled with
 * its index's low byte, then its last byte checked and all freed in
 * allocation order. */
static inline void tu_wave(void **a, int n, size_t size) {
  for (int i = 0; i < n; i++) {
    a[i] = malloc(size);
    CHECK(a[i] != NULL);
    memset(a[i], i & 0xff, size);
  }
  for (int i = 0; i < n; i++) {
    CHECK(((unsigned char *)a[i])[size - 1] == (i & 0xff));
    free(a[i]);
  }
}

/* Fails unless environment variable `name` is `want` (set by the test's
 * registration in CMake). */
static inline void tu_require_env(const char *name, const char *want) {
  const char *v = getenv(name);
  CHECKF(v && strcmp(v, want) == 0, "run with %s=%s (got %s)", name, want, v ? v : "none");
}

/* With HAVE_LITHE: fails unless lithe's counters show it served this
 * process and (for the shared library) malloc resolves to liblithe.so.
 * Without: says the system allocator is under test. */
static inline void tu_require_lithe(void) {
#ifdef HAVE_LITHE
  void *p = malloc(100); /* make sure this thread has touched the allocator */
  CHECK(p != NULL);
  lithe_stats_t st;
  memset(&st, 0, sizeof st);
  lithe_stats_get(&st);
  free(p);
  CHECKF(st.heaps_created > 0 && st.committed > 0,
         "lithe's counters are zero (heaps_created=%zu committed=%zu): "
         "malloc is not lithe's", st.heaps_created, st.committed);
#ifdef LITHE_SHARED
  Dl_info info;
  void *sym = dlsym(RTLD_DEFAULT, "malloc");
  CHECK(sym != NULL);
  CHECKF(dladdr(sym, &info) && info.dli_fname && strstr(info.dli_fname, "liblithe"),
         "malloc resolves to %s, not liblithe", info.dli_fname ? info.dli_fname : "?");
  printf("allocator: lithe (%s; malloc from %s; heaps_created=%zu committed=%zu)\n",
         lithe_version(), info.dli_fname, st.heaps_created, st.committed);
#else
  printf("allocator: lithe, statically linked (%s; heaps_created=%zu committed=%zu)\n",
         lithe_version(), st.heaps_created, st.committed);
#endif
#else
  printf("allocator: system malloc (built without lithe)\n");
#endif
  fflush(stdout);
}

#ifdef __cplusplus
}
#endif
#endif /* LITHE_TESTUTIL_H */
