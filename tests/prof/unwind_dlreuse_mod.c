/* SPDX-License-Identifier: MIT */
/* unwind_dlreuse_mod — one function that allocates from a frame of FRAME
 * bytes (no frame pointer: CFA = rsp + about FRAME), built twice with two
 * sizes over 127 (the same instruction lengths, so the same layout): see
 * unwind_dlreuse.c. */
#include <stdlib.h>

#ifndef FRAME
#error FRAME must be defined
#endif

__attribute__((noinline)) void *mod_alloc(size_t n) {
  volatile char buf[FRAME];
  for (int i = 0; i < FRAME; i++) buf[i] = 0; /* a stale rule reads a 0 return address */
  void *p = malloc(n);
  buf[1] = buf[0];
  return p;
}
