/* SPDX-License-Identifier: MIT */
/* Writes small hand-made traces for the replayer's validation test:
 *   lithe-trace-forge OUT KIND
 * KIND: ok, doublefree, danglingref, badthread, badop, badtag, hugesize,
 *       countmismatch, truncvarint, and for thread lifetimes (version 2)
 *       lifetimes (good), v1ok (the base trace as version 1, good),
 *       v1threadop, afterexit, startagain, startlower. All but the good ones
 *       carry valid checksums, so only the replayer's structural checks can
 *       reject them. */
#include <stdio.h>
#include <string.h>
#include "../trace-format.h"

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s OUT KIND\n", argv[0]); return 2; }
  const char *k = argv[2];
  unsigned char pl[64];
  size_t n = 0;
  uint64_t recs = 0;
  unsigned threads = 2;
  uint32_t version = LTR_VERSION;
  /* base: malloc 100 / malloc 200 on thread 1 / free back 2 (first) on thread 0 / free back 2 */
  pl[n++] = LTR_MALLOC; pl[n++] = 100; recs++;
  pl[n++] = LTR_MALLOC | LTR_TAG_THREAD; pl[n++] = 1; pl[n++] = 0x80 | 72; pl[n++] = 1; recs++; /* 200 */
  pl[n++] = LTR_FREE | LTR_TAG_THREAD; pl[n++] = 0; pl[n++] = 2; recs++;
  pl[n++] = LTR_FREE; pl[n++] = 2; recs++;
  if (!strcmp(k, "ok")) {
  } else if (!strcmp(k, "doublefree")) { pl[n++] = LTR_FREE; pl[n++] = 4; recs++; }
  else if (!strcmp(k, "danglingref")) { pl[n++] = LTR_FREE; pl[n++] = 9; recs++; }
  else if (!strcmp(k, "badthread")) { pl[n++] = LTR_MALLOC | LTR_TAG_THREAD; pl[n++] = 7; pl[n++] = 1; recs++; }
  else if (!strcmp(k, "badop")) { pl[n++] = 15; pl[n++] = 1; recs++; }
  else if (!strcmp(k, "badtag")) { pl[n++] = 0x80 | LTR_MALLOC; pl[n++] = 1; recs++; }
  else if (!strcmp(k, "hugesize")) {
    pl[n++] = LTR_MALLOC;
    n += ltr_put_varint(pl + n, LTR_MAX_SIZE + 1);
    recs++;
  } else if (!strcmp(k, "countmismatch")) { recs += 3; }
  else if (!strcmp(k, "truncvarint")) { pl[n++] = LTR_MALLOC; pl[n++] = 0x80; recs++; }
  else if (!strcmp(k, "v1ok")) { version = 1; }
  else if (!strcmp(k, "v1threadop")) { version = 1; pl[n++] = LTR_THREAD_START; pl[n++] = 2; recs++; threads = 3; }
  else if (!strcmp(k, "lifetimes")) { /* thread 0 starts thread 2, which allocates, frees, exits */
    threads = 3;
    pl[n++] = LTR_THREAD_START; pl[n++] = 2; recs++;
    pl[n++] = LTR_MALLOC | LTR_TAG_THREAD; pl[n++] = 2; pl[n++] = 50; recs++;
    pl[n++] = LTR_FREE; pl[n++] = 1; recs++;
    pl[n++] = LTR_THREAD_EXIT; recs++;
  } else if (!strcmp(k, "afterexit")) {
    pl[n++] = LTR_THREAD_EXIT | LTR_TAG_THREAD; pl[n++] = 1; recs++;
    pl[n++] = LTR_MALLOC; pl[n++] = 1; recs++;
  } else if (!strcmp(k, "startagain")) { pl[n++] = LTR_THREAD_START; pl[n++] = 1; recs++; }
  else if (!strcmp(k, "startlower")) {
    pl[n++] = LTR_THREAD_START | LTR_TAG_THREAD; pl[n++] = 1; pl[n++] = 0; recs++;
  }
  else { fprintf(stderr, "unknown kind %s\n", k); return 2; }

  struct ltr_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, LTR_MAGIC, 8);
  h.version = version;
  h.header_size = LTR_HEADER_SIZE;
  h.record_count = recs;
  h.payload_bytes = n;
  h.thread_count = threads;
  h.payload_fnv = ltr_fnv64(LTR_FNV64_INIT, pl, n);
  h.peak_live_bytes = 300;
  h.header_fnv = ltr_fnv32(&h, 60);
  FILE *f = fopen(argv[1], "wb");
  if (!f) { perror(argv[1]); return 1; }
  fwrite(&h, sizeof h, 1, f);
  fwrite(pl, 1, n, f);
  return fclose(f) != 0;
}
