/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "common.h"
#include "memend.h"
#include "procstatus.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

double bench_tick_hz(int ms) {
  struct timespec req = {ms / 1000, (long)(ms % 1000) * 1000000L};
  uint64_t n0 = bench_now_ns(), t0 = bench_ticks();
  nanosleep(&req, NULL);
  uint64_t n1 = bench_now_ns(), t1 = bench_ticks();
  if (n1 == n0) return 1e9;
  return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
}

int bench_read_status(bench_status_t *st) {
  char buf[8192];
  if (!procstatus_read(buf, sizeof buf)) return -1;
  st->vm_hwm = procstatus_kb(buf, "VmHWM");
  st->vm_rss = procstatus_kb(buf, "VmRSS");
  st->vm_data = procstatus_kb(buf, "VmData");
  st->rss_anon = procstatus_kb(buf, "RssAnon");
  st->rss_file = procstatus_kb(buf, "RssFile");
  st->rss_shmem = procstatus_kb(buf, "RssShmem");
  return 0;
}

long bench_peak_kb(const bench_status_t *st) {
  if (st->vm_hwm < 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
  }
  long v = st->vm_hwm;
  if (st->rss_file > 0) v -= st->rss_file;
  if (st->rss_shmem > 0) v -= st->rss_shmem;
  return v;
}

long bench_end_kb(const bench_status_t *st) {
  if (st->rss_anon >= 0) return st->rss_anon;
  long v = st->vm_rss;
  if (st->rss_file > 0) v -= st->rss_file;
  if (st->rss_shmem > 0) v -= st->rss_shmem;
  return v;
}

long bench_minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

int bench_reset_peak(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t r = write(fd, "5", 1);
  close(fd);
  return r == 1 ? 0 : -1;
}

const char *bench_release(void) { return memend_release(); }
const char *bench_malloc_from(void) { return memend_malloc_from(); }
void bench_release_init(void) { memend_init(); }
long bench_pause_ms(long given) { return memend_pause_ms(given); }
void bench_print_release(const char *call, long pause, long unassisted_kb, char *field, size_t n) {
  memend_print(call, pause, unassisted_kb, field, n);
}
void bench_sleep_ms(long ms) { memend_pause(ms); }

void *bench_map(size_t bytes) {
  if (bytes == 0) bytes = 1;
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) bench_die("mmap(%zu) failed: %s", bytes, strerror(errno));
  return p;
}

void bench_unmap(void *p, size_t bytes) {
  if (p) munmap(p, bytes ? bytes : 1);
}

int bench_ncpu(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void bench_die(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  size_t n = strlen(buf);
  if (n < sizeof buf - 1) buf[n++] = '\n';
  ssize_t w = write(2, buf, n);
  (void)w;
  exit(2);
}

const char *bench_opt(int argc, char **argv, int *i, const char *name) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n] == 0) {
    if (*i + 1 >= argc) bench_die("option %s needs a value", name);
    return argv[++*i];
  }
  return NULL;
}
