/* SPDX-License-Identifier: MIT */
// regress_cxx_plugin — the C++ side of regress_cxx_dlopen: a plugin that
// brings libstdc++ into a C program with dlopen, and whose operator new
// must throw std::bad_alloc there.
#include <cstddef>
#include <new>

static std::size_t huge() { return (std::size_t)1 << 50; } // above any mapping

extern "C" int plugin_new_throws(void) {
  try {
    char *p = new char[huge()];
    delete[] p;
    return 0; // impossible size allocated?
  } catch (const std::bad_alloc &) {
    return 1;
  }
}

extern "C" int plugin_new_nothrow_null(void) {
  char *p = new (std::nothrow) char[huge()];
  return p == nullptr;
}
