/* SPDX-License-Identifier: MIT */
/* procstatus.h — read /proc/self/status without allocating (the allocator
 * under test must not see the measurement).  Shared by the benchmark
 * programs (bench/workloads) and the test suite (tests/). */
#ifndef LITHE_PROCSTATUS_H
#define LITHE_PROCSTATUS_H
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The whole file into buf (cap bytes, NUL-terminated); 0 on error. */
static inline size_t procstatus_read(char *buf, size_t cap) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len == cap - 1) break;
  }
  close(fd);
  buf[len] = 0;
  return len;
}

/* The figure after "key:" (KiB for the Vm and Rss lines); -1 if absent. */
static inline long procstatus_kb(const char *buf, const char *key) {
  size_t klen = strlen(key);
  for (const char *line = buf; line && *line;) {
    if (strncmp(line, key, klen) == 0 && line[klen] == ':') return strtol(line + klen + 1, NULL, 10);
    line = strchr(line, '\n');
    if (line) line++;
  }
  return -1;
}
#endif
