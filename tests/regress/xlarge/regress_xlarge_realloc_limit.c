/* SPDX-License-Identifier: MIT */
/* regress_xlarge_realloc_limit — an xlarge realloc that moves must return
 * NULL with the old block intact when memory runs out, never abort.
 *
 * Growing an xlarge block (its own mapping) that cannot grow in place moves
 * it with mremap; the new address then needs its pagemap entry, and the
 * pagemap piece holding it (64 KiB, read/write) may not be committed yet.
 * Before the fix lithe committed it after the move, and when that failed
 * (a data or address-space limit reached by the move itself) it died with
 * "lithe: fatal: pagemap commit failed after mremap". Now the destination
 * is reserved and its pagemap piece committed before anything moves.
 *
 * In a child: a 64 MiB block, a guard page right after it (so it must
 * move), RLIMIT_DATA set to the current data size + the growth + 16 KiB
 * (the move fits, the 64 KiB pagemap piece after it does not), then
 * realloc to 256 MiB: NULL + ENOMEM with the old contents intact, or a
 * moved block with the contents copied; never a crash. Exit 77 if the
 * kernel does not enforce RLIMIT_DATA. */
#include "testutil.h"
#include <malloc.h>
#include <sys/mman.h>

#define OLD (64 * MiB)
#define NEW (256 * MiB)

static void child(void *arg) {
  (void)arg;
  char *p = malloc(OLD);
  if (!p) _exit(2);
  size_t usable = malloc_usable_size(p);
  uint64_t seed = tu_seed(p, OLD);
  tu_fill(p, OLD, seed);
  /* The guard fails with EEXIST if something is there already: fine too. */
  mmap(p + usable, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

  tu_limit_data_or_skip((NEW - usable) + 16 * 1024);

  errno = 0;
  char *q = realloc(p, NEW);
  int err = errno;
  struct rlimit rl;
  getrlimit(RLIMIT_DATA, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_DATA, &rl);
  if (q == NULL) {
    long bad = tu_check(p, OLD, seed);
    printf("realloc(%p, 256 MiB) = NULL, errno %d; old block %s\n", (void *)p, err,
           bad < 0 ? "intact" : "damaged");
    fflush(stdout);
    _exit(bad < 0 && err == ENOMEM ? 0 : 5);
  }
  long bad = tu_check(q, OLD, seed);
  printf("realloc(%p, 256 MiB) = %p (moved); contents %s\n", (void *)p, (void *)q,
         bad < 0 ? "kept" : "lost");
  fflush(stdout);
  free(q);
  _exit(bad < 0 ? 0 : 6);
}

int main(void) {
  tu_require_lithe();
  static tu_child r;
  if (tu_run_fn_skipped(&r, child, NULL, 60, "this kernel does not enforce RLIMIT_DATA")) return 77;
  CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "child status 0x%x", r.status);
  CHECKF(!strstr(r.err, "lithe:"), "lithe reported: %s", r.err);
  return 0;
}
