# SPDX-License-Identifier: MIT
# runner_fake: run lithe-bench against the fake programs in fakebin/ and
# check what the report says. Expected (see the scripts): under the fake
# allocator `alt` every time is about half (so 3+3 runs, fully separated,
# give p=0.100, and 5+5 give p=0.008), `fragment` crashes (FAIL),
# `medium` and `fastpath` exit non-zero (FAIL), `big_parallel` hangs and is
# killed at --timeout 3 (FAIL, not retried), `message_many` skips,
# bench-commit is not there (missing), the NAME=PATH allocator `nosuch`
# does not exist (reported, skipped), `broken` (a C source file) is refused by
# the dynamic loader (reported, skipped); one trace replay (demo).
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${RUNNER}" --bin-dir "${TESTDATA}/fakebin" --traces "${TESTDATA}/traces"
                        --runs 5 --timeout 3 --out "${OUT}" glibc alt=${FAKELIB} nosuch=/nonexistent/libnosuch.so
                        broken=${TESTDATA}/fake_alloc.c
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lithe-bench failed (exit ${rc}):\n${out}\n${err}")
endif()
foreach(f report.md results.tsv chart-time.svg chart-peak.svg chart-end.svg
          chart-scaling-fixed_block_scaling.svg)
  if(NOT EXISTS "${OUT}/${f}")
    message(FATAL_ERROR "${OUT}/${f} was not written")
  endif()
endforeach()
file(READ "${OUT}/report.md" md)
set(expect
  "nosuch | - | - | - | - | **not run**: /nonexistent/libnosuch.so does not exist"
  "**not run**: the dynamic loader refuses it: "
  "commit: ${TESTDATA}/fakebin/bench-commit not built"
  "    churn "
  "^ 2.00x faster (p=0.008 n=5+5)"
  "^ 1.11x smaller (p=0.008 n=5+5)"
  "    fragment "
  "| fragment | alt | **FAIL** | killed by signal 11 (Segmentation fault) (5 failed runs)"
  "| medium | alt | **FAIL** | exit status 3: fake failure"
  "| fastpath | alt | **FAIL** | exit status 2"
  "| big_parallel | alt | **FAIL** | timed out after 3 s (1 failed run)"
  "| message_many | all | skipped | needs at least 2 CPUs (fake)"
  "| malloc_trim(0) | baseline |"
  "<geometric mean>"
  "<arithmetic mean>"
  "<harmonic mean>"
  "replay_demo"
  "glibc vs alt:"
  "## At a glance"
  "| alt | better in "
  "fixed_block_scaling-16"
  "(p=0.008 n=5+5)"
  "![")
foreach(e IN LISTS expect)
  string(FIND "${md}" "${e}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "report.md lacks: ${e}\n---\n${md}")
  endif()
endforeach()
string(REGEX MATCH "    fragment +100[.0-9]*ms +FAIL" m "${md}")
if(NOT m)
  message(FATAL_ERROR "fragment row does not show FAIL for alt")
endif()
# re-report from results.tsv gives the same MallocBench table
execute_process(COMMAND "${RUNNER}" --report "${OUT}" --out "${OUT}/again"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUT}/again/report.md")
  message(FATAL_ERROR "--report failed (exit ${rc})")
endif()
file(READ "${OUT}/again/report.md" md2)
string(FIND "${md}" "## MallocBench comparison" a1)
string(FIND "${md}" "## Failures" b1)
string(FIND "${md2}" "## MallocBench comparison" a2)
string(FIND "${md2}" "## Failures" b2)
math(EXPR l1 "${b1} - ${a1}")
math(EXPR l2 "${b2} - ${a2}")
string(SUBSTRING "${md}" ${a1} ${l1} t1)
string(SUBSTRING "${md2}" ${a2} ${l2} t2)
if(NOT t1 STREQUAL t2)
  message(FATAL_ERROR "re-reported tables differ:\n${t1}\n---\n${t2}")
endif()
message(STATUS "runner_fake: ok")
# --median and --only on re-report: median ± 95% CI (5 runs are too few for
# a 95% interval: ± ∞) and the newer note form with equal counts (n=5)
execute_process(COMMAND "${RUNNER}" --report "${OUT}" --out "${OUT}/median" --median
                        --only "churn*,fixed*"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--report --median --only failed (exit ${rc})")
endif()
file(READ "${OUT}/median/report.md" md3)
foreach(e "± ∞" "(p=0.008 n=5)" "churn_parallel" "fixed_block_scaling-16")
  string(FIND "${md3}" "${e}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "median report lacks: ${e}\n---\n${md3}")
  endif()
endforeach()
string(FIND "${md3}" "tree_churn" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "--only churn*,fixed* still shows tree_churn")
endif()
message(STATUS "runner_fake: --median/--only re-report ok")
