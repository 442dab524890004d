/* SPDX-License-Identifier: MIT */
/* lithe trace format, version 2 (the replayer also reads version 1) -- shared by the tracer and the replayer.
 * The normative description is docs/trace-format.md; keep the two in step. */
#ifndef LITHE_TRACE_FORMAT_H
#define LITHE_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LTR_MAGIC "LITHETRC"          /* 8 bytes, no NUL in the file */
#define LTR_VERSION 2u
#define LTR_VERSION_MIN 1u     /* oldest version the replayer reads */
#define LTR_HEADER_SIZE 64u
#define LTR_MAX_THREADS 65536u
#define LTR_MAX_SIZE (1ull << 40)    /* sizes above 1 TiB are rejected as corrupt */

/* Operation codes: low 4 bits of a record's tag byte. */
enum ltr_op {
  LTR_MALLOC = 1,
  LTR_FREE = 2,
  LTR_CALLOC = 3,          /* size = nmemb * size */
  LTR_REALLOC = 4,
  LTR_REALLOCARRAY = 5,    /* size = nmemb * size */
  LTR_POSIX_MEMALIGN = 6,
  LTR_ALIGNED_ALLOC = 7,
  LTR_MEMALIGN = 8,
  LTR_VALLOC = 9,
  LTR_PVALLOC = 10,        /* size already rounded up to a page multiple */
  LTR_THREAD_START = 11,   /* version 2: the current thread created thread <varint child> */
  LTR_THREAD_EXIT = 12,    /* version 2: the current thread exited (its last record) */
  LTR_NOPS = 13
};
#define LTR_TAG_OP_MASK 0x0fu
#define LTR_TAG_THREAD 0x10u    /* a varint thread id follows the tag */
#define LTR_TAG_RESERVED 0xe0u  /* must be zero */

static inline int ltr_op_is_aligned(unsigned op) {
  return op >= LTR_POSIX_MEMALIGN && op <= LTR_PVALLOC;
}
static inline int ltr_op_is_realloc(unsigned op) {
  return op == LTR_REALLOC || op == LTR_REALLOCARRAY;
}
/* Does the record create an object that a later record may refer to? */
static inline int ltr_op_allocates(unsigned op) {
  return op != LTR_FREE && op >= LTR_MALLOC && op <= LTR_PVALLOC;
}

static const char *const ltr_op_names[LTR_NOPS] = {
  "?", "malloc", "free", "calloc", "realloc", "reallocarray",
  "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
  "thread_start", "thread_exit"
};
/* highest operation code a trace of version v may contain */
static inline unsigned ltr_max_op(uint32_t v) { return v >= 2 ? LTR_THREAD_EXIT : LTR_PVALLOC; }

/* Header: 64 bytes, all fields little-endian. */
struct ltr_header {
  char magic[8];            /*  0: "LITHETRC" */
  uint32_t version;         /*  8: LTR_VERSION */
  uint32_t header_size;     /* 12: 64 */
  uint64_t record_count;    /* 16 */
  uint64_t payload_bytes;   /* 24: bytes of record stream after the header */
  uint32_t thread_count;    /* 32: recorded threads, ids 0 .. thread_count-1 */
  uint32_t flags;           /* 36: 0 in versions 1 and 2 */
  uint64_t payload_fnv;     /* 40: FNV-1a 64 of the payload */
  uint64_t peak_live_bytes; /* 48: peak of live requested bytes, in record order */
  uint32_t pid;             /* 56: recorded process id (informational) */
  uint32_t header_fnv;      /* 60: FNV-1a 32 of bytes 0..59 */
};
_Static_assert(sizeof(struct ltr_header) == 64, "header layout");

#define LTR_FNV64_INIT 0xcbf29ce484222325ull
static inline uint64_t ltr_fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ull; }
  return h;
}
static inline uint32_t ltr_fnv32(const void *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  uint32_t h = 0x811c9dc5u;
  for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x01000193u; }
  return h;
}

/* LEB128 unsigned varint; returns bytes written (<= 10). */
static inline size_t ltr_put_varint(unsigned char *out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) { out[n++] = (unsigned char)(v | 0x80); v >>= 7; }
  out[n++] = (unsigned char)v;
  return n;
}
/* Returns bytes consumed, or 0 on truncation / overlong encoding. */
static inline size_t ltr_get_varint(const unsigned char *p, size_t avail, uint64_t *v) {
  uint64_t r = 0;
  for (size_t i = 0; i < avail && i < 10; i++) {
    uint64_t b = p[i] & 0x7f;
    if (i == 9 && b > 1) return 0;
    r |= b << (7 * i);
    if (!(p[i] & 0x80)) { *v = r; return i + 1; }
  }
  return 0;
}

#endif
