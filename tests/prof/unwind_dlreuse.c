/* SPDX-License-Identifier: MIT */
/* unwind_dlreuse — the profiler's cached unwinder (src/unwind.c) does not
 * apply a rule learnt in an unloaded library to another library loaded at
 * its address.  Two builds of one function (unwind_dlreuse_mod.c) with
 * frames of 1,000 and 3,000 bytes, the same layout: A is loaded, its
 * 1 MiB blocks sampled, unloaded; B is loaded, usually at A's address
 * and with its link_map in the block A's had (lithe gives the freed block
 * back), and sampled; 8 rounds.  Run with LITHE_PROF=1
 * LITHE_PROF_SAMPLE=64k LITHE_PROF_UNWIND=check: every stack is compared
 * with libgcc's, and a rule of A's applied to B's frame ends the stack
 * early, which aborts.  Keyed on the return address and the link_map
 * alone, the cache did that (issue 42).  77 where B never landed where A
 * was (nothing to check).
 *   unwind_dlreuse LIB_A LIB_B */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

typedef void *(*mod_alloc_fn)(size_t);

static void *sinks[64];

static int run(const char *path, struct link_map **lm, void **fn) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen %s: %s\n", path, dlerror()); return -1; }
  mod_alloc_fn f = (mod_alloc_fn)dlsym(h, "mod_alloc");
  if (!f || dlinfo(h, RTLD_DI_LINKMAP, lm) != 0) { fprintf(stderr, "%s: no mod_alloc\n", path); return -1; }
  *fn = (void *)f;
  for (int i = 0; i < 64; i++) sinks[i] = f(((size_t)1 << 20) + (size_t)i); /* sampled */
  for (int i = 0; i < 64; i++) free(sinks[i]);
  if (dlclose(h) != 0) { fprintf(stderr, "dlclose %s: %s\n", path, dlerror()); return -1; }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: unwind_dlreuse LIB_A LIB_B\n"); return 2; }
  /* several rounds: a sampled link_map (its own page run) is not reused */
  int reused = 0;
  for (int round = 0; round < 8; round++) {
    struct link_map *lma, *lmb;
    void *fa, *fb;
    if (run(argv[1], &lma, &fa) != 0) return 1;
    if (run(argv[2], &lmb, &fb) != 0) return 1;
    reused += lma == lmb && fa == fb;
  }
  if (!reused) {
    printf("unwind_dlreuse: B never reused A's place and link_map block: skipped\n");
    return 77;
  }
  printf("unwind_dlreuse: %d of 8 rounds loaded B at A's address with A's link_map block: OK\n", reused);
  return 0;
}
