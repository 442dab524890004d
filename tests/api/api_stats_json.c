/* SPDX-License-Identifier: MIT */
/* api_stats_json: lithe_stats_print_json's per-class counts are exact in a
 * quiet process: 3000 blocks of 100 bytes (class 112) and 40 of 20000
 * (class 20480) raise blocks_live of exactly those classes by 3000 and 40
 * and bytes_live by blocks * size; 1000 of them freed by another thread
 * (remote frees) and 20 freed here lower it again; totals agree with
 * lithe_stats_get and pages.small_live_bytes + large_bytes with mallinfo2's
 * uordblks.  Needs lithe. */
#include "testutil.h"
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>

static const char *json; /* the last snapshot (tu_stats_json) */

static long live(unsigned size) {
  char line[512];
  return tu_json_class_line(json, size, line, sizeof line) ? tu_json_field(line, "blocks_live") : 0;
}

static void *remote_free(void *arg) {
  void **v = arg;
  for (int i = 0; i < 1000; i++) free(v[i]);
  return NULL;
}

int main(void) {
  tu_require_lithe();
  static void *a[3000], *b[40];
  json = tu_stats_json();
  long a0 = live(112), b0 = live(20480);
  for (int i = 0; i < 3000; i++) CHECK((a[i] = malloc(100)) != NULL);
  for (int i = 0; i < 40; i++) CHECK((b[i] = malloc(20000)) != NULL);
  json = tu_stats_json();
  long a1 = live(112), b1 = live(20480);
  struct mallinfo2 mi = mallinfo2();
  lithe_stats_t st;
  lithe_stats_get(&st);
  printf("class 112: blocks_live %ld -> %ld; class 20480: %ld -> %ld\n", a0, a1, b0, b1);
  CHECKF(a1 - a0 == 3000 && b1 - b0 == 40, "blocks_live grew by %ld and %ld, want 3000 and 40", a1 - a0, b1 - b0);
  char line[512];
  CHECK(tu_json_class_line(json, 112, line, sizeof line));
  printf("%s\n", line);
  CHECKF(tu_json_field(line, "bytes_live") == a1 * 112, "bytes_live %ld != %ld * 112", tu_json_field(line, "bytes_live"), a1);
  CHECK(tu_json_field(line, "class") == 7 && tu_json_field(line, "spans") >= 1);
  CHECKF(tu_json_field(line, "span_bytes") >= (tu_json_field(line, "blocks_live") + tu_json_field(line, "blocks_free")) * 112,
         "span_bytes %ld smaller than its blocks", tu_json_field(line, "span_bytes"));
  CHECKF(tu_json_field(json, "committed") == (long)st.committed, "JSON committed %ld, lithe_stats_get %zu",
         tu_json_field(json, "committed"), st.committed);
  CHECKF(tu_json_field(json, "spans_small") == (long)st.spans_small, "JSON spans_small %ld, stats %zu",
         tu_json_field(json, "spans_small"), st.spans_small);
  long used = tu_json_field(json, "small_live_bytes") + tu_json_field(json, "large_bytes");
  CHECKF(used == (long)mi.uordblks, "small_live_bytes + large_bytes %ld, mallinfo2 uordblks %zu", used,
         mi.uordblks);

  /* 1000 freed by another thread: on the span's remote list, counted freed */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, remote_free, a) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  for (int i = 0; i < 20; i++) free(b[i]);
  json = tu_stats_json();
  long a2 = live(112), b2 = live(20480);
  printf("after 1000 remote and 20 local frees: class 112 %ld, class 20480 %ld\n", a2, b2);
  CHECKF(a1 - a2 == 1000 && b1 - b2 == 20, "blocks_live fell by %ld and %ld, want 1000 and 20", a1 - a2,
         b1 - b2);
  for (int i = 1000; i < 3000; i++) free(a[i]);
  for (int i = 20; i < 40; i++) free(b[i]);
  json = tu_stats_json();
  CHECKF(live(112) == a0 && live(20480) == b0, "all freed: %ld and %ld, at start %ld and %ld", live(112),
         live(20480), a0, b0);
  printf("api_stats_json: OK\n");
  return 0;
}
