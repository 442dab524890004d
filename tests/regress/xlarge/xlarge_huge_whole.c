/* SPDX-License-Identifier: MIT */
/* xlarge_huge_whole — churned big blocks stay on huge pages.
 *
 * With LITHE_HUGEPAGES=1 (CTest sets it), malloc's fresh xlarge mappings
 * of 2 MiB or more are advised
 * MADV_HUGEPAGE, and the xlarge cache cuts and moves its ranges at 2 MiB
 * multiples so that mremap moves their huge pages whole (large.c, "Huge
 * pages").  A cache that cut ranges at any 8 KiB multiple split them into
 * 4 KiB entries within a few hundred ops (AnonHugePages 125 MB of 388 MB
 * resident, then 35 MB; kept whole: 200-217 MB steady), and a memset over
 * reused 4 KiB pages runs a quarter slower here.  The test churns a live
 * set of 12 blocks of 2-12 MiB (300 ops, each block written whole) and
 * asks that at least half of the live bytes lie on huge pages.  Skipped
 * where transparent huge pages are off, and where the kernel could not
 * supply a huge page at some fault (thp_fault_fallback grew): then the
 * figure says nothing about lithe. */
#include "testutil.h"

#define LIVE 12
#define OPS 300

static long vmstat(const char *key) {
  FILE *f = fopen("/proc/vmstat", "r");
  if (!f) return -1;
  char name[128];
  long v, got = -1;
  while (fscanf(f, "%127s %ld", name, &v) == 2)
    if (!strcmp(name, key)) got = v;
  fclose(f);
  return got;
}

static long anon_huge_kb(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

int main(void) {
  tu_require_lithe();
  char mode[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    if (!fgets(mode, sizeof mode, f)) mode[0] = 0;
    fclose(f);
  }
  if (!strstr(mode, "[always]") && !strstr(mode, "[madvise]")) {
    printf("SKIP: transparent huge pages are off here (enabled: %s)\n", mode[0] ? mode : "unknown");
    return 77;
  }
  long fallback0 = vmstat("thp_fault_fallback");
  uint64_t rng = 42;
  char *slot[LIVE];
  size_t len[LIVE];
  for (int i = 0; i < LIVE; i++) {
    len[i] = 2 * MiB + (size_t)(tu_rand(&rng) % (10 * 256)) * 4096;
    slot[i] = malloc(len[i]);
    CHECK(slot[i] != NULL);
    memset(slot[i], 0x11, len[i]);
  }
  for (int k = 0; k < OPS; k++) {
    int i = (int)(tu_rand(&rng) % LIVE);
    free(slot[i]);
    len[i] = 2 * MiB + (size_t)(tu_rand(&rng) % (10 * 256)) * 4096;
    slot[i] = malloc(len[i]);
    CHECK(slot[i] != NULL);
    memset(slot[i], 0x22, len[i]);
  }
  size_t live = 0;
  for (int i = 0; i < LIVE; i++) live += len[i];
  long huge = anon_huge_kb(), fallback = vmstat("thp_fault_fallback") - fallback0;
  printf("%d blocks live, %zu kB; AnonHugePages %ld kB (%.0f %%); thp_fault_fallback +%ld\n", LIVE,
         live / 1024, huge, 100.0 * (double)huge * 1024 / (double)live, fallback);
  if (huge < 0) {
    printf("SKIP: no AnonHugePages in /proc/self/smaps_rollup\n");
    return 77;
  }
  if (fallback > 0 && huge * 1024 < (long)(live / 2)) {
    printf("SKIP: the kernel fell back to 4 KiB pages at %ld faults\n", fallback);
    return 77;
  }
  CHECKF(huge * 1024 >= (long)(live / 2), "only %ld kB of %zu kB live on huge pages", huge, live / 1024);
  for (int i = 0; i < LIVE; i++) free(slot[i]);
  return 0;
}
