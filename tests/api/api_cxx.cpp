/* SPDX-License-Identifier: MIT */
// api_cxx: the C++ allocation operators — new/delete, new[]/delete[],
// nothrow, sized delete, aligned new (align_val_t 64 and 4096), bad_alloc on
// an impossible size, nullptr from the nothrow form, and a new_handler that
// frees a reserve so the retry succeeds.
//
// In the suite: new/delete, arrays, nothrow, sized delete, aligned new (64,
// 4096, 64K, 2M), bad_alloc / nullptr on impossible sizes, a new_handler
// that frees a reserve (under RLIMIT_AS in a child).
#include "testutil.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstddef>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <vector>

static volatile size_t huge_size = (size_t)1 << 50; // volatile: no compile-time folding

struct alignas(64) Line {
  unsigned char b[64];
};
struct alignas(4096) Page {
  unsigned char b[4096];
};

static void plain_forms() {
  for (int i = 0; i < 1000; i++) {
    size_t n = 1 + (size_t)i * 37;
    char *p = static_cast<char *>(::operator new(n));
    CHECK(p != nullptr && ((uintptr_t)p & 15) == 0);
    CHECK(malloc_usable_size(p) >= n);
    tu_fill(p, n, n);
    CHECK(tu_check(p, n, n) < 0);
    if (i % 2) ::operator delete(p, n); // sized delete
    else ::operator delete(p);
  }
  int *x = new int(42);
  CHECK(*x == 42);
  delete x;
  std::string *s = new std::string(1000, 'q');
  CHECK(s->size() == 1000 && (*s)[999] == 'q');
  delete s;
  long *arr = new long[10000];
  for (int i = 0; i < 10000; i++) arr[i] = i;
  for (int i = 0; i < 10000; i++) CHECK(arr[i] == i);
  delete[] arr;
  char *big = new char[20 << 20];
  memset(big, 1, 20 << 20);
  delete[] big;
  // sized array delete
  char *a2 = static_cast<char *>(::operator new[](777));
  ::operator delete[](a2, 777);
  // nothrow, success
  int *nt = new (std::nothrow) int[100];
  CHECK(nt != nullptr);
  delete[] nt;
  void *nt2 = ::operator new(5000, std::nothrow);
  CHECK(nt2 != nullptr);
  ::operator delete(nt2, std::nothrow);
  printf("new/delete, new[]/delete[], sized, nothrow: OK\n");
}

static void aligned_forms() {
  std::vector<Line *> lines;
  std::vector<Page *> pages;
  for (int i = 0; i < 500; i++) {
    Line *l = new Line;
    CHECKF(((uintptr_t)l & 63) == 0, "new Line (alignas 64) = %p", (void *)l);
    memset(l->b, i, sizeof l->b);
    lines.push_back(l);
    if (i % 5 == 0) {
      Page *pg = new Page;
      CHECKF(((uintptr_t)pg & 4095) == 0, "new Page (alignas 4096) = %p", (void *)pg);
      memset(pg->b, i, sizeof pg->b);
      pages.push_back(pg);
    }
  }
  for (size_t i = 0; i < lines.size(); i++) {
    CHECK(lines[i]->b[0] == (unsigned char)i && lines[i]->b[63] == (unsigned char)i);
    delete lines[i];
  }
  for (size_t i = 0; i < pages.size(); i++) {
    CHECK(pages[i]->b[4095] == (unsigned char)(i * 5));
    delete pages[i];
  }
  Line *la = new Line[33];
  CHECK(((uintptr_t)la & 63) == 0);
  delete[] la;
  Page *pa = new Page[3];
  CHECK(((uintptr_t)pa & 4095) == 0);
  delete[] pa;
  // explicit operator forms, incl. sized + aligned delete and nothrow aligned
  for (size_t al : {(size_t)64, (size_t)4096, (size_t)1 << 16, (size_t)1 << 21}) {
    void *p = ::operator new(1000, std::align_val_t(al));
    CHECKF(((uintptr_t)p & (al - 1)) == 0, "operator new(1000, align %zu) = %p", al, p);
    memset(p, 0, 1000);
    ::operator delete(p, 1000, std::align_val_t(al));
    p = ::operator new[](3 * al, std::align_val_t(al));
    CHECK(((uintptr_t)p & (al - 1)) == 0);
    ::operator delete[](p, std::align_val_t(al));
    p = ::operator new(al + 1, std::align_val_t(al), std::nothrow);
    CHECK(p != nullptr && ((uintptr_t)p & (al - 1)) == 0);
    ::operator delete(p, std::align_val_t(al), std::nothrow);
  }
  printf("aligned new (align_val_t 64, 4096, 64K, 2M): OK\n");
}

static void failing_forms() {
  bool thrown = false;
  try {
    char *p = new char[huge_size];
    p[0] = 1;
    FAIL("new char[%zu] returned %p", (size_t)huge_size, (void *)p);
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECK(thrown);
  thrown = false;
  try {
    void *p = ::operator new(huge_size);
    FAIL("operator new(%zu) returned %p", (size_t)huge_size, p);
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECK(thrown);
  thrown = false;
  try {
    void *p = ::operator new(huge_size, std::align_val_t(4096));
    FAIL("aligned operator new(%zu) returned %p", (size_t)huge_size, p);
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECK(thrown);
  CHECK(new (std::nothrow) char[huge_size] == nullptr);
  CHECK(::operator new(huge_size, std::nothrow) == nullptr);
  CHECK(::operator new[](huge_size, std::nothrow) == nullptr);
  CHECK(::operator new(huge_size, std::align_val_t(64), std::nothrow) == nullptr);
  printf("impossible size: bad_alloc thrown, nothrow forms return nullptr\n");
}

// ---- new_handler: runs in a child under an address-space limit ----------
static char *reserve;
static int handler_calls;
static void free_reserve() {
  handler_calls++;
  if (reserve) {
    delete[] reserve;
    reserve = nullptr;
  } else {
    std::set_new_handler(nullptr); // nothing left to give: let new throw
  }
}

static void handler_child(void *) {
  // warm up the allocator and the exception machinery first
  for (int i = 0; i < 100; i++) delete[] new char[1000];
  try {
    throw std::bad_alloc();
  } catch (...) {
  }
  long vm = tu_status_kb("VmSize");
  CHECK(vm > 0);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)vm * 1024 + 400 * MiB;
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
  reserve = new char[240 * MiB];
  memset(reserve, 7, MiB);
  std::set_new_handler(free_reserve);
  // 240 + 240 MiB do not fit in 400: this new fails until the handler frees the reserve
  char *p = new char[240 * MiB];
  CHECKF(handler_calls >= 1, "new_handler was not called (calls=%d)", handler_calls);
  CHECK(reserve == nullptr);
  memset(p, 1, 240 * MiB);
  delete[] p;
  printf("new_handler called %d time(s), freed the reserve, retry succeeded\n", handler_calls);
  // once the handler gives up, bad_alloc is thrown
  std::set_new_handler(free_reserve);
  handler_calls = 0;
  bool thrown = false;
  try {
    char *q = new char[2000 * MiB];
    q[0] = 0;
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECKF(thrown && handler_calls >= 1, "thrown=%d handler_calls=%d", thrown, handler_calls);
  printf("handler that gives up -> bad_alloc\n");
  fflush(stdout);
  _exit(0);
}

static void new_handler_test() {
  tu_run_fn_ok(handler_child, nullptr, 60, "new_handler child", "");
}

static void containers_on_threads() {
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++)
    ts.emplace_back([t] {
      std::map<int, std::string> m;
      for (int i = 0; i < 20000; i++) m[i * 7 + t] = std::string((size_t)(i % 200), 'a' + t);
      long total = 0;
      for (auto &kv : m) total += (long)kv.second.size();
      long want = 0;
      for (int i = 0; i < 20000; i++) want += i % 200;
      CHECK(total == want);
    });
  for (auto &t : ts) t.join();
  printf("std::map/std::string on 4 threads: OK\n");
}

// With liblithe.so, every replaceable operator resolves to lithe's own.
static void operators_are_lithes() {
#ifdef LITHE_SHARED
  static const char *const names[] = {
      "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
      "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
      "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
      "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t",
      "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
      "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
  for (const char *n : names) {
    void *sym = dlsym(RTLD_DEFAULT, n);
    Dl_info info;
    CHECKF(sym && dladdr(sym, &info) && info.dli_fname && strstr(info.dli_fname, "liblithe"),
           "%s resolves to %s, not liblithe", n,
           sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "nothing");
  }
  printf("all %zu operator new/delete forms resolve to liblithe\n", sizeof names / sizeof *names);
#endif
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  tu_require_lithe();
  operators_are_lithes();
  plain_forms();
  aligned_forms();
  failing_forms();
  new_handler_test();
  containers_on_threads();
  printf("api_cxx: OK\n");
  return 0;
}
