/* SPDX-License-Identifier: MIT */
/* lithe — a general-purpose memory allocator.
 *
 * Two ways to use it:
 *   - as the process allocator: LD_PRELOAD=liblithe.so program, or link with
 *     -llithe; then malloc/free/new/delete and friends are lithe's;
 *   - beside the system allocator: call the lithe_ prefixed functions below.
 *
 * Environment options (read once, at the first allocation; with secure_getenv,
 * so a setuid / setgid program ignores them):
 *   LITHE_ARENA_SIZE=N[k|m|g]  bytes reserved per arena (power of two,
 *                              4 MiB .. 1 GiB; default 64 MiB)
 *   LITHE_PURGE_DELAY_MS=N     free pages are given back to the OS after this
 *                              many ms (default 1000; 0 = at once; -1 = never,
 *                              except on lithe_collect(true) / malloc_trim)
 *   LITHE_PURGE_THREAD=0|1     1 (default): a thread purges on time while the
 *                              program makes no call; 0: only calls purge
 *   LITHE_ON_ERROR=abort|ignore  what a detected misuse (double free, foreign
 *                              pointer) does after its message (default abort)
 *   LITHE_SHOW_STATS=1|json    print statistics to stderr at exit (json:
 *                              lithe_stats_print_json's form)
 *   LITHE_VERBOSE=1            print every option, its value and where it
 *                              came from (default, environment), and OS
 *                              failures, to stderr
 * Heap profiling and leak reports (docs/profiling.md):
 *   LITHE_PROF=1               sample allocations; write a heap profile that
 *                              google-pprof reads to PREFIX.<pid>.heap at exit
 *   LITHE_PROF_SAMPLE=N[k|m|g] mean bytes between samples (default 512k)
 *   LITHE_PROF_PREFIX=PATH     profile file prefix (default "lithe")
 *   LITHE_PROF_PEAK=1          also dump at each new peak (one per doubling)
 *   LITHE_PROF_UNWIND=check    take every stack with lithe's cached unwinder
 *                              and libgcc's, abort if they differ (=libgcc:
 *                              libgcc's alone)
 *   LITHE_LEAKS=1              track every allocation; print the biggest live
 *                              allocation sites to stderr at exit
 * (every option, with its range and the reason for its default:
 * docs/options.md)
 * Memory limit (docs/profiling.md):
 *   LITHE_MEMORY_LIMIT=N[k|m|g] the limit (default: the cgroup's memory.max /
 *                              memory.limit_in_bytes; 0: none); from 90 % of
 *                              it freed pages are purged at once
 *   LITHE_MEMORY_LIMIT_HARD=1  past the limit allocations fail with ENOMEM
 *   LITHE_CGROUP_ROOT=DIR      where cgroup files are read (/sys/fs/cgroup)
 */
#ifndef LITHE_H
#define LITHE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LITHE_VERSION_MAJOR 0 /* the soname: liblithe.so.0 */
#define LITHE_VERSION_MINOR 2
#define LITHE_VERSION_PATCH 0

/* The malloc family, with C/POSIX semantics (see docs/semantics.md). */
void  *lithe_malloc(size_t size);
void  *lithe_calloc(size_t count, size_t size);
void  *lithe_realloc(void *ptr, size_t size);
void  *lithe_reallocarray(void *ptr, size_t count, size_t size);
void   lithe_free(void *ptr);
void   lithe_free_sized(void *ptr, size_t size);
void   lithe_free_aligned_sized(void *ptr, size_t alignment, size_t size); /* C23 */
int    lithe_posix_memalign(void **out, size_t alignment, size_t size);
void  *lithe_aligned_alloc(size_t alignment, size_t size);
void  *lithe_memalign(size_t alignment, size_t size);
void  *lithe_valloc(size_t size);
void  *lithe_pvalloc(size_t size);
size_t lithe_malloc_usable_size(const void *ptr);
int    lithe_malloc_trim(size_t pad);

/* Give memory back: collect frees made by other threads, return empty spans
 * to the page heap and, with force, return every wholly free page to the OS
 * at once (otherwise only pages past the purge delay). */
void lithe_collect(bool force);

/* Process-wide counters. Byte figures are exact at the moment of the call
 * for the OS layer; heap figures are summed over live thread heaps. */
typedef struct lithe_stats_s {
  size_t reserved;        /* address space reserved (arenas + xlarge maps)  */
  size_t committed;       /* made read/write: what the kernel charges        */
  size_t purged;          /* committed bytes currently given back (madvise)  */
  size_t metadata;        /* committed bytes holding lithe's own metadata    */
  size_t arenas;          /* arenas reserved                                 */
  size_t xlarge_live;     /* live xlarge (own mapping) objects               */
  size_t xlarge_bytes;    /* bytes mapped for live xlarge objects            */
  size_t large_live;      /* live large (page-run) objects                   */
  size_t spans_small;     /* spans currently holding small objects           */
  size_t spans_abandoned; /* spans left by exited threads, not yet adopted   */
  size_t heaps_live;      /* thread heaps in use                             */
  size_t heaps_created;   /* thread heaps ever initialised                   */
  size_t os_calls;        /* mmap + mprotect + madvise + munmap + mremap     */
  size_t purges;          /* madvise(DONTNEED) calls                         */
  /* appended later: the fields above keep their offsets */
  size_t in_use;          /* pages handed out: spans, large runs, xlarge maps */
  size_t peak_in_use;     /* the most in_use has been                        */
  size_t peak_committed;  /* the most committed has been                     */
  size_t peak_reserved;   /* the most reserved has been                      */
} lithe_stats_t;

void lithe_stats_get(lithe_stats_t *out);
/* Print the statistics in human form to file descriptor fd. */
void lithe_stats_print(int fd);
/* The same as one JSON object, with per-size-class counts (blocks live and
 * free, spans, bytes); fields in docs/stats.md.  Allocates nothing. */
void lithe_stats_print_json(int fd);

/* Write the heap profile (gperftools heap-profile text, for google-pprof)
 * of the live sampled allocations to path; NULL: PREFIX.<pid>.<n>.heap.
 * 0 on success; -1 with errno set (EINVAL when LITHE_PROF is off). */
int lithe_prof_dump(const char *path);

/* First-class heaps: allocate many objects from a heap, then free them all
 * at once with lithe_heap_destroy (time proportional to the heap's spans,
 * not its blocks; its memory goes back to lithe's page heap).  free() and
 * realloc() of a heap's block from any thread work as for any block.  One
 * thread at a time may allocate from a heap (no lock is taken; a Debug
 * build reports two at once).  After destroy the heap and every block of it
 * are gone: using or freeing them is misuse (reported when detected). */
typedef struct lithe_heap_s lithe_heap_t;
lithe_heap_t *lithe_heap_new(void);           /* NULL + ENOMEM on failure */
void *lithe_heap_malloc(lithe_heap_t *heap, size_t size);
void *lithe_heap_calloc(lithe_heap_t *heap, size_t count, size_t size);
void *lithe_heap_realloc(lithe_heap_t *heap, void *ptr, size_t size); /* new block from heap */
void *lithe_heap_memalign(lithe_heap_t *heap, size_t alignment, size_t size);
void  lithe_heap_destroy(lithe_heap_t *heap);

/* "lithe 0.2.0": "lithe " MAJOR.MINOR.PATCH */
const char *lithe_version(void);

#ifdef __cplusplus
}
#endif
#endif /* LITHE_H */
