/* SPDX-License-Identifier: MIT */
/* via_api.h — force-included (-include) into a test program built with a
 * sanitizer: the program's C allocation calls go to lithe's lithe_ API,
 * while the sanitizer keeps its own malloc for everything else (libc,
 * the sanitizer runtime, threads).  The headers that declare the standard
 * names come first, so the macros below rename only the test's calls. */
#ifndef LITHE_VIA_API_H
#define LITHE_VIA_API_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lithe.h"

#define malloc(n)                lithe_malloc(n)
#define calloc(c, n)             lithe_calloc(c, n)
#define realloc(p, n)            lithe_realloc(p, n)
#define reallocarray(p, c, n)    lithe_reallocarray(p, c, n)
#define free(p)                  lithe_free(p)
#define posix_memalign(o, a, n)  lithe_posix_memalign(o, a, n)
#define aligned_alloc(a, n)      lithe_aligned_alloc(a, n)
#define memalign(a, n)           lithe_memalign(a, n)
#define valloc(n)                lithe_valloc(n)
#define pvalloc(n)               lithe_pvalloc(n)
#define malloc_usable_size(p)    lithe_malloc_usable_size(p)
#define malloc_trim(n)           lithe_malloc_trim(n)
#endif
