# SPDX-License-Identifier: MIT
# tests/valgrind: lithe's valgrind build (build/liblithe-valgrind.so, make
# valgrind) under memcheck.  Included by tests/CMakeLists.txt.  Without
# valgrind installed each test exits 77 (skipped), naming the package.
if(NOT TARGET lithe-valgrind)
  return()
endif()

# a program with five known errors amid clean work: memcheck must report
# exactly those, with lithe serving the blocks
add_executable(memcheck_target valgrind/memcheck_target.c)
set_target_properties(memcheck_target PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
# -O1 -g: the functions at fault named in memcheck's stacks
target_compile_options(memcheck_target PRIVATE -O1 -g -fno-builtin -fno-inline)
target_link_libraries(memcheck_target PRIVATE Threads::Threads)
add_test(NAME valgrind_memcheck
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/valgrind/memcheck.sh
          $<TARGET_FILE:memcheck_target> $<TARGET_FILE:lithe-valgrind>)
set_tests_properties(valgrind_memcheck PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS valgrind)

# no false reports: API tests under memcheck, every block lithe's, 0 errors
# and no leak.  Release build only (the Debug suite would double their
# minutes); api_align, api_sizes and api_heaps pass too but take minutes
# under memcheck (docs/reliability.md).  Not api_prefixed: it checks that a
# block whose usable size is a multiple of 64 is 64-aligned, which the
# valgrind build's 32-byte gap at each block's end (debug.h) breaks.
if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
  foreach(t api_basic api_cxx)
    if(TARGET test-${t})
      add_test(NAME valgrind_clean_${t}
        COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/valgrind/memcheck_clean.sh
                $<TARGET_FILE:test-${t}> $<TARGET_FILE:lithe-valgrind>)
      set_tests_properties(valgrind_clean_${t} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS valgrind)
    endif()
  endforeach()
endif()
