# SPDX-License-Identifier: MIT
# tests/sanitize: lithe checked by itself (Debug build) and by the
# compilers' sanitizers.  Included by tests/CMakeLists.txt (so paths are
# relative to tests/).  docs/reliability.md says what each check proves.
if(NOT TARGET lithe)
  return()
endif()

# ---- Debug build only: the assertions fire ----------------------------------
if(CMAKE_BUILD_TYPE STREQUAL "Debug" OR LITHE_DEBUG)
  lithe_add_test(debug_assert SOURCES sanitize/debug_assert.c TIMEOUT 60)
  # every OS call and metadata allocation of a workload fails once in turn
  lithe_add_test(fault_inject SOURCES sanitize/fault_inject.c LINK static TIMEOUT 600)
  target_include_directories(test-fault_inject PRIVATE ${PROJECT_SOURCE_DIR}/src)
  # a split reads only run edges (asserted in free_neighbour)
  lithe_add_test(regress_split_edge SOURCES sanitize/regress_split_edge.c LINK static TIMEOUT 60)
  target_include_directories(test-regress_split_edge PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()

# ---- the size-class table, white box (linked with liblithe.a) ---------------
lithe_add_test(sizeclass_table SOURCES sanitize/sizeclass_table.c LINK static TIMEOUT 120
               ARGS ${PROJECT_SOURCE_DIR}/src/sizeclass.c)
target_include_directories(test-sizeclass_table PRIVATE ${PROJECT_SOURCE_DIR}/src)

# descriptor pages given back by lithe_collect(true); stale pointers into
# them still reported (white box; the Debug build also runs lithe_verify)
lithe_add_test(regress_meta_purge SOURCES sanitize/regress_meta_purge.c LINK static TIMEOUT 60)
target_include_directories(test-regress_meta_purge PRIVATE ${PROJECT_SOURCE_DIR}/src)
if(CMAKE_BUILD_TYPE STREQUAL "Debug" OR LITHE_DEBUG)
  target_compile_definitions(test-regress_meta_purge PRIVATE LITHE_DEBUG=1)
endif()

# a bin given back by runs leaves each span as block-by-block pushes do
# (white box; the Debug build also runs lithe_verify)
lithe_add_test(regress_flush_runs SOURCES sanitize/regress_flush_runs.c LINK static TIMEOUT 60)
target_include_directories(test-regress_flush_runs PRIVATE ${PROJECT_SOURCE_DIR}/src)
if(CMAKE_BUILD_TYPE STREQUAL "Debug" OR LITHE_DEBUG)
  target_compile_definitions(test-regress_flush_runs PRIVATE LITHE_DEBUG=1)
endif()

# a sparse pagemap level whose next piece's place is taken (white box)
lithe_add_test(regress_pagemap_sparse SOURCES sanitize/regress_pagemap_sparse.c LINK static TIMEOUT 60)
target_include_directories(test-regress_pagemap_sparse PRIVATE ${PROJECT_SOURCE_DIR}/src)

# ---- the hardened build (build/liblithe-secure.so) catches ... --------------
if(TARGET lithe-secure)
  lithe_shared_exe(test-secure sanitize/secure.c lithe-secure)
  foreach(c overflow uaf_link double_free random neighbours userheap)
    lithe_add_test(secure_${c} TARGET test-secure ARGS ${c} TIMEOUT 60)
  endforeach()
endif()

# ---- sanitizers: lithe's sources built with clang, tests through lithe_ ----
# Like tests/fuzz: every src/*.c compiled by clang with the sanitizer;
# override.c's standard names (malloc, free, new ...) made local with
# objcopy, so the sanitizer's runtime keeps its own allocator and the test
# programs reach lithe through the lithe_ API (tests/sanitize/via_api.h
# renames their malloc / free / ... calls).
#   tsan-*   -fsanitize=thread: data races in lithe (its atomics and locks)
#   asan-*   -fsanitize=address,undefined: out-of-bounds / use-after-free on
#            lithe's own stack, globals and metadata; undefined behaviour
# Iteration counts are kept small: TSan runs code 5-15x slower.
# They are part of the Debug build (make test-debug), with lithe's
# assertions on too (-DLITHE_DEBUG=1), so make test builds them once.
if(NOT (CMAKE_BUILD_TYPE STREQUAL "Debug" OR LITHE_DEBUG))
  return()
endif()
find_program(LITHE_SAN_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
find_program(LITHE_SAN_OBJCOPY NAMES objcopy llvm-objcopy)

# lithe_sanitizer(KIND FLAGS): sets san_ok_KIND, builds san_objs_KIND
function(lithe_sanitizer kind flags)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/sanitize/${kind})
  set(ok OFF)
  if(LITHE_SAN_CLANG AND LITHE_SAN_OBJCOPY)
    file(MAKE_DIRECTORY ${dir})
    file(WRITE ${dir}/probe.c "#include <pthread.h>\nint main(void) { return 0; }\n")
    execute_process(COMMAND ${LITHE_SAN_CLANG} ${flags} ${dir}/probe.c -o ${dir}/probe -lpthread
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      execute_process(COMMAND ${dir}/probe RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(ok ON)
      endif()
    endif()
  endif()
  set(san_ok_${kind} ${ok} PARENT_SCOPE)
  if(NOT ok)
    message(STATUS "sanitize: ${kind} skipped (needs clang with ${flags}: apt-get install clang libclang-rt-dev)")
    return()
  endif()
  set(cflags -std=gnu11 -O1 -g -fno-omit-frame-pointer ${flags} -DLITHE_DEBUG=1
      -I${PROJECT_SOURCE_DIR}/include -Wall -Wextra -fvisibility=hidden
      -ftls-model=initial-exec -fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc
      -fno-builtin-realloc -fexceptions)
  lithe_clang_objects(objs ${dir} ${LITHE_SAN_CLANG} ${LITHE_SAN_OBJCOPY} ${kind} ${cflags})
  set(san_objs_${kind} ${objs} PARENT_SCOPE)
  set(san_flags_${kind} ${flags} PARENT_SCOPE)
endfunction()

# lithe_sanitized_test(KIND TEST SOURCE [ENV e] ARGS ...)
set(san_targets)
function(lithe_sanitized_test kind name src)
  cmake_parse_arguments(T "" "TIMEOUT" "ARGS;ENV" ${ARGN})
  set(test ${kind}_${name})
  if(NOT san_ok_${kind})
    add_test(NAME ${test} COMMAND sh -c "echo 'SKIP: needs clang with -fsanitize (apt-get install clang libclang-rt-dev)'; exit 77")
    set_tests_properties(${test} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 10 LABELS "lithe;sanitize")
    return()
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/sanitize/${kind})
  get_filename_component(prog ${src} NAME_WE)
  set(bin ${dir}/test-${prog})
  if(NOT TARGET san-${kind}-${prog})
    add_custom_command(OUTPUT ${bin}
      COMMAND ${LITHE_SAN_CLANG} -std=gnu11 -O1 -g -fno-omit-frame-pointer ${san_flags_${kind}}
              -Wall -Wextra -fno-builtin -DHAVE_LITHE=1
              -include ${CMAKE_CURRENT_SOURCE_DIR}/sanitize/via_api.h
              -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/tools
              ${CMAKE_CURRENT_SOURCE_DIR}/${src} ${san_objs_${kind}} -lpthread -ldl -o ${bin}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${src} ${san_objs_${kind}}
              ${CMAKE_CURRENT_SOURCE_DIR}/sanitize/via_api.h ${CMAKE_CURRENT_SOURCE_DIR}/testutil.h
      COMMENT "${kind}: ${prog}" VERBATIM)
    add_custom_target(san-${kind}-${prog} ALL DEPENDS ${bin})
  endif()
  add_test(NAME ${test} COMMAND ${bin} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # halt_on_error: the first report fails the test; the suppression-free
  # default is deliberate (docs/reliability.md: races are fixed or proved)
  set(env "TSAN_OPTIONS=halt_on_error=1:exitcode=66:die_after_fork=0;ASAN_OPTIONS=detect_leaks=0:abort_on_error=0;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
  if(T_ENV)
    set(env "${env};${T_ENV}")
  endif()
  set_tests_properties(${test} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "lithe;sanitize" ENVIRONMENT "${env}")
endfunction()

lithe_sanitizer(tsan "-fsanitize=thread")
lithe_sanitizer(asan "-fsanitize=address,undefined;-fno-sanitize-recover=all")

lithe_sanitized_test(tsan stress_threads stress/stress_threads.c ARGS 4 100000)
lithe_sanitized_test(tsan stress_threads_collect stress/stress_threads.c ARGS 3 60000 ENV STRESS_COLLECT=1)
lithe_sanitized_test(tsan stress_remote stress/stress_remote.c ARGS 200000)
lithe_sanitized_test(tsan thread_churn stress/thread_churn.c ARGS 5000)
lithe_sanitized_test(tsan thread_churn_remote stress/thread_churn_remote.c ARGS 2000)
lithe_sanitized_test(tsan fork_threads stress/fork_threads.c ARGS 10)
lithe_sanitized_test(tsan purge_exit sanitize/purge_exit.c ENV LITHE_PURGE_DELAY_MS=100 LITHE_PURGE_THREAD=1)
lithe_sanitized_test(asan api_basic api/api_basic.c)
lithe_sanitized_test(asan api_align api/api_align.c)
lithe_sanitized_test(asan api_sizes api/api_sizes.c)
lithe_sanitized_test(asan stress_threads stress/stress_threads.c ARGS 4 100000)
lithe_sanitized_test(asan stress_calloc stress/stress_calloc.c ARGS 4 5000)
