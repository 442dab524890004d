/* SPDX-License-Identifier: MIT */
/* Shared helpers for the lithe benchmark workload programs (bench-*).
 *
 * Nothing in here allocates through malloc: the harness's own memory comes
 * from mmap (bench_map) or the stack, so the heap being measured belongs to
 * the workload alone. See docs/benchmarks.md.
 */
#ifndef LITHE_BENCH_COMMON_H
#define LITHE_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* ---- the allocator shim --------------------------------------------------
 * The allocator under test is whatever malloc the process resolves to
 * (LD_PRELOAD selects it), so the shim is a set of direct calls. The
 * workload sources are compiled with -fno-builtin-malloc/-free so the
 * compiler can neither elide nor merge these calls. */
static inline void *bench_alloc(size_t n) { return malloc(n); }
static inline void bench_free(void *p, size_t n) { (void)n; free(p); }

/* ---- clocks ---------------------------------------------------------------*/
static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t bench_ticks(void) { return __rdtsc(); }
static inline void bench_pause(void) { _mm_pause(); }
#define BENCH_TICK_UNIT "cycles"
#elif defined(__aarch64__)
static inline uint64_t bench_ticks(void) {
  uint64_t v;
  __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
static inline void bench_pause(void) { __asm__ __volatile__("yield"); }
#define BENCH_TICK_UNIT "cycles"
#else
static inline uint64_t bench_ticks(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline void bench_pause(void) {}
#define BENCH_TICK_UNIT "ns"
#endif

/* Ticks per second of bench_ticks(), measured against CLOCK_MONOTONIC over
 * about `ms` milliseconds (no allocation). */
double bench_tick_hz(int ms);

/* ---- memory figures from /proc/self/status --------------------------------
 * Read with open/read into a stack buffer: no stdio, no malloc. Values in
 * KiB; -1 when the field is missing. */
typedef struct {
  long vm_hwm, vm_rss, vm_data, rss_anon, rss_file, rss_shmem;
} bench_status_t;
int bench_read_status(bench_status_t *st);
long bench_peak_kb(const bench_status_t *st); /* VmHWM - RssFile - RssShmem */
long bench_end_kb(const bench_status_t *st);  /* RssAnon (fallback VmRSS-..) */
long bench_minor_faults(void);                /* getrusage ru_minflt */
/* Reset VmHWM to the current RSS (writes 5 to /proc/self/clear_refs). */
int bench_reset_peak(void);

/* ---- memory at end: the allocator's own forcing release -----------------
 * One method for every allocator (tools/memend.h): the release call is
 * taken from the object `malloc` resolved to -- lithe_collect(true),
 * mi_collect(true), mallctl("arena.4096.purge"),
 * MallocExtension_ReleaseFreeMemory(), malloc_trim(0). bench_release()
 * makes it and returns its name; bench_malloc_from() is that object's file
 * name (every program prints it as "# malloc: PATH", the runner checks it).
 * bench_release_init() resolves both now, before the work (a failed dlsym
 * allocates an error string). */
const char *bench_release(void);
const char *bench_malloc_from(void);
void bench_release_init(void);
/* the pause before the unassisted sample: `given` if >= 0, else lithe's
 * purge delay (LITHE_PURGE_DELAY_MS, default 1000 ms) + 100 ms */
long bench_pause_ms(long given);
/* prints the "# scavenge:" and "# malloc:" lines; `field` gets the
 * " KB unassisted-end-kB" part of the Benchmark line ("" without a pause) */
void bench_print_release(const char *call, long pause, long unassisted_kb, char *field, size_t n);
void bench_sleep_ms(long ms);

/* ---- harness memory ------------------------------------------------------*/
void *bench_map(size_t bytes); /* zeroed, from mmap; aborts on failure */
void bench_unmap(void *p, size_t bytes);

/* ---- misc -----------------------------------------------------------------*/
int bench_ncpu(void);
void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* "--name=value" or "--name value": returns the value or NULL; advances *i. */
const char *bench_opt(int argc, char **argv, int *i, const char *name);

/* xorshift64* -- per-thread deterministic random numbers */
static inline uint64_t bench_rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}
static inline uint64_t bench_rng_seed(uint64_t seed) {
  /* splitmix64 so that seeds 0,1,2.. give unrelated, non-zero states */
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z ? z : 1;
}

#endif
