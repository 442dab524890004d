/* SPDX-License-Identifier: MIT */
/* unwind.h — the cached unwinder's interface (unwind.c), for prof.c. */
#ifndef LITHE_UNWIND_H
#define LITHE_UNWIND_H
#include <link.h> /* struct dl_find_object, DLFO_STRUCT_HAS_EH_DBASE */
#include "internal.h"

enum { UNWIND_FAST, UNWIND_CHECK, UNWIND_LIBGCC };
extern int unwind_mode INTERNAL; /* LITHE_PROF_UNWIND: one of the above */

#if defined(__x86_64__) && defined(DLFO_STRUCT_HAS_EH_DBASE)
#define PROF_FAST_UNWIND 1
/* glibc's _dl_find_object (NULL: no cached unwinder; set by unwind_init) */
extern int (*unwind_find_object)(void *pc, struct dl_find_object *result) INTERNAL;
/* stacks walked whole, handed to libgcc, compared with libgcc's, cut short */
extern _Atomic size_t unwind_walked INTERNAL, unwind_fallbacks INTERNAL, unwind_checked INTERNAL,
    unwind_stuck INTERNAL;
bool unwind_init(void) INTERNAL; /* before main; false: no cached unwinder */
/* The return addresses above the caller's call of it into raw (the first:
 * its return into the caller); *stuck when it stopped at a frame without
 * a rule. */
int fast_backtrace(void **raw, int max, bool *stuck) INTERNAL;
/* LITHE_PROF_UNWIND=check: report the two stacks and abort */
__attribute__((noreturn)) void unwind_mismatch(void **fast, int nf, void **gcc, int ng) INTERNAL;
/* rsp, rbp and the return address at its call (unwind.c's assembly) */
void lithe_prof_regs(uintptr_t r[3]) INTERNAL;
#endif
#endif
