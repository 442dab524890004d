# tests/sanitize: lithe checked by itself (Debug build) and by the
# compilers' sanitizers.  Included by tests/CMakeLists.txt (so paths are
# relative to tests/).  docs/reliability.md says what each check proves.
if(NOT TARGET lithe)
  return()
endif()

# ---- Debug build only: the assertions fire ----------------------------------
if(CMAKE_BUILD_TYPE STREQUAL "Debug" OR LITHE_DEBUG)
  lithe_add_test(debug_assert SOURCES sanitize/debug_assert.c TIMEOUT 60)
endif()

# ---- the size-class table, white box (linked with liblithe.a) ---------------
lithe_add_test(sizeclass_table SOURCES sanitize/sizeclass_table.c LINK static TIMEOUT 120
               ARGS ${PROJECT_SOURCE_DIR}/src/sizeclass.c)
target_include_directories(test-sizeclass_table PRIVATE ${PROJECT_SOURCE_DIR}/src)
