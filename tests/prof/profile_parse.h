/* SPDX-License-Identifier: MIT */
/* profile_parse.h — read a heap profile that lithe wrote (the gperftools
 * heap_v2 text format) as google-pprof reads it; for the prof_* tests. */
#ifndef PROFILE_PARSE_H
#define PROFILE_PARSE_H
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* the scaled in-use bytes of the profile parse() read last */
static double profile_inuse_est;

/* Parse a profile: returns stack lines; *alloc_est = scaled alloc bytes. */
static inline int parse(const char *path, double *alloc_est, int *has_maps) {
  FILE *f = fopen(path, "r");
  CHECKF(f != NULL, "cannot open %s: %s", path, strerror(errno));
  char line[8192];
  unsigned long rate = 0;
  CHECK(fgets(line, sizeof line, f) != NULL);
  char *at = strstr(line, "@ heap_v2/");
  CHECKF(strncmp(line, "heap profile:", 13) == 0 && at, "%s: bad header: %s", path, line);
  rate = strtoul(at + 10, NULL, 10);
  int stacks = 0;
  *alloc_est = 0;
  profile_inuse_est = 0;
  *has_maps = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long n1, s1, n2, s2;
    if (strncmp(line, "MAPPED_LIBRARIES:", 17) == 0) { *has_maps = 1; break; }
    if (sscanf(line, " %lu: %lu [ %lu: %lu] @", &n1, &s1, &n2, &s2) == 4) {
      stacks++;
      if (n2) *alloc_est += s2 / (1 - exp(-((double)s2 / n2) / rate)); /* as google-pprof */
      if (n1) profile_inuse_est += s1 / (1 - exp(-((double)s1 / n1) / rate));
    }
  }
  fclose(f);
  return stacks;
}

#endif
