/* SPDX-License-Identifier: MIT */
/* regress_pagemap_sparse — a sparse pagemap level whose next piece's place
 * is taken must still grow (white box: linked with liblithe.a).
 *
 * Under a small RLIMIT_AS a pagemap level's 64 MiB read-only reservation
 * is refused and the level goes sparse: each 64 KiB piece in use is mapped
 * at its place relative to the first.  The kernel maps top down, so the
 * first piece lands just below the newest mapping and the place of the
 * piece above it is usually taken.  Before the fix pagemap_ensure then
 * failed for that piece for good, and every allocation that needed it
 * returned NULL (fault_inject saw `malloc(20 MiB)` fail twice in a row).
 * Now the level is moved: to a dense reservation when one fits again, else
 * to a new sparse base where every piece in use fits.
 *
 * Each case takes a level no one uses, makes it sparse under RLIMIT_AS =
 * VmSize + 16 MiB, writes an entry, maps a block of its own at the place
 * of the next piece (unless something is there already), and then asks
 * for the next piece: with the limit still on (the level moves to another
 * sparse base) and with it lifted (the level becomes dense).  Both
 * entries must then be found, and the blocking mapping left untouched. */
#include "testutil.h"
#include "internal.h"

#include <sys/mman.h>
#include <sys/resource.h>

#define PIECE_ENTRIES (L2_PIECE / sizeof(span_t *))
#define PIECE_SPAN (PIECE_ENTRIES * PAGE_SIZE) /* address space one piece maps: 64 MiB */

static size_t vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  CHECK(f != NULL);
  char line[256];
  size_t kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  fclose(f);
  CHECK(kb > 0);
  return kb * 1024;
}

static void limit_as(bool on) {
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
  rl.rlim_cur = on ? vm_size() + 16 * 1024 * 1024 : rl.rlim_max;
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
}

static bool mapped(void *p) {
  unsigned char v;
  return mincore(p, 4096, &v) == 0 || errno != ENOMEM;
}

static size_t unused_level(void) {
  for (size_t i1 = 1; i1 < L1_COUNT; i1++)
    if (!pagemap_level(i1)) return i1;
  CHECK(!"no unused pagemap level");
  return 0;
}

static span_t fake[2];

static void run_case(bool lift) {
  const char *name = lift ? "limit lifted" : "limit kept";
  size_t i1 = unused_level(), k = 5;
  char *a = (char *)(((uintptr_t)i1 << L1_SHIFT) + k * PIECE_SPAN), *b = a + PIECE_SPAN;
  limit_as(true);
  CHECKF(pagemap_ensure(a, PAGE_SIZE), "%s: first piece of level %zu", name, i1);
  CHECKF(pagemap_level_sparse(i1), "%s: level %zu is dense under RLIMIT_AS: the test needs it sparse", name, i1);
  pagemap_set_one(a, &fake[0]);
  span_t **l2 = pagemap_level(i1);
  char *place = (char *)&l2[(k + 1) * PIECE_ENTRIES];
  char *blocker = NULL;
  if (!mapped(place)) {
    blocker = mmap(place, L2_PIECE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CHECKF(blocker == place, "%s: mmap(%p) = %p", name, (void *)place, (void *)blocker);
    memset(blocker, 0xab, L2_PIECE);
  }
  if (lift) limit_as(false);
  bool ok = pagemap_ensure(b, PAGE_SIZE);
  CHECKF(ok, "%s: pagemap_ensure(%p) failed: the next piece's place %p is taken (%s)", name, (void *)b,
         (void *)place, blocker ? "by the test's mapping" : "already");
  pagemap_set_one(b, &fake[1]);
  span_t *sa = pagemap_lookup(a), *sb = pagemap_lookup(b);
  CHECKF(sa == &fake[0] && sb == &fake[1], "%s: lookups %p %p, expected %p %p", name, (void *)sa, (void *)sb,
         (void *)&fake[0], (void *)&fake[1]);
  CHECKF(pagemap_level_sparse(i1) == !lift, "%s: level %zu sparse = %d", name, i1, (int)pagemap_level_sparse(i1));
  CHECKF(pagemap_level(i1) != l2, "%s: level %zu not moved", name, i1);
  for (size_t i = 0; blocker && i < L2_PIECE; i++)
    CHECKF((unsigned char)blocker[i] == 0xab, "%s: the blocking mapping was written at +%zu: %#x", name, i,
           (unsigned char)blocker[i]);
  limit_as(false);
  printf("%s: level %zu sparse at %p, next piece's place %p taken (%s); moved to %p (%s), both entries found\n",
         name, i1, (void *)l2, (void *)place, blocker ? "test's mapping" : "already", (void *)pagemap_level(i1),
         lift ? "dense" : "sparse");
  if (blocker) munmap(blocker, L2_PIECE);
}

int main(void) {
  run_case(false);
  run_case(true);
  return 0;
}
